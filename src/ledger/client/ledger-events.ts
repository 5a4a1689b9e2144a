import { formatUnits } from '../../domain/money.js';
import { UserError } from '../../errors.js';
import type { LedgerEvent } from '../wire/answers.js';
import type { LedgerClient } from './ledger-client.js';
import type { LedgerConnector } from './ledger-connector.js';

/*
 * `lexec ledger events` (docs/ledger-cli.md): the ledger's events after a cursor, oldest first
 * (`GET /events`, docs/ledger.md "Events"), read page by page to the latest — and with `--follow`
 * on, by long-polls, until stopped. A follow survives the ledger going away (a restart, a stack
 * restart on another port): it says so on stderr, connects again with backoff and continues after
 * the last event it printed, so no event is missed or printed twice.
 */

/** `ledger events`: the events read (none once followed: each was printed as it came), and the cursor to continue from (`--since`). */
export interface EventsResult {
  readonly events: readonly LedgerEvent[];
  readonly next_after: string;
}

export interface EventsRequest {
  readonly target: LedgerConnector;
  /** Only events after this id (0: from the first). */
  readonly since: bigint;
  readonly types: readonly string[] | null;
  readonly agentId: string | null;
}

export interface FollowHooks {
  /** Stops following (SIGINT, SIGTERM): the follow returns what it printed. */
  readonly signal: AbortSignal;
  /** Events as they come, oldest first, each once. */
  readonly onEvents: (events: readonly LedgerEvent[]) => void;
  /** The ledger could not be reached or failed; the follow retries in `retryInMs`. */
  readonly onRetry: (error: UserError, retryInMs: number) => void;
  /** Backoff between retries (ms); tests shorten it. */
  readonly backoff?: { readonly firstMs: number; readonly maxMs: number };
}

const PAGE = 500;
/** A long-poll's wait (the ledger's most is 30 s). */
const WAIT_SECONDS = 25;
/** What a follow retries: the ledger away, stopping, or answering oddly. Anything else (a refused capability, a bad filter) ends it. */
const RETRIED = new Set(['ledger_unreachable', 'ledger_server_error', 'ledger_bad_response']);

function filterOf(request: EventsRequest) {
  return { agentId: request.agentId ?? undefined, types: request.types ?? undefined, limit: PAGE };
}

/** Reads every event after `request.since`, page by page, to the latest (admin capability, as `ledger audit`). */
export async function readLedgerEvents(request: EventsRequest): Promise<EventsResult> {
  const client = await request.target('admin');
  const events: LedgerEvent[] = [];
  let after = request.since;
  for (;;) {
    const page = await client.events({ ...filterOf(request), after });
    events.push(...page.events);
    after = BigInt(page.next_after);
    if (!page.more) return { events, next_after: after.toString() };
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Prints every event after `request.since` and then each new one as the ledger records it, until
 * `hooks.signal` aborts. The cursor moves only past events handed to `onEvents`, so after a lost
 * connection the next request continues exactly there.
 */
export async function followLedgerEvents(request: EventsRequest, hooks: FollowHooks): Promise<EventsResult> {
  const { signal } = hooks;
  const backoff = hooks.backoff ?? { firstMs: 500, maxMs: 10_000 };
  let after = request.since;
  let client: LedgerClient | null = null;
  let retryInMs = backoff.firstMs;
  // A function, not the property: the signal aborts while a request is under way.
  const stopped = () => signal.aborted;
  while (!stopped()) {
    try {
      // A fresh connection after a failure: a restarted stack may listen elsewhere (its handoff says where).
      client ??= await request.target('admin');
      const page = await client.events({ ...filterOf(request), after, waitSeconds: WAIT_SECONDS, signal });
      retryInMs = backoff.firstMs;
      if (page.events.length > 0) hooks.onEvents(page.events);
      after = BigInt(page.next_after);
    } catch (error) {
      if (stopped()) break;
      if (!(error instanceof UserError) || !RETRIED.has(error.code)) throw error;
      client = null;
      hooks.onRetry(error, retryInMs);
      await pause(retryInMs, signal);
      retryInMs = Math.min(retryInMs * 2, backoff.maxMs);
    }
  }
  // Every event was handed to onEvents as it came.
  return { events: [], next_after: after.toString() };
}

/** One event as a person reads it: time, type, agent, target, amount in exact USD, authorization, then the details as key=value. */
export function eventLine(event: LedgerEvent): string {
  const amount = event.amount_units === null ? '—' : formatUnits(event.amount_units, event.currency);
  const details = Object.entries(event.details).map(([key, value]) => `${key}=${String(value)}`);
  return [event.at, event.type, event.agent_name ?? event.agent_id ?? '—', event.target_id ?? '—', amount, event.authorization_id ?? '—', ...details].join('  ');
}
