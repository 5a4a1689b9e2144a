/*
 * Who an executor is on a shared workflow engine (docs/executions.md "Task-queue ownership").
 * An installation is one executor database: its id is created once, by the migration that
 * introduced it, and travels with a cold backup of the executor's state. It is not a secret: it
 * names the installation's default task queue and its workers, so executors sharing a Temporal
 * cluster never run each other's executions. Pure: no clock, no I/O.
 */

/** 12 lowercase hex digits (48 random bits): short enough for a task-queue name, never repeated in practice. */
export const INSTALLATION_ID = /^[0-9a-f]{12}$/;

/** The task queue an installation polls when `workflow_engine.task_queue` is not set. */
export function derivedTaskQueue(installationId: string): string {
  return `lexec-${installationId}`;
}

const WORKER_PREFIX = 'lexec-executor/';

/**
 * A worker's identity as the engine shows it (its pollers, the history's `identity` fields):
 * the installation, then the process, so an operator reading the Temporal UI sees whose worker
 * ran what, and a new process of the same installation is told apart from an earlier one.
 */
export function workerIdentity(installationId: string, host: string, pid: number, nonce: string): string {
  return `${WORKER_PREFIX}${installationId}@${host}:${String(pid)}:${nonce}`;
}

/**
 * The identity every release before installation ids gave its worker (`lexec-executor@host:pid:…`).
 * It names no installation: it may be this installation's own process from before an upgrade.
 */
export function isLegacyWorker(identity: string): boolean {
  return identity.startsWith('lexec-executor@');
}

/** Whether a worker identity names this installation (any process of it, earlier ones too). */
export function isOwnWorker(identity: string, installationId: string): boolean {
  return identity.startsWith(`${WORKER_PREFIX}${installationId}@`);
}

/**
 * A poller counts for this long after its last poll. A worker's long poll is answered within a
 * minute at the latest (the server's long-poll expiry), and it polls again at once, so a live
 * worker was seen within ~70 s; the engine itself remembers a poller for 5 minutes after it
 * stopped, and one that stopped more than two minutes ago must not keep readiness withdrawn.
 */
export const POLLER_FRESH_MS = 120_000;

export interface PollerSighting {
  readonly identity: string;
  /** When the engine last saw it poll, on the engine's clock; undefined when the engine did not say. */
  readonly lastAccessMs: number | undefined;
}

/**
 * The pollers of a task queue that are not this installation's and polled recently. Any such
 * poller would be handed this installation's workflow and activity tasks: a worker of another
 * lexec installation, or any other program's. "Recently" is measured on the engine's own clock
 * (the newest sighting in the answer, normally this executor's own worker), so a skew between
 * the executor's and the engine's clocks does not matter.
 *
 * A legacy lexec identity (isLegacyWorker) may be this installation's own worker from before an
 * upgrade, still remembered by the engine: it counts only once it has polled again since this
 * process first saw it (`legacyFirstSeen`: its last poll time then), proof that it is alive. A
 * live worker polls again within about a minute.
 */
export function foreignPollers(
  pollers: readonly PollerSighting[],
  installationId: string,
  legacyFirstSeen: ReadonlyMap<string, number | undefined> = new Map(),
  freshMs = POLLER_FRESH_MS,
): PollerSighting[] {
  const seen = pollers.map((poller) => poller.lastAccessMs).filter((at): at is number => at !== undefined);
  const newest = seen.length === 0 ? undefined : Math.max(...seen);
  const alive = (poller: PollerSighting) =>
    !isLegacyWorker(poller.identity) || (legacyFirstSeen.has(poller.identity) && legacyFirstSeen.get(poller.identity) !== poller.lastAccessMs);
  return pollers.filter(
    (poller) =>
      !isOwnWorker(poller.identity, installationId) &&
      (poller.lastAccessMs === undefined || newest === undefined || newest - poller.lastAccessMs <= freshMs) &&
      alive(poller),
  );
}
