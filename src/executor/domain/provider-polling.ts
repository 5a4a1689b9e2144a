/*
 * When to ask the provider about an operation again (docs/executions.md "Polling the provider").
 * Pure: the runner gives it what it knows, it answers a delay. The first poll comes right after
 * the checkpoint; each later one waits a quarter of the time the job has had so far — so a job
 * that finishes after t is seen by about 1.25 t — within [initialMs, maxMs]. What the provider
 * says is honoured: a queue position waits at least one initial interval per job ahead, a
 * Retry-After at least what it asks (up to a minute). The operation's absolute deadline is the
 * runner's business and is never moved by this.
 */

export interface PollingPolicy {
  /** The shortest wait between polls (the first ones). */
  readonly initialMs: number;
  /** The longest wait between polls (a long job), unless the provider asks for more. */
  readonly maxMs: number;
}

export const DEFAULT_POLLING: PollingPolicy = { initialMs: 100, maxMs: 5_000 };

/** The most a provider's Retry-After is honoured for. */
export const RETRY_AFTER_CAP_MS = 60_000;

export interface PollSituation {
  /** How long ago the provider accepted the submission (the checkpoint). */
  readonly sinceSubmitMs: number;
  /** The job's place in the provider's queue (0: next), when the provider said. */
  readonly queuePosition?: number | null;
  /** The provider's Retry-After, in ms, when it sent one. */
  readonly retryAfterMs?: number | null;
}

export function pollDelayMs(situation: PollSituation, policy: PollingPolicy = DEFAULT_POLLING): number {
  let delay = Math.min(policy.maxMs, Math.max(policy.initialMs, Math.round(Math.max(0, situation.sinceSubmitMs) / 4)));
  const ahead = situation.queuePosition ?? 0;
  if (ahead > 0) delay = Math.max(delay, Math.min(policy.maxMs, policy.initialMs * (ahead + 1)));
  const asked = situation.retryAfterMs ?? 0;
  if (asked > 0) delay = Math.max(delay, Math.min(RETRY_AFTER_CAP_MS, asked));
  return delay;
}
