import { createHash } from 'node:crypto';
import { appendFile, cp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { ESLint } from 'eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../support/cli.js';
import { durableHarness, setFaults, until, type Stack } from '../support/durable-stack.js';
import { call } from '../support/ledger.js';
import type { SandboxFault } from '../support/sandbox-process.js';
import { checkInvariants, type InvariantInputs, type Rule } from './check-invariants.js';

/*
 * The independent invariant checker (issue 14 item 1): zero violations on a real run (a ledger,
 * a sandbox provider keeping both its submissions log and its jobs file, `executor serve` on the
 * embedded engine) that ends executions every way there is — settled; settled for fewer images;
 * billing ambiguous and settled by a human at the ledger; provider error settled by a human at
 * the executor for the images the provider's evidence shows; answer dropped and released by a
 * human; 5xx to the submission and released by a human at the ledger; killed mid-submission and
 * left in reconciliation; never transmitted and released — whichever file says what reached the
 * provider; and each rule caught when it is broken in a copy of the run's files.
 */

const harness = durableHarness('lexec-proof-', 'file');

interface Run {
  readonly token: string;
  readonly execution: string;
}
const none: Run = { token: '', execution: '' };

/** The clean run: its files (flat, in `dir`) and which execution ended how. */
const clean = {
  dir: '',
  succeeded: [] as Run[],
  /** Asked for 3 images, 2 delivered: billed 2. */
  fewer: none,
  /** COMPLETED with an error; a human settled it at the ledger itself (the executor keeps it in reconciliation). */
  settledAtLedger: none,
  /** COMPLETED with an error; a human settled 1 image of 2 through the executor's route. */
  settledByHuman: none,
  /** Answer dropped after the provider received it; a human released it through the executor's route. */
  releasedByHuman: none,
  /** 5xx to the submission (no job); a human released it at the ledger itself. */
  releasedAtLedger: none,
  /** The executor SIGKILLed while its submission hung: left in reconciliation, record open. */
  killedWhileSubmitting: none,
  /** The provider down: never transmitted, released. */
  notTransmitted: none,
};

/** The files of a run, which always has both records of the provider. */
type RunFiles = { readonly [K in keyof InvariantInputs]-?: NonNullable<InvariantInputs[K]> };

function inputsIn(dir: string): RunFiles {
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
  await s.executor.kill('SIGTERM');
  await s.ledger.stop('SIGTERM');

  clean.dir = await makeTempDir('lexec-proof-fixture-');
  await copyRun(dir, clean.dir);
}, 120_000);

afterAll(async () => {
  if (clean.dir !== '') await removeDir(clean.dir);
});

/** Every file under `dir` with its sha256. */
async function snapshotFiles(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(dir, path), createHash('sha256').update(await readFile(path)).digest('hex'));
  }
  return files;
}

/** Every line of a JSON-lines file, parsed. */
async function linesOf(path: string): Promise<Record<string, unknown>[]> {
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function writeLines(path: string, lines: readonly unknown[]): Promise<void> {
  await writeFile(path, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
}

describe('the invariant checker', () => {
  it('shares no code with the system under test: it imports only Node.js built-ins and better-sqlite3', async () => {
    const source = await readFile(new URL('./check-invariants.ts', import.meta.url), 'utf8');
    const imported = [...source.matchAll(/^import [^;]*? from '([^']+)';$/gm)].map((match) => match[1]);
    expect(imported.length).toBeGreaterThan(0);
    for (const specifier of imported) expect(specifier === 'better-sqlite3' || specifier?.startsWith('node:'), specifier).toBe(true);
  });

  describe('its eslint override', () => {
    let lines: (number | undefined)[] = [];
    // Linting with type information builds a TypeScript program of the project: tens of seconds
    // of CPU on a loaded machine, so it runs once here with room for that, not inside the test.
    beforeAll(async () => {
      const eslint = new ESLint({ cwd: fileURLToPath(new URL('../..', import.meta.url)) });
      const planted = [
        "import { readFileSync } from 'node:fs';",
        "import Database from 'better-sqlite3';",
        "import { UserError } from '../../src/errors.js';",
        "import type { Stack } from '../support/durable-stack.js';",
        'export const used = [readFileSync, Database, UserError, null as unknown as Stack];',
      ].join('\n');
      const [result] = await eslint.lintText(planted, { filePath: fileURLToPath(new URL('./check-invariants.ts', import.meta.url)) });
      lines = result?.messages.filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.line) ?? [];
    }, 300_000);

    it('is held to that by an eslint override too: an import of src/ or test/support/ in the checker is refused', () => {
      expect(lines).toEqual([3, 4]);
    });
  });

  const counts = { executions: 10, attempts: 10, submissions: 8, settlements: 6, releases: 3, reconciliations: 5, artifacts: 1 + 2 + 3 + 2 };

  it('finds no violation in a real run that ends executions every way, judged by the submissions log', () => {
    const report = checkInvariants({ ...inputsIn(clean.dir), sandboxJobsFile: null });
    expect(report.violations).toEqual([]);
    expect(report.counts).toEqual(counts);
  });

  it('finds none judged by the sandbox jobs file instead (a job line per submission that created a job), nor by both', async () => {
    const jobs = await linesOf(inputsIn(clean.dir).sandboxJobsFile);
    // Every submission but the one answered 5xx created a job.
    expect(jobs.filter((line) => line.type === 'job')).toHaveLength(8);
    const report = checkInvariants({ ...inputsIn(clean.dir), submissionsLog: null });
    expect(report.violations).toEqual([]);
    expect(report.counts).toEqual(counts);
    expect(checkInvariants(inputsIn(clean.dir)).violations).toEqual([]);
  });

  it('finds none without any record of the provider (a live provider): what reached it is judged by the attempts alone', () => {
    const report = checkInvariants({ ...inputsIn(clean.dir), submissionsLog: null, sandboxJobsFile: null });
    expect(report.violations).toEqual([]);
    expect(report.counts).toEqual({ ...counts, submissions: 0 });
  });

  it('only reads: every file is unchanged after a check (SQLite may add its empty -wal and -shm sidecars)', async () => {
    const before = await snapshotFiles(clean.dir);
    checkInvariants(inputsIn(clean.dir));
    const after = await snapshotFiles(clean.dir);
    for (const [file, sha] of before) expect(after.get(file), file).toBe(sha);
    for (const file of [...after.keys()].filter((name) => !before.has(name))) expect(file).toMatch(/^(ledger|executor)\.db-(wal|shm)$/);
  });
});

interface Planted {
  readonly ledger: Database.Database;
  readonly executor: Database.Database;
  readonly dir: string;
  readonly inputs: RunFiles;
}

/**
 * A copy of the clean run with one breach planted by `plant`, checked with `inputs` (by default
 * every file of the copy); answers the rules reported, sorted, and the messages.
 */
async function breached(
  plant: (files: Planted) => Promise<void> | void,
  inputs: (all: RunFiles) => InvariantInputs = (all) => all,
): Promise<{ rules: Rule[]; messages: string[] }> {
  expect(clean.dir).not.toBe('');
  const dir = await makeTempDir('lexec-proof-breach-');
  try {
    await cp(clean.dir, dir, { recursive: true });
    const ledger = new Database(join(dir, 'ledger.db'));
    const executor = new Database(join(dir, 'executor.db'));
    // The breaches are ones the schemas and their triggers forbid; the copy plants them anyway.
    for (const db of [ledger, executor]) {
      db.defaultSafeIntegers(true);
      for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as { name: string }[]) db.exec(`DROP TRIGGER "${name}"`);
      db.pragma('ignore_check_constraints = ON');
      db.pragma('foreign_keys = OFF');
    }
    try {
      await plant({ ledger, executor, dir, inputs: inputsIn(dir) });
    } finally {
      ledger.close();
      executor.close();
    }
    const { violations } = checkInvariants(inputs(inputsIn(dir)));
    return { rules: [...new Set(violations.map((violation) => violation.rule))].sort(), messages: violations.map((violation) => violation.message) };
  } finally {
    await removeDir(dir);
  }
}

/** Rebuilds a ledger table without its UNIQUE constraints (a second settlement or release is otherwise impossible). */
function withoutUnique(db: Database.Database, table: 'settlements' | 'releases'): void {
  db.exec(`CREATE TABLE loose AS SELECT * FROM ${table}; DROP TABLE ${table}; ALTER TABLE loose RENAME TO ${table};`);
}

const first = () => clean.succeeded[0] ?? none;
const requestIdOf = (executor: Database.Database, run: Run) =>
  executor.prepare('SELECT request_id FROM provider_attempts WHERE execution_id = ?').pluck().get(run.execution) as string;
const noSources = (all: RunFiles): InvariantInputs => ({ ...all, submissionsLog: null, sandboxJobsFile: null });
const logOnly = (all: RunFiles): InvariantInputs => ({ ...all, sandboxJobsFile: null });
const jobsOnly = (all: RunFiles): InvariantInputs => ({ ...all, submissionsLog: null });

describe('what reached the provider', () => {
  it('one_submission_per_attempt: a second submission for one request id, in the log or in the jobs file', async () => {
    const duplicate = async (path: string, find: (line: Record<string, unknown>) => boolean) => {
      const lines = await linesOf(path);
      await writeLines(path, [...lines, lines.find(find)]);
    };
    expect((await breached(({ inputs }) => duplicate(inputs.submissionsLog, (line) => line.outcome === 'accepted'), logOnly)).rules).toEqual(['one_submission_per_attempt']);
    expect((await breached(({ inputs }) => duplicate(inputs.sandboxJobsFile, (line) => line.type === 'job'), jobsOnly)).rules).toEqual(['one_submission_per_attempt']);
  });

  it('one_submission_per_attempt: one more submission than attempts never answered could have sent (a resubmission), counted per model', async () => {
    const report = await breached(async ({ inputs }) => {
      const lines = await linesOf(inputs.submissionsLog);
      const last = lines.at(-1) ?? {};
      await writeLines(inputs.submissionsLog, [...lines, { ...last, sequence: lines.length + 1, request_id: 'resubmitted-0001', outcome: 'accepted', faults: [] }]);
    }, logOnly);
    expect(report.rules).toEqual(['one_submission_per_attempt']);
    // The dropped answer, the 5xx and the hung submission: three attempts never answered.
    expect(report.messages[0]).toMatch(/^4 submissions of .* no attempt accounts for .*; 3 attempts never answered\)$/);
    // The jobs file has no line for the 5xx (no job was created), so that attempt can account for
    // one job line more: it takes two resubmissions to outnumber them there.
    expect(
      (
        await breached(async ({ inputs }) => {
          const lines = await linesOf(inputs.sandboxJobsFile);
          const job = lines.find((line) => line.type === 'job');
          await writeLines(inputs.sandboxJobsFile, [...lines, { ...job, request_id: 'resubmitted-0002' }, { ...job, request_id: 'resubmitted-0003' }]);
        }, jobsOnly)
      ).rules,
    ).toEqual(['one_submission_per_attempt']);
  });

  it('one_attempt_per_execution: a second provider attempt recorded for an execution', async () => {
    expect(
      (
        await breached(({ executor }) => {
          executor
            .prepare("INSERT INTO provider_attempts (attempt_id, execution_id, attempt_number, state, currency, created_at, updated_at) VALUES ('att_planted', ?, 0, 'not_transmitted', 'USD', 0, 0)")
            .run(clean.fewer.execution);
        })
      ).rules,
    ).toEqual(['one_attempt_per_execution']);
  });

  it('request_id_on_one_attempt: one provider request id on two attempts', async () => {
    const report = await breached(({ executor }) => {
      executor.prepare('UPDATE provider_attempts SET request_id = ? WHERE execution_id = ?').run(requestIdOf(executor, first()), clean.fewer.execution);
    }, noSources);
    expect(report.rules).toEqual(['request_id_on_one_attempt']);
  });

  it('attempt_request_id_submitted: a request id the executor holds that the provider never received', async () => {
    const drop = (path: string) => async ({ executor }: Planted) => {
      const requestId = requestIdOf(executor, first());
      await writeLines(path, (await linesOf(path)).filter((line) => line.request_id !== requestId));
    };
    expect((await breached(async (planted) => drop(planted.inputs.submissionsLog)(planted), logOnly)).rules).toEqual(['attempt_request_id_submitted']);
    expect((await breached(async (planted) => drop(planted.inputs.sandboxJobsFile)(planted), jobsOnly)).rules).toEqual(['attempt_request_id_submitted']);
  });

  it('submissions_source_readable: a line that is not a record; a cancel line and a torn last line of the jobs file are not breaches', async () => {
    expect((await breached(({ inputs }) => appendFile(inputs.submissionsLog, '{"sequence": "one"}\n'), logOnly)).rules).toEqual(['submissions_source_readable']);
    expect((await breached(({ inputs }) => appendFile(inputs.sandboxJobsFile, 'not json\n'), jobsOnly)).rules).toEqual(['submissions_source_readable']);
    expect(
      (
        await breached(async ({ inputs, executor }) => {
          await appendFile(inputs.sandboxJobsFile, `${JSON.stringify({ type: 'cancel', request_id: requestIdOf(executor, first()), at: 1 })}\n{"type":"job","request_id":"torn-`);
        }, jobsOnly)
      ).rules,
    ).toEqual([]);
  });
});

describe('the ledger\'s authorizations', () => {
  it('settle_xor_release: a second release of one authorization; a release beside a settlement (its status then disagrees too)', async () => {
    expect(
      await breached(({ ledger }) => {
        withoutUnique(ledger, 'releases');
        ledger.prepare("INSERT INTO releases SELECT 'rel_planted', token_id, execution_id, reason, created_at FROM releases WHERE token_id = ?").run(clean.notTransmitted.token);
      }),
    ).toEqual({ rules: ['settle_xor_release'], messages: ['2 releases'] });
    expect(
      (
        await breached(({ ledger }) => {
          ledger.prepare("INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES ('rel_x', ?, ?, 'cancelled', 0)").run(first().token, first().execution);
        })
      ).rules,
    ).toEqual(['authorization_status_matches', 'settle_xor_release']);
  });

  it('authorization_status_matches: a settled authorization whose status says claimed', async () => {
    expect((await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET status = 'claimed' WHERE token_id = ?").run(first().token))).rules).toEqual([
      'authorization_status_matches',
    ]);
  });

  it('closed_by_claiming_execution: an authorization claimed by another execution than the one that settled it and runs on it', async () => {
    const report = await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET execution_id = 'exe_other' WHERE token_id = ?").run(first().token));
    expect(report.rules).toEqual(['claim_has_execution', 'closed_by_claiming_execution']);
    expect(report.messages).toEqual([
      `closed by execution ${first().execution}, claimed by exe_other`,
      `claimed for exe_other, which the executor does not have`,
      `the ledger's claim of ${first().token} names exe_other`,
    ]);
  });

  it('claim_has_execution: a claim at the ledger for an execution the executor never recorded (a stuck hold)', async () => {
    const report = await breached(({ ledger }) => {
      ledger.exec(`CREATE TEMP TABLE ghost AS SELECT * FROM authorizations WHERE token_id = '${first().token}'`);
      ledger.exec("UPDATE ghost SET token_id = 'tok_ghost', execution_id = 'exe_ghost', status = 'claimed'");
      ledger.exec('INSERT INTO authorizations SELECT * FROM ghost');
    });
    expect(report.rules).toEqual(['claim_has_execution']);
    expect(report.messages).toEqual(['claimed for exe_ghost, which the executor does not have']);
  });
});

describe('money', () => {
  it('hold_matches_ledger: the executor records another hold than the ledger; a settlement in another currency', async () => {
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE executions SET authorization_held_units = authorization_held_units + 1 WHERE execution_id = ?').run(first().execution))).rules,
    ).toEqual(['hold_matches_ledger']);
    expect((await breached(({ ledger }) => void ledger.prepare("UPDATE settlements SET currency = 'EUR' WHERE token_id = ?").run(first().token))).rules).toEqual(['hold_matches_ledger']);
  });

  it('settled_within_hold: a settlement over the hold', async () => {
    expect(
      (
        await breached(({ ledger, executor }) => {
          ledger.prepare('UPDATE authorizations SET amount_units = 1 WHERE token_id = ?').run(first().token);
          executor.prepare('UPDATE executions SET authorization_held_units = 1, quoted_units = NULL WHERE execution_id = ?').run(first().execution);
        })
      ).rules,
    ).toEqual(['settled_within_hold']);
  });

  it('settled_equals_price_times_delivered: a settlement of a unit more (then not its receipt either); a human billing count the settlement is not priced by (nor its receipt)', async () => {
    expect((await breached(({ ledger }) => void ledger.prepare('UPDATE settlements SET amount_units = amount_units + 1 WHERE token_id = ?').run(first().token))).rules).toEqual([
      'settled_equals_price_times_delivered',
      'settlement_matches_receipt',
    ]);
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE reconciliation_resolutions SET images_billed = 2 WHERE execution_id = ?').run(clean.settledByHuman.execution))).rules,
    ).toEqual(['receipt_equals_price_times_billed', 'settled_equals_price_times_delivered']);
  });

  it('settlement_matches_receipt: a receipt that does not record its settlement; a settlement of another receipt', async () => {
    expect((await breached(({ executor }) => void executor.prepare('UPDATE receipts SET ledger_settlement_id = NULL WHERE execution_id = ?').run(first().execution))).rules).toEqual([
      'settlement_matches_receipt',
    ]);
    expect((await breached(({ ledger }) => void ledger.prepare("UPDATE settlements SET receipt_id = 'rcpt_other' WHERE token_id = ?").run(first().token))).rules).toEqual([
      'settlement_matches_receipt',
    ]);
  });

  it('receipt_equals_price_times_billed: a receipt whose exact amount is not its micro-units', async () => {
    expect((await breached(({ executor }) => void executor.prepare('UPDATE receipts SET exact_amount = exact_amount + 1 WHERE execution_id = ?').run(first().execution))).rules).toEqual([
      'receipt_equals_price_times_billed',
    ]);
  });

  it('attempt_amount_matches_receipt: the attempt records another amount than the receipt it bills', async () => {
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE provider_attempts SET exact_amount = exact_amount + 1 WHERE execution_id = ?').run(clean.fewer.execution))).rules,
    ).toEqual(['attempt_amount_matches_receipt']);
  });

  it('resolution_matches_ledger: a human resolution recording another amount than was settled, or closed otherwise at the ledger', async () => {
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE reconciliation_resolutions SET amount_units = amount_units + 1 WHERE execution_id = ?').run(clean.settledByHuman.execution)))
        .rules,
    ).toEqual(['resolution_matches_ledger']);
    expect(
      (await breached(({ ledger }) => void ledger.prepare("UPDATE reconciliation_records SET resolution = 'settled' WHERE token_id = ?").run(clean.releasedByHuman.token))).rules,
    ).toEqual(['resolution_matches_ledger']);
    // A human naming 1 image for a kept receipt of the 2 delivered (the executor's route accepts that today).
    const report = await breached(({ ledger, executor }) => {
      const settled = ledger.prepare('SELECT amount_units FROM settlements WHERE token_id = ?').pluck().get(clean.fewer.token) as bigint;
      executor.prepare("UPDATE executions SET state_reason = 'reconciled_settled' WHERE execution_id = ?").run(clean.fewer.execution);
      executor
        .prepare("INSERT INTO reconciliation_resolutions (execution_id, resolution, images_billed, amount_units, note, resolved_at) VALUES (?, 'settled', 1, ?, 'one image', 0)")
        .run(clean.fewer.execution, settled);
    });
    expect(report).toEqual({ rules: ['resolution_matches_ledger'], messages: ['the human billed 1 images, the receipt bills 2'] });
  });
});

describe('every execution\'s end', () => {
  it('terminal_or_reconciliation: an execution left running', async () => {
    expect((await breached(({ executor }) => void executor.prepare("UPDATE executions SET state = 'running' WHERE execution_id = ?").run(clean.notTransmitted.execution))).rules).toEqual([
      'terminal_or_reconciliation',
    ]);
  });

  it('reconciliation_has_ledger_record: a parked execution without its record (then, having reached the provider, no money record either)', async () => {
    const remove = (run: Run) => ({ ledger }: Planted) => void ledger.prepare('DELETE FROM reconciliation_records WHERE token_id = ?').run(run.token);
    expect((await breached(remove(clean.killedWhileSubmitting))).rules).toEqual(['reconciliation_has_ledger_record', 'submitted_has_money_record']);
    // Settled at the ledger by a human: the settlement is its money record.
    expect((await breached(remove(clean.settledAtLedger))).rules).toEqual(['reconciliation_has_ledger_record']);
  });

  it('succeeded_has_one_settlement: a succeeded execution the ledger never settled (its submission reached the provider)', async () => {
    expect(
      (
        await breached(({ ledger, executor }) => {
          ledger.prepare('DELETE FROM settlements WHERE token_id = ?').run(first().token);
          ledger.prepare("UPDATE authorizations SET status = 'claimed', closed_at = NULL WHERE token_id = ?").run(first().token);
          executor.prepare('UPDATE receipts SET ledger_settlement_id = NULL WHERE execution_id = ?').run(first().execution);
        })
      ).rules,
    ).toEqual(['submitted_has_money_record', 'succeeded_has_one_settlement']);
  });

  it('submitted_has_money_record: an execution whose submission reached the provider, released as not transmitted', async () => {
    const run = clean.killedWhileSubmitting;
    const report = await breached(({ ledger, executor }) => {
      ledger.prepare('DELETE FROM reconciliation_records WHERE token_id = ?').run(run.token);
      ledger.prepare("INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES ('rel_planted', ?, ?, 'not_transmitted', 0)").run(run.token, run.execution);
      ledger.prepare("UPDATE authorizations SET status = 'released', closed_at = 0 WHERE token_id = ?").run(run.token);
      executor.prepare("UPDATE executions SET state = 'failed', state_reason = 'not_transmitted' WHERE execution_id = ?").run(run.execution);
    });
    expect(report).toEqual({ rules: ['submitted_has_money_record'], messages: ['released as not_transmitted without reconciliation although its submission reached the provider'] });
  });

  it('failed_has_release: a failed execution whose hold was never released', async () => {
    const run = clean.notTransmitted;
    expect(
      (
        await breached(({ ledger }) => {
          ledger.prepare('DELETE FROM releases WHERE token_id = ?').run(run.token);
          ledger.prepare("UPDATE authorizations SET status = 'claimed', closed_at = NULL WHERE token_id = ?").run(run.token);
        })
      ).rules,
    ).toEqual(['failed_has_release']);
  });
});

describe('artifacts', () => {
  const keyOf = (executor: Database.Database, run: Run, ordinal = 0) =>
    executor.prepare('SELECT storage_key FROM artifacts WHERE execution_id = ? AND ordinal = ?').pluck().get(run.execution, ordinal) as string;

  it('artifacts_intact: a missing file, an altered one of the same size, a size or a storage key outside the root not as recorded', async () => {
    const cases: ((planted: Planted) => Promise<void> | void)[] = [
      ({ dir, executor }) => rm(join(dir, 'artifacts', keyOf(executor, clean.succeeded[1] ?? none))),
      async ({ dir, executor }) => {
        const path = join(dir, 'artifacts', keyOf(executor, clean.fewer));
        const bytes = await readFile(path);
        await writeFile(path, Buffer.concat([bytes.subarray(0, -1), Buffer.from([(bytes.at(-1) ?? 0) ^ 0x01])]));
      },
      ({ executor }) => void executor.prepare('UPDATE artifacts SET size_bytes = size_bytes + 1 WHERE execution_id = ?').run(first().execution),
      ({ executor }) => void executor.prepare("UPDATE artifacts SET storage_key = '../executor.db' WHERE execution_id = ?").run(first().execution),
    ];
    const messages: string[] = [];
    for (const plant of cases) {
      const report = await breached(plant);
      expect(report.rules).toEqual(['artifacts_intact']);
      messages.push(...report.messages);
    }
    expect(messages.map((message) => message.replace(/^[^:]*: /, ''))).toEqual([
      'missing',
      expect.stringMatching(/does not match its sha256$/),
      expect.stringMatching(/^\d+ bytes on disk, \d+ recorded$/),
      'outside the artifact root',
    ]);
  });

  it('artifacts_intact: a succeeded execution missing an artifact record, or with a gap in its ordinals', async () => {
    const run = clean.succeeded[2] ?? none;
    expect(await breached(({ executor }) => void executor.prepare('DELETE FROM artifacts WHERE execution_id = ? AND ordinal = 2').run(run.execution))).toEqual({
      rules: ['artifacts_intact'],
      messages: ['2 artifacts recorded, 3 images delivered'],
    });
    expect(await breached(({ executor }) => void executor.prepare('UPDATE artifacts SET ordinal = 5 WHERE execution_id = ? AND ordinal = 1').run(run.execution))).toEqual({
      rules: ['artifacts_intact'],
      messages: ['artifact ordinals 0,2,5 are not 0…2'],
    });
  });
});

describe('amounts', () => {
  it('amounts_are_integers: an amount stored as REAL or as TEXT, a REAL in any other column, an amount column gone from the schema', async () => {
    const cases: [string, (planted: Planted) => void][] = [
      ['stored as real', ({ ledger }) => void ledger.prepare('UPDATE settlements SET amount_cents = 12.5 WHERE token_id = ?').run(first().token)],
      ['stored as text', ({ ledger }) => void ledger.prepare("UPDATE authorizations SET amount_cents = '0.90 USD' WHERE token_id = ?").run(clean.notTransmitted.token)],
      ['stored as real', ({ executor }) => void executor.prepare('UPDATE executions SET created_at = created_at + 0.5 WHERE execution_id = ?').run(first().execution)],
      ["not in the schema: the checker's knowledge of it is stale", ({ ledger }) => void ledger.exec('ALTER TABLE policies RENAME COLUMN daily_cap_units TO daily_limit')],
    ];
    for (const [message, plant] of cases) expect(await breached(plant)).toEqual({ rules: ['amounts_are_integers'], messages: [message] });
  });
});
