import { createHash } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';
import { correlationOf } from '../../src/executor/domain/correlation.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { checkInvariants, checkInvariantsAcrossHosts } from './check-invariants.js';
import { cleanRunFixture, inputsIn, jobsOnly, linesOf, logOnly, noSources, none, requestIdOf, writeLines, type Planted, type Run } from './invariant-fixture.js';

/*
 * The independent invariant checker (issue 14 item 1): what it may import; zero violations on a
 * real run that ends executions every way there is (invariant-fixture.ts), whichever file says
 * what reached the provider, and nothing written; and each rule on what reached the provider
 * caught when it is broken in a copy of the run's files. The other rules:
 * check-invariants-rules.test.ts.
 */

const { clean, breached } = cleanRunFixture();
const first = () => clean.succeeded[0] ?? none;

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


describe('the invariant checker', () => {
  /** The checker's files: check-invariants.ts and every file under checker/, as paths relative to this directory. */
  async function checkerFiles(): Promise<string[]> {
    const dir = fileURLToPath(new URL('./checker/', import.meta.url));
    const nested = (await readdir(dir, { recursive: true })).map(String).filter((name) => name.endsWith('.ts'));
    return ['check-invariants.ts', ...nested.map((name) => `checker/${name}`)];
  }

  it('shares no code with the system under test: every file of it imports only Node.js built-ins, better-sqlite3 and its own files', async () => {
    const files = await checkerFiles();
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const source = await readFile(new URL(`./${file}`, import.meta.url), 'utf8');
      // Static imports and re-exports; no dynamic import or require at all.
      const imported = [...source.matchAll(/^(?:import|export) [^;]*? from '([^']+)';$/gm)].map((match) => match[1] ?? '');
      expect(source, file).not.toMatch(/\bimport\(|\brequire\(/);
      for (const specifier of imported) {
        const own = specifier.startsWith('./') && files.includes(join(dirname(file), specifier).replaceAll('\\', '/'));
        expect(specifier === 'better-sqlite3' || specifier.startsWith('node:') || own, `${file} imports ${specifier}`).toBe(true);
      }
    }
    // Some file reads each of the databases and the files it needs.
    expect((await readFile(new URL('./checker/read-databases.ts', import.meta.url), 'utf8')).includes("from 'better-sqlite3'")).toBe(true);
  });

  describe('its eslint override', () => {
    const refusedLines = new Map<string, (number | undefined)[]>();
    // Linting with type information builds a TypeScript program of the project: tens of seconds
    // of CPU on a loaded machine, so it runs once here with room for that, not inside the test.
    beforeAll(async () => {
      const eslint = new ESLint({ cwd: fileURLToPath(new URL('../..', import.meta.url)) });
      const refused = async (file: string, own: string) => {
        const planted = [
          "import { readFileSync } from 'node:fs';",
          "import Database from 'better-sqlite3';",
          `import { own } from '${own}';`,
          "import { UserError } from '../../src/errors.js';",
          "import type { Stack } from '../support/durable-stack.js';",
          "import { EXPECTED } from './crash-matrix.js';",
          'export const used = [readFileSync, Database, own, UserError, EXPECTED, null as unknown as Stack];',
        ].join('\n');
        const [result] = await eslint.lintText(planted, { filePath: fileURLToPath(new URL(`./${file}`, import.meta.url)) });
        return result?.messages.filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.line) ?? [];
      };
      refusedLines.set('check-invariants.ts', await refused('check-invariants.ts', './checker/values.ts'));
      for (const file of (await checkerFiles()).filter((name) => name.startsWith('checker/'))) refusedLines.set(file, await refused(file, './values.ts'));
    }, 300_000);

    it('is held to that by an eslint override too: an import of src/, test/support/ or another proof harness in any file of the checker is refused', async () => {
      expect(refusedLines.size).toBe((await checkerFiles()).length);
      for (const [file, lines] of refusedLines) expect(lines, file).toEqual([4, 5, 6]);
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

  it('judges one ledger with several executors (issue 29): the run with a second, idle executor host is clean; the ledger without the executor that made its settlements is not', async () => {
    // A second executor of the same ledger that ran nothing: its own empty database, provider records and artifact root.
    const idle = join(clean.dir, 'idle-host');
    await mkdir(join(idle, 'artifacts'), { recursive: true });
    openDatabase(join(idle, 'executor.db'), EXECUTOR_MIGRATIONS).close();
    await writeFile(join(idle, 'submissions.jsonl'), '');
    const idleHost = { executorDatabase: join(idle, 'executor.db'), submissionsLog: join(idle, 'submissions.jsonl'), sandboxJobsFile: null, artifactRoot: join(idle, 'artifacts') };
    const all = inputsIn(clean.dir);
    const busyHost = { executorDatabase: all.executorDatabase, submissionsLog: all.submissionsLog, sandboxJobsFile: null, artifactRoot: all.artifactRoot };

    const both = checkInvariantsAcrossHosts({ ledgerDatabase: all.ledgerDatabase, executors: [busyHost, idleHost] });
    expect(both.violations).toEqual([]);
    expect(both.counts).toEqual(counts);

    // The ledger's settlements belong to an executor the check was not given: each is found.
    const idleOnly = checkInvariantsAcrossHosts({ ledgerDatabase: all.ledgerDatabase, executors: [idleHost] });
    expect(idleOnly.violations.map((violation) => violation.rule)).toContain('settlement_matches_receipt');
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

describe('what reached the provider', () => {
  it('one_submission_per_attempt: a second submission for one request id, in the log or in the jobs file', async () => {
    const duplicate = async (path: string, find: (line: Record<string, unknown>) => boolean) => {
      const lines = await linesOf(path);
      await writeLines(path, [...lines, lines.find(find)]);
    };
    // The copy carries its execution's correlation value too: a second submission for that execution.
    const both = ['one_submission_per_attempt', 'one_submission_per_execution'];
    expect((await breached(({ inputs }) => duplicate(inputs.submissionsLog, (line) => line.outcome === 'accepted'), logOnly)).rules).toEqual(both);
    expect((await breached(({ inputs }) => duplicate(inputs.sandboxJobsFile, (line) => line.type === 'job'), jobsOnly)).rules).toEqual(both);
  });

  it('one_submission_per_attempt: one more submission than attempts never answered could have sent (a resubmission), counted per model', async () => {
    const report = await breached(async ({ inputs }) => {
      const lines = await linesOf(inputs.submissionsLog);
      const last = lines.at(-1) ?? {};
      await writeLines(inputs.submissionsLog, [...lines, { ...last, sequence: lines.length + 1, request_id: 'resubmitted-0001', outcome: 'accepted', faults: [] }]);
    }, logOnly);
    // A resubmission carries its execution's correlation value a second time.
    expect(report.rules).toEqual(['one_submission_per_attempt', 'one_submission_per_execution']);
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
    ).toEqual(['one_submission_per_attempt', 'one_submission_per_execution']);
  });

  // lexec's own derivation, to hold the checker's (checker/values.ts) to it.
  const valueOf = (run: Run) => correlationOf(run.execution, true).value;

  it('one_submission_per_execution: the run is judged by it — every submission carries its execution\'s correlation value, as lexec derives it', async () => {
    const runs = [...clean.succeeded, clean.fewer, clean.settledAtLedger, clean.settledByHuman, clean.releasedByHuman, clean.releasedAtLedger, clean.killedWhileSubmitting];
    const seeds = (await linesOf(inputsIn(clean.dir).submissionsLog)).map((line) => line.seed);
    expect(seeds.sort()).toEqual(runs.map(valueOf).sort());
  });

  it('one_submission_per_execution: a second job for an execution whose answer never came, which the count per model cannot tell from the 5xx that made no job', async () => {
    const report = await breached(async ({ inputs }) => {
      const lines = await linesOf(inputs.sandboxJobsFile);
      const hung = lines.find((line) => line.seed === valueOf(clean.killedWhileSubmitting));
      expect(hung).toBeDefined();
      await writeLines(inputs.sandboxJobsFile, [...lines, { ...hung, request_id: 'resubmitted-0004' }]);
    }, jobsOnly);
    expect(report.rules).toEqual(['one_submission_per_execution']);
    expect(report.messages).toEqual([expect.stringMatching(/^2 submissions carry its correlation value \(jobs file lines \d+, \d+\)$/)]);
  });

  it('one_submission_per_execution: a submission carrying the value of an execution proven never transmitted', async () => {
    const report = await breached(async ({ inputs }) => {
      const lines = await linesOf(inputs.submissionsLog);
      const last = lines.at(-1) ?? {};
      await writeLines(inputs.submissionsLog, [...lines, { ...last, sequence: lines.length + 1, request_id: null, seed: valueOf(clean.notTransmitted), outcome: 'http_error', faults: ['http_error'] }]);
    }, logOnly);
    // The count per model sees one submission too many as well; the correlation value names the execution.
    expect(report.rules).toEqual(['one_submission_per_attempt', 'one_submission_per_execution']);
    expect(report.messages).toContainEqual(expect.stringMatching(/^a submission carries its correlation value \(submissions log lines \d+\), though its attempt was never transmitted$/));
  });

  it('one_submission_per_execution: a submission whose request id is one execution\'s, carrying another\'s value', async () => {
    const [a, b] = [clean.succeeded[0] ?? none, clean.succeeded[1] ?? none];
    const report = await breached(async ({ inputs, executor }) => {
      const [idA, idB] = [requestIdOf(executor, a), requestIdOf(executor, b)];
      const lines = await linesOf(inputs.submissionsLog);
      await writeLines(inputs.submissionsLog, lines.map((line) => (line.request_id === idA ? { ...line, seed: valueOf(b) } : line.request_id === idB ? { ...line, seed: valueOf(a) } : line)));
    }, logOnly);
    expect(report.rules).toEqual(['one_submission_per_execution']);
    expect(report.messages).toHaveLength(2);
    for (const other of [b.execution, a.execution]) {
      expect(report.messages).toContainEqual(expect.stringMatching(new RegExp(`^request \\S+ carries the correlation value of ${other}, not its own \\(submissions log line \\d+\\)$`)));
    }
  });

  it('one_submission_per_execution: judged only on submissions that carry a seed — a target that sends none is outside it, the request-id rules still judge it', async () => {
    // The log records no seed; the jobs file the sandbox's own (from the request id), no execution's value.
    const seedless = async ({ inputs }: Planted) => {
      await writeLines(inputs.submissionsLog, (await linesOf(inputs.submissionsLog)).map((line) => ({ ...line, seed: null })));
      const jobs = await linesOf(inputs.sandboxJobsFile);
      await writeLines(inputs.sandboxJobsFile, jobs.map((line) => (line.type === 'job' ? { ...line, seed: createHash('sha256').update(String(line.request_id)).digest().readUInt32BE(0) } : line)));
    };
    expect(await breached(seedless)).toEqual({ rules: [], messages: [] });
    const resubmitted = await breached(async (planted) => {
      await seedless(planted);
      const lines = await linesOf(planted.inputs.submissionsLog);
      const accepted = lines.find((line) => line.outcome === 'accepted') ?? {};
      await writeLines(planted.inputs.submissionsLog, [...lines, { ...accepted, sequence: lines.length + 1, request_id: 'resubmitted-0005' }]);
    }, logOnly);
    expect(resubmitted.rules).toEqual(['one_submission_per_attempt']);
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
