import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect } from 'vitest';
import { makeTempDir, removeDir } from '../support/cli.js';
import { durableHarness, setFaults, until, type Stack } from '../support/durable-stack.js';
import { call } from '../support/ledger.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import type { SandboxFault } from '../support/sandbox-process.js';
import { checkInvariants, type InvariantInputs, type Rule } from './check-invariants.js';

/*
 * The run the invariant checker's tests judge (check-invariants*.test.ts): a real ledger, a
 * sandbox provider keeping both its submissions log and its jobs file, and `executor serve` on the
 * embedded engine, ending executions every way there is — settled; settled for fewer images;
 * billing ambiguous and settled by a human at the ledger; provider error settled by a human at
 * the executor for the images the provider's evidence shows; answer dropped and released by a
 * human; 5xx to the submission and released by a human at the ledger; killed mid-submission and
 * left in reconciliation; never transmitted and released — and then its agent suspended by the
 * operator, which cancels an approved authorization nobody claimed; before that the operator adds
 * a webhook sink and removes it and sets the installation budget. Its files are copied flat to a
 * directory of their own; each breach is planted in a copy of that copy (`breached`).
 */

export interface Run {
  readonly token: string;
  readonly execution: string;
}
export const none: Run = { token: '', execution: '' };

/** The files of a run, which always has both records of the provider. */
export type RunFiles = { readonly [K in keyof InvariantInputs]-?: NonNullable<InvariantInputs[K]> };

export function inputsIn(dir: string): RunFiles {
  return {
    ledgerDatabase: join(dir, 'ledger.db'),
    executorDatabase: join(dir, 'executor.db'),
    submissionsLog: join(dir, 'submissions.jsonl'),
    sandboxJobsFile: join(dir, 'sandbox-jobs.jsonl'),
    artifactRoot: join(dir, 'artifacts'),
  };
}

/** The run's files, copied flat to `to` (databases with their WAL, the log, the jobs file, the artifacts). */
async function copyRun(from: string, to: string): Promise<void> {
  for (const [dir, base] of [[join(from, 'ledger', 'state'), 'ledger.db'], [join(from, 'executor'), 'executor.db']] as const) {
    for (const suffix of ['', '-wal', '-shm']) await cp(join(dir, `${base}${suffix}`), join(to, `${base}${suffix}`)).catch(() => undefined);
  }
  for (const file of ['submissions.jsonl', 'sandbox-jobs.jsonl']) await cp(join(from, file), join(to, file));
  await cp(join(from, 'executor', 'artifacts'), join(to, 'artifacts'), { recursive: true });
}

async function admit(s: Stack, images: number, fault?: SandboxFault): Promise<Run> {
  if (fault !== undefined) await setFaults(s, [fault]);
  const token = await s.approvedToken();
  return { token, execution: await s.submit(token, images) };
}

const finished = (s: Stack, run: Run) => s.waitFor(run.execution, 'terminal', (e) => ['succeeded', 'failed', 'reconciliation'].includes(e.state));

/** Waits for the execution's open record at the ledger, and answers its id. */
async function openRecordOf(s: Stack, run: Run): Promise<string> {
  return until('the ledger record', async () => {
    const answer = await call<{ records: { record_id: string; token_id: string }[] }>(s.ledger.url, 'GET', '/reconciliation-records?status=open', { token: s.reconciliation });
    return answer.body.records.find((record) => record.token_id === run.token)?.record_id;
  });
}

async function resolveAtExecutor(s: Stack, run: Run, body: Record<string, unknown>): Promise<void> {
  await openRecordOf(s, run);
  const answer = await call(s.executor.url(), 'POST', `/v1/reconciliation/executions/${run.execution}/resolve`, { token: s.resolver, body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

async function resolveAtLedger(s: Stack, run: Run, body: Record<string, unknown>): Promise<void> {
  const recordId = await openRecordOf(s, run);
  const answer = await call(s.ledger.url, 'POST', `/reconciliation-records/${recordId}/resolve`, { token: s.reconciliation, body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** The clean run: its files (flat, in `dir`) and which execution ended how. */
export interface CleanRun {
  dir: string;
  succeeded: Run[];
  /** Asked for 3 images, 2 delivered: billed 2. */
  fewer: Run;
  /** COMPLETED with an error; a human settled it at the ledger itself (the executor keeps it in reconciliation). */
  settledAtLedger: Run;
  /** COMPLETED with an error; a human settled 1 image of 2 through the executor's route. */
  settledByHuman: Run;
  /** Answer dropped after the provider received it; a human released it through the executor's route. */
  releasedByHuman: Run;
  /** 5xx to the submission (no job); a human released it at the ledger itself. */
  releasedAtLedger: Run;
  /** The executor SIGKILLed while its submission hung: left in reconciliation, record open. */
  killedWhileSubmitting: Run;
  /** The provider down: never transmitted, released. */
  notTransmitted: Run;
  /** Approved, never claimed, cancelled when the operator suspended the agent (no execution). */
  cancelled: Run;
}

/** Every line of a JSON-lines file, parsed. */
export async function linesOf(path: string): Promise<Record<string, unknown>[]> {
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export async function writeLines(path: string, lines: readonly unknown[]): Promise<void> {
  await writeFile(path, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
}

export interface Planted {
  readonly ledger: Database.Database;
  readonly executor: Database.Database;
  readonly dir: string;
  readonly inputs: RunFiles;
}

/** Rebuilds a ledger table without its UNIQUE constraints (a second settlement or release is otherwise impossible). */
export function withoutUnique(db: Database.Database, table: 'settlements' | 'releases'): void {
  db.exec(`CREATE TABLE loose AS SELECT * FROM ${table}; DROP TABLE ${table}; ALTER TABLE loose RENAME TO ${table};`);
}

export const requestIdOf = (executor: Database.Database, run: Run) =>
  executor.prepare('SELECT request_id FROM provider_attempts WHERE execution_id = ?').pluck().get(run.execution) as string;
export const noSources = (all: RunFiles): InvariantInputs => ({ ...all, submissionsLog: null, sandboxJobsFile: null });
export const logOnly = (all: RunFiles): InvariantInputs => ({ ...all, sandboxJobsFile: null });
export const jobsOnly = (all: RunFiles): InvariantInputs => ({ ...all, submissionsLog: null });

/**
 * A copy of the clean run with one breach planted by `plant`, checked with `inputs` (by default
 * every file of the copy); answers the rules reported, sorted, and the messages. A breach planted
 * with SQL bypasses the ledger's events outbox, so its rules (`change_has_one_event`,
 * `event_has_change`) would flag every planted change: they are answered only with `outbox: true`
 * (the outbox's own tests).
 */
export type Breached = (
  plant: (files: Planted) => Promise<void> | void,
  inputs?: (all: RunFiles) => InvariantInputs,
  options?: { readonly outbox?: boolean },
) => Promise<{ rules: Rule[]; messages: string[] }>;

const OUTBOX_RULES: readonly Rule[] = ['change_has_one_event', 'event_has_change'];

/**
 * Registers the clean run for a test file (built in its beforeAll, removed in its afterAll) and
 * answers it with `breached`, which plants one breach in a copy of it.
 */
export function cleanRunFixture(): { clean: CleanRun; breached: Breached } {
  const harness = durableHarness('lexec-proof-', 'file');
  const clean: CleanRun = {
    dir: '',
    succeeded: [],
    fewer: none,
    settledAtLedger: none,
    settledByHuman: none,
    releasedByHuman: none,
    releasedAtLedger: none,
    killedWhileSubmitting: none,
    notTransmitted: none,
    cancelled: none,
  };

  beforeAll(async () => {
    const dir = harness.dir();
    const s = await harness.stack({
      sandboxArgs: ['--complete-after-ms', '200', '--submissions-log', join(dir, 'submissions.jsonl'), '--jobs-file', join(dir, 'sandbox-jobs.jsonl')],
    });
    const expectEnd = async (run: Run, state: string, reason: string | null = null) => {
      expect(await finished(s, run)).toMatchObject({ state, state_reason: reason });
    };

    for (const images of [1, 2, 3]) {
      const run = await admit(s, images);
      await expectEnd(run, 'succeeded');
      clean.succeeded.push(run);
    }
    clean.fewer = await admit(s, 3, { kind: 'fewer_images', omit: 1, times: 1 });
    await expectEnd(clean.fewer, 'succeeded');

    clean.settledAtLedger = await admit(s, 1, { kind: 'complete_with_error', times: 1 });
    await expectEnd(clean.settledAtLedger, 'reconciliation', 'billing_ambiguous');
    const snapshot = (await s.execution(clean.settledAtLedger.execution)) as unknown as { pricing_snapshot: unknown };
    await resolveAtLedger(s, clean.settledAtLedger, {
      resolution: 'settle',
      receipt: { receipt_id: 'rcpt_from_the_invoice', amount_units: '3000', units_scale: 6, currency: 'USD', provider_request_id: 'invoice-1', price_model_snapshot: snapshot.pricing_snapshot },
    });

    clean.settledByHuman = await admit(s, 2, { kind: 'complete_with_error', times: 1 });
    await expectEnd(clean.settledByHuman, 'reconciliation', 'billing_ambiguous');
    await resolveAtExecutor(s, clean.settledByHuman, { resolution: 'settle', images_billed: 1, note: 'provider invoice: one image' });

    clean.releasedByHuman = await admit(s, 1, { kind: 'drop_after_receipt', times: 1 });
    await expectEnd(clean.releasedByHuman, 'reconciliation', 'submission_unconfirmed');
    await resolveAtExecutor(s, clean.releasedByHuman, { resolution: 'release', note: 'provider: no charge' });

    clean.releasedAtLedger = await admit(s, 1, { kind: 'http_error', route: 'submit', status: 503, times: 1 });
    await expectEnd(clean.releasedAtLedger, 'reconciliation', 'submission_unconfirmed');
    await resolveAtLedger(s, clean.releasedAtLedger, { resolution: 'release', reason: 'provider: no such request' });

    const received = (await s.sandbox.submissions()).length;
    clean.killedWhileSubmitting = await admit(s, 1, { kind: 'hang_submit', times: 1 });
    await until('the hung submission received', async () => ((await s.sandbox.submissions()).length > received ? true : undefined));
    await s.executor.kill('SIGKILL');
    await s.sandbox.clearFaults();
    await s.restart();
    await expectEnd(clean.killedWhileSubmitting, 'reconciliation', 'submission_unconfirmed');
    await openRecordOf(s, clean.killedWhileSubmitting);

    await s.sandbox.stop('SIGKILL');
    clean.notTransmitted = await admit(s, 1);
    await expectEnd(clean.notTransmitted, 'failed', 'not_transmitted');

    // The operator adds a webhook sink and removes it, and sets the installation budget (high: it refuses nothing).
    const secretPath = join(dir, 'hook.secret');
    await writeFile(secretPath, `${'s'.repeat(40)}\n`, { mode: 0o600 });
    const hook = await startWebhookReceiver(200);
    try {
      const added = await call<{ sink: { sink_id: string } }>(s.ledger.url, 'POST', '/webhooks', { token: s.admin, body: { url: `${hook.origin}/in`, secret_file: secretPath } });
      expect(added.status).toBe(201);
      expect((await call(s.ledger.url, 'POST', `/webhooks/${added.body.sink.sink_id}/remove`, { token: s.admin, body: {} })).status).toBe(200);
    } finally {
      await hook.close();
    }
    const budget = { month_budget_units: '1000000000000', units_scale: 6, currency: 'USD' };
    expect((await call(s.ledger.url, 'PUT', '/budgets/installation', { token: s.admin, body: budget, headers: { 'if-match': '1' } })).status).toBe(200);

    // The operator suspends the agent: its approved, unclaimed authorization is cancelled.
    const unclaimed = await s.approvedToken();
    const shown = await call<{ authorization: { agent_id: string } }>(s.ledger.url, 'GET', `/authorizations/${unclaimed}`, { token: s.admin });
    const suspended = await call<{ cancelled_authorizations: number }>(s.ledger.url, 'POST', `/agents/${shown.body.authorization.agent_id}/suspend`, { token: s.admin, body: { reason: 'fixture' } });
    expect(suspended.body.cancelled_authorizations).toBe(1);
    clean.cancelled = { token: unclaimed, execution: '' };
    await s.executor.kill('SIGTERM');
    await s.ledger.stop('SIGTERM');

    clean.dir = await makeTempDir('lexec-proof-fixture-');
    await copyRun(dir, clean.dir);
  }, 120_000);

  afterAll(async () => {
    if (clean.dir !== '') await removeDir(clean.dir);
  });

  // Ledger migration 18 and executor migration 14: bookkeeping, not constraints.
  const COUNTING_TRIGGERS = new Set([
    'authorization_counted',
    'authorization_closed',
    'authorization_uncounted',
    'settlement_totalled',
    'settlement_retotalled',
    'settlement_untotalled',
    'execution_counted',
    'execution_ended',
    'execution_left',
    'execution_uncounted',
  ]);
  const breached: Breached = async (plant, inputs = (all) => all, options = {}) => {
    expect(clean.dir).not.toBe('');
    const dir = await makeTempDir('lexec-proof-breach-');
    try {
      await cp(clean.dir, dir, { recursive: true });
      const ledger = new Database(join(dir, 'ledger.db'));
      const executor = new Database(join(dir, 'executor.db'));
      // The breaches are ones the schemas and their triggers forbid; the copy plants them anyway.
      // The triggers that keep the metrics' counts stay: a plant changes the rows its rule reads
      // and the counts follow, as they would (kept_counts_match has plants of its own).
      for (const db of [ledger, executor]) {
        db.defaultSafeIntegers(true);
        for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as { name: string }[]) {
          if (!COUNTING_TRIGGERS.has(name)) db.exec(`DROP TRIGGER "${name}"`);
        }
        db.pragma('ignore_check_constraints = ON');
        db.pragma('foreign_keys = OFF');
      }
      try {
        await plant({ ledger, executor, dir, inputs: inputsIn(dir) });
      } finally {
        ledger.close();
        executor.close();
      }
      const violations = checkInvariants(inputs(inputsIn(dir))).violations.filter((violation) => options.outbox === true || !OUTBOX_RULES.includes(violation.rule));
      return { rules: [...new Set(violations.map((violation) => violation.rule))].sort(), messages: violations.map((violation) => violation.message) };
    } finally {
      await removeDir(dir);
    }
  };
  return { clean, breached };
}
