import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isSameProcess, sendSignal } from '../../src/process/process-identity.js';
import { logFilePath, LOG_RETAINED } from '../../src/process/log-files.js';
import { expectFailure, expectResult, type CliRun } from '../support/cli.js';
import { call, mintCredential } from '../support/ledger.js';
import type { RunningStack } from '../support/running-stack.js';
import type { SandboxFault } from '../support/sandbox-process.js';
import { eventually, readState } from '../support/stack-home.js';
import { checkInvariants, type InvariantReport } from './check-invariants.js';

/*
 * How the crash matrix (crash-matrix.ts) drives one execution to a crash point, for the points
 * off the plain `lexec run` path: the provider down (the release of a submission never sent),
 * and a human's resolution of a parked execution — through the executor's reconciliation route
 * (`lexec executor reconciliation resolve`) or at the ledger itself. A human, like `lexec run`,
 * asks again when the process that would have answered died; that second request is the replay
 * the points prove.
 */

/** How the execution is driven to its crash point. */
export type Scenario =
  /** `lexec run` of two images (a fault, if any, set first). */
  | 'run'
  /** `lexec run` while the provider is down: the sandbox killed, its supervisor paused until the point fired. */
  | 'provider_down'
  /** Parked by a fault, then settled by a human for one image: `lexec executor reconciliation resolve --settle --images-billed 1`. */
  | 'resolve_settle'
  /** Parked by a fault, then released by a human: `lexec executor reconciliation resolve --release`. */
  | 'resolve_release'
  /** Parked by a fault, then released by a human at the ledger itself (`POST /reconciliation-records/{id}/resolve`). */
  | 'resolve_at_ledger';

/** The execution a scenario ran, and what the command (or the human's last request) answered. */
export interface Driven {
  readonly executionId: string;
  /** The `lexec run` that admitted it. */
  readonly run: CliRun;
  /** The human's resolution: whether the request that finally succeeded was answered as a replay. */
  readonly resolution?: { readonly replayed: boolean; readonly attempts: number };
}

export interface ScenarioContext {
  readonly stack: RunningStack;
  readonly scenario: Scenario;
  readonly point: string;
  readonly fault: SandboxFault | undefined;
  /** Writes the point into the arm file (done before the step the point is on). */
  readonly arm: () => Promise<void>;
  /** Whether the armed point has fired (the arm file renamed). */
  readonly fired: () => boolean;
}

const EXECUTION_ID = /exe_[0-9a-f]{32}/;

function lexecRun(s: RunningStack, point: string, what: string): Promise<CliRun> {
  const out = join(s.home, 'out', `${point}-${what}`);
  return s.lexec(['run', `a lighthouse, ${what} at ${point}`, '--count', '2', '--out', out, '--json'], { timeoutMs: 150_000 });
}

/** The execution a finished `lexec run` reports (its result, or the id its error names). */
export function executionOf(run: CliRun): string {
  if (run.exitCode === 0) return (expectResult(run) as { execution: { execution_id: string } }).execution.execution_id;
  const id = EXECUTION_ID.exec(run.stdout)?.[0];
  if (id === undefined) throw new Error(`lexec run named no execution: ${run.stdout}\n${run.stderr}`);
  return id;
}

/** A read-only look at one of the stack's databases. */
export function query<T>(path: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** The authorization an execution runs on. */
export function tokenOf(s: RunningStack, executionId: string): string {
  const [row] = query<{ token: string }>(s.paths.executorDatabase, 'SELECT spend_auth_token_id AS token FROM executions WHERE execution_id = ?', executionId);
  if (row === undefined) throw new Error(`the executor has no execution ${executionId}`);
  return row.token;
}

/** What the ledger holds for an authorization: its status and every row that closes or parks it. */
export function ledgerRows(s: RunningStack, tokenId: string) {
  const db = s.paths.ledgerDatabase;
  const [authorization] = query<{ status: string; execution_id: string | null }>(db, 'SELECT status, execution_id FROM authorizations WHERE token_id = ?', tokenId);
  return {
    status: authorization?.status ?? 'missing',
    claimedBy: authorization?.execution_id ?? null,
    settlements: query<{ settlement_id: string }>(db, 'SELECT settlement_id FROM settlements WHERE token_id = ?', tokenId).length,
    releases: query<{ reason: string }>(db, 'SELECT reason FROM releases WHERE token_id = ?', tokenId).map((row) => row.reason),
    records: query<{ record_id: string; status: string; resolution: string | null }>(db, 'SELECT record_id, status, resolution FROM reconciliation_records WHERE token_id = ?', tokenId),
  };
}

/** Lines of the submissions log the stack's sandbox keeps (it survives a sandbox restart; its API's list does not). */
export async function submissionLines(s: RunningStack): Promise<number> {
  const file = join(s.paths.stateDir, 'sandbox-submissions.jsonl');
  if (!existsSync(file)) return 0;
  return (await readFile(file, 'utf8')).split('\n').filter((line) => line.trim() !== '').length;
}

/** `http_request` lines of the ledger's log (every retained generation) answering `route` with `status`. */
export async function ledgerAnswers(s: RunningStack, route: string, status: number): Promise<number> {
  let count = 0;
  for (let generation = LOG_RETAINED; generation >= 0; generation -= 1) {
    const text = await readFile(logFilePath(s.paths.logsDir, 'ledger', generation), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (!line.includes('"http_request"')) continue;
      try {
        const entry = JSON.parse(line) as { event?: unknown; route?: unknown; status?: unknown };
        if (entry.event === 'http_request' && entry.route === route && entry.status === status) count += 1;
      } catch {
        // a torn line
      }
    }
  }
  return count;
}

/**
 * Runs `act` with the provider down: the supervisor paused (SIGSTOP) so it cannot bring the
 * sandbox back, the sandbox SIGKILLed (its port then refuses connections: the submission is
 * proven never sent). The supervisor goes on (SIGCONT) once the point has fired — it must restart
 * the process that died there — or once `act` ended, whichever is first; always, whatever happens.
 */
async function withProviderDown<T>(s: RunningStack, fired: () => boolean, act: () => Promise<T>): Promise<T> {
  const state = await readState(s.paths);
  const sandbox = state.components.sandbox;
  const supervisor = { pid: state.supervisor_pid, startTicks: state.supervisor_pid_start_ticks };
  if (!(await isSameProcess(supervisor.pid, supervisor.startTicks))) throw new Error('the supervisor is not running');
  sendSignal(supervisor.pid, 'SIGSTOP');
  try {
    if (sandbox?.pid != null) {
      const { pid, pid_start_ticks: startTicks } = sandbox;
      if (await isSameProcess(pid, startTicks)) sendSignal(pid, 'SIGKILL');
      await eventually('the sandbox gone', async () => ((await isSameProcess(pid, startTicks)) ? undefined : true), 10_000, 20);
    }
    let ended = false;
    const acting = act().finally(() => {
      ended = true;
    });
    await eventually('the point fired or the command ended', () => Promise.resolve(fired() || ended ? true : undefined), 150_000, 20);
    sendSignal(supervisor.pid, 'SIGCONT');
    return await acting;
  } finally {
    sendSignal(supervisor.pid, 'SIGCONT');
  }
}

/** Parks an execution with `fault` and waits for its record at the ledger (opened right after it parked). */
async function parked(ctx: ScenarioContext): Promise<{ run: CliRun; executionId: string; tokenId: string }> {
  const s = ctx.stack;
  if (ctx.fault === undefined) throw new Error(`${ctx.scenario} needs a fault that parks the execution`);
  await s.sandbox.setFaults([ctx.fault]);
  const run = await lexecRun(s, ctx.point, 'parked');
  await s.sandbox.clearFaults();
  expectFailure(run, 1, 'execution_in_reconciliation');
  const executionId = executionOf(run);
  const tokenId = tokenOf(s, executionId);
  await eventually('the ledger record', () => Promise.resolve(ledgerRows(s, tokenId).records.length > 0 ? true : undefined), 60_000);
  return { run, executionId, tokenId };
}

/**
 * A human asking until answered: `request` again every second while it fails (the process that
 * would answer died; the supervisor restarts it), for up to 90 s. The first request must fail:
 * the point is on its path.
 */
async function askUntilAnswered<T>(request: () => Promise<{ ok: true; value: T } | { ok: false; why: string }>): Promise<{ value: T; attempts: number }> {
  const first = await request();
  if (first.ok) throw new Error('the first request was answered: the crash point is not on its path');
  let last = first.why;
  for (let attempts = 2, deadline = Date.now() + 90_000; Date.now() < deadline; attempts += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const answer = await request();
    if (answer.ok) return { value: answer.value, attempts };
    last = answer.why;
  }
  throw new Error(`never answered: ${last}`);
}

async function resolveAtExecutor(ctx: ScenarioContext, flags: readonly string[]): Promise<Driven> {
  const { run, executionId } = await parked(ctx);
  await ctx.arm();
  const answered = await askUntilAnswered(async () => {
    const resolve = await ctx.stack.lexec(['executor', 'reconciliation', 'resolve', executionId, ...flags, '--note', `crash matrix: ${ctx.point}`, '--json'], { timeoutMs: 60_000 });
    return resolve.exitCode === 0 ? { ok: true as const, value: expectResult(resolve) as { replayed: boolean } } : { ok: false as const, why: `${resolve.stdout}${resolve.stderr}` };
  });
  return { executionId, run, resolution: { replayed: answered.value.replayed, attempts: answered.attempts } };
}

async function resolveAtLedger(ctx: ScenarioContext): Promise<Driven> {
  const s = ctx.stack;
  const { run, executionId, tokenId } = await parked(ctx);
  const reconciliation = await mintCredential({ url: s.ledgerUrl, adminToken: await s.capability('admin') }, 'reconciliation');
  const recordId = ledgerRows(s, tokenId).records[0]?.record_id ?? '';
  await ctx.arm();
  const answered = await askUntilAnswered(async () => {
    try {
      const answer = await call<{ replayed: boolean }>(s.ledgerUrl, 'POST', `/reconciliation-records/${recordId}/resolve`, {
        token: reconciliation,
        body: { resolution: 'release', reason: 'provider: no such request' },
      });
      return answer.status === 200 ? { ok: true as const, value: answer.body } : { ok: false as const, why: `HTTP ${String(answer.status)} ${JSON.stringify(answer.body)}` };
    } catch (error) {
      return { ok: false as const, why: String(error) };
    }
  });
  return { executionId, run, resolution: { replayed: answered.value.replayed, attempts: answered.attempts } };
}

/** Drives one execution through `ctx.scenario` with the point armed where it belongs. */
export async function drive(ctx: ScenarioContext): Promise<Driven> {
  const s = ctx.stack;
  switch (ctx.scenario) {
    case 'run': {
      if (ctx.fault !== undefined) await s.sandbox.setFaults([ctx.fault]);
      await ctx.arm();
      const run = await lexecRun(s, ctx.point, 'killed');
      await s.sandbox.clearFaults();
      return { executionId: executionOf(run), run };
    }
    case 'provider_down': {
      await ctx.arm();
      const run = await withProviderDown(s, ctx.fired, () => lexecRun(s, ctx.point, 'provider down'));
      return { executionId: executionOf(run), run };
    }
    case 'resolve_settle':
      return resolveAtExecutor(ctx, ['--settle', '--images-billed', '1']);
    case 'resolve_release':
      return resolveAtExecutor(ctx, ['--release']);
    case 'resolve_at_ledger':
      return resolveAtLedger(ctx);
  }
}

/** The invariant checker over everything a running stack wrote: both databases, the sandbox's logs, the artifacts. */
export function checkStackInvariants(s: Pick<RunningStack, 'paths'>): InvariantReport {
  return checkInvariants({
    ledgerDatabase: s.paths.ledgerDatabase,
    executorDatabase: s.paths.executorDatabase,
    submissionsLog: join(s.paths.stateDir, 'sandbox-submissions.jsonl'),
    sandboxJobsFile: join(s.paths.stateDir, 'sandbox-jobs.jsonl'),
    artifactRoot: s.paths.artifactRoot,
  });
}

