import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { PassThrough } from 'node:stream';
import { capabilityDigest, generateCapability, type CredentialKind } from '../../src/credentials/capability.js';
import { composeLedger } from '../../src/ledger/compose-ledger.js';
import type { RejectionSummaryTiming } from '../../src/http/rejection-summariser.js';
import type { LedgerContractLevel } from '../../src/ledger/ledger-config.js';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import { afterEach, beforeEach } from 'vitest';
import { makeTempDir, removeDir } from './cli.js';

export const DEFAULT_POLICY = {
  per_authorization_cap_units: 5_000_000n,
  daily_cap_units: 20_000_000n,
  approval_threshold_units: 1_000_000n,
};

/** Who acts when a test calls the admin's use cases directly (not through a route): the admin credential. */
export const TEST_ADMIN = { credential_id: 'admin', kind: 'admin' } as const;

export interface TestLedger {
  readonly url: string;
  readonly dir: string;
  readonly databasePath: string;
  readonly adminToken: string;
  /** The ledger's app, for what a loopback socket cannot send (`inject` from another remote address). */
  readonly app: FastifyInstance;
  /** Every log line the ledger wrote, parsed. */
  readonly logs: () => Record<string, unknown>[];
  /** Moves the ledger's clock forward. */
  advance(ms: number): void;
  /** A read-only look at the ledger's own database file. */
  query<T>(sql: string, ...params: unknown[]): T[];
  /** How many connections its server holds now (a long-poll under way holds one). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

export interface TestLedgerOptions {
  readonly contractLevel?: LedgerContractLevel;
  readonly ttlSeconds?: number;
  readonly dir?: string;
  /** How repeated rejections are collapsed in the log (default: as serve, the system clock and 60 s). */
  readonly rejectionSummary?: RejectionSummaryTiming;
  /** How often expiries are swept (ms; default as serve). */
  readonly expirySweepMs?: number;
  /** How often a `GET /events` long-poll looks for another process's events (ms; default as serve). */
  readonly eventPollMs?: number;
  /** The installation's time zone (default: the ledger's, UTC). */
  readonly timeZone?: string;
  /** A fake clock from this instant (ms), moved only by `advance`; default: the system clock. */
  readonly startAt?: number;
  /** Webhook delivery timings (the ledger's `webhook_delivery`; default: serve's). */
  readonly webhookDelivery?: { readonly timeout_ms: number; readonly first_retry_ms: number; readonly max_retry_ms: number; readonly delivered_retention_days?: number };
}

/**
 * A real ledger app on a real SQLite file, listening on a real loopback port, in this process
 * (so its clock can be moved). Process-level behaviour is tested separately by spawning
 * `lexec ledger serve`.
 */
export async function startTestLedger(options: TestLedgerOptions = {}): Promise<TestLedger> {
  const dir = options.dir ?? (await makeTempDir('lexec-ledger-'));
  const databasePath = join(dir, 'ledger.db');
  const adminPath = join(dir, 'credentials', 'admin.capability');
  let offset = 0;
  const lines: string[] = [];
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  // The same composition root as `lexec ledger serve`, with a clock the test can move.
  const ledger = await composeLedger({
    config: {
      database_path: databasePath,
      admin_capability_path: adminPath,
      contract_level: options.contractLevel ?? 'v4.5',
      authorization_ttl_seconds: options.ttlSeconds ?? 3_600,
      default_policy: DEFAULT_POLICY,
      ...(options.timeZone === undefined ? {} : { time_zone: options.timeZone }),
      ...(options.webhookDelivery === undefined ? {} : { webhook_delivery: { delivered_retention_days: 30, ...options.webhookDelivery } }),
    },
    logger: pino(sink),
    now: options.startAt === undefined ? () => Date.now() + offset : () => (options.startAt ?? 0) + offset,
    ...(options.rejectionSummary === undefined ? {} : { rejectionSummary: options.rejectionSummary }),
    ...(options.expirySweepMs === undefined ? {} : { expirySweepMs: options.expirySweepMs }),
    ...(options.eventPollMs === undefined ? {} : { eventPollMs: options.eventPollMs }),
  });
  const { app } = ledger;
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const reader = new Database(databasePath, { readonly: true });
  reader.defaultSafeIntegers(true);
  return {
    url: `http://127.0.0.1:${port}`,
    dir,
    databasePath,
    adminToken: await readPrivateFile(adminPath, 'admin capability'),
    app,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    advance(ms) {
      offset += ms;
    },
    query: <T>(sql: string, ...params: unknown[]) => reader.prepare(sql).all(...params) as T[],
    connections: () =>
      new Promise<number>((resolve, reject) => {
        app.server.getConnections((error, count) => {
          if (error) reject(error);
          else resolve(count);
        });
      }),
    async close() {
      await app.close();
      reader.close();
      ledger.close();
      if (options.dir === undefined) await removeDir(dir);
    },
  };
}

export interface CallResult<T = Record<string, unknown>> {
  readonly status: number;
  readonly body: T;
}

/** One HTTP call with an optional capability; JSON in, JSON out. */
export async function call<T = Record<string, unknown>>(
  url: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; rawBody?: string; contentType?: string; headers?: Record<string, string> } = {},
): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const payload = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (payload !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const response = await fetch(`${url}${path}`, { method, headers, body: payload });
  const text = await response.text();
  return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as T };
}

/** Registers a new capability of `kind` (as a client does: generate, keep, send the digest). */
export async function mintCredential(ledger: Pick<TestLedger, 'url' | 'adminToken'>, kind: Exclude<CredentialKind, 'admin' | 'caller'>, agentId?: string): Promise<string> {
  const token = generateCapability(kind);
  const result = await call(ledger.url, 'PUT', `/credentials/cred_${randomUUID()}`, {
    token: ledger.adminToken,
    body: { kind, agent_id: agentId, digest_sha256: capabilityDigest(token).toString('hex') },
  });
  if (result.status !== 201) throw new Error(`could not register a ${kind} credential: ${JSON.stringify(result)}`);
  return token;
}

export interface Actors {
  readonly agentId: string;
  readonly agent: string;
  readonly approver: string;
  readonly executor: string;
  readonly reconciliation: string;
}

/** An agent with its credential, plus approver, executor and reconciliation credentials. */
export async function setUpActors(ledger: Pick<TestLedger, 'url' | 'adminToken'>, name = 'bot'): Promise<Actors> {
  const created = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: ledger.adminToken, body: { name } });
  if (created.status !== 201) throw new Error(`could not add agent: ${JSON.stringify(created)}`);
  const agentId = created.body.agent.agent_id;
  return {
    agentId,
    agent: await mintCredential(ledger, 'agent', agentId),
    approver: await mintCredential(ledger, 'approver'),
    executor: await mintCredential(ledger, 'executor'),
    reconciliation: await mintCredential(ledger, 'reconciliation'),
  };
}

/** A complete precise receipt for `amountUnits`. */
export function preciseReceipt(amountUnits: bigint | string, receiptId = `rcpt_${randomUUID()}`) {
  return {
    receipt_id: receiptId,
    amount_units: String(amountUnits),
    units_scale: 6,
    currency: 'USD',
    provider_request_id: `req_${randomUUID()}`,
    price_model_snapshot: {
      snapshot_version: 1,
      target_id: 'lexec:target:v1:flux-schnell',
      provider: 'fal',
      model: 'fal-ai/flux/schnell',
      image_size: 'square_hd',
      image_count: 1,
      currency: 'USD',
      unit: 'image',
      pricing_version: '2026-11-01',
      unit_price: { numerator: '3', denominator: '1000' },
      rounding: 'ceil_micro_units',
    },
  };
}

/** A legacy (v4.3) whole-cent receipt. */
export function legacyReceipt(amountCents: number, receiptId = `rcpt_${randomUUID()}`) {
  return {
    receipt_id: receiptId,
    amount_cents: amountCents,
    currency: 'USD',
    price_model_snapshot: { provider: 'fal', model: 'fal-ai/flux/schnell', estimated_price_cents: amountCents },
  };
}

/**
 * A fresh ledger and its actors for every test of the file: started before each test, closed after
 * it; `use` receives them (the file keeps them in its own variables).
 */
export function ledgerPerTest(use: (ledger: TestLedger, actors: Actors) => void, options: TestLedgerOptions = {}): void {
  let current: TestLedger | undefined;
  beforeEach(async () => {
    current = await startTestLedger(options);
    use(current, await setUpActors(current));
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
}

/**
 * The body of an executor's claim of `tokenId` for `executionId`, as the executor sends it: an
 * authorization that names a target is claimed only for that target (`require.target_id`), so
 * the claim requires the target the authorization names (read from the ledger's file).
 */
export function claimBody(ledger: Pick<TestLedger, 'query'>, tokenId: string, executionId: string): Record<string, unknown> {
  const targetId = ledger.query<{ target_id: string | null }>('SELECT target_id FROM authorizations WHERE token_id = ?', tokenId)[0]?.target_id ?? null;
  return targetId === null ? { execution_id: executionId } : { execution_id: executionId, require: { currency: 'USD', min_held_units: '0', target_id: targetId } };
}
