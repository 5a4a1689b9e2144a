// How soon a killed process's work resumes (issue 24 item 11; docs/benchmarks.md "Resume after a
// kill", docs/reliability.md "Crash points"): runs the crash-point matrix
// (test/proof/crash-points.<engine>.test.ts: a real stack, SIGKILL at every crash point, the
// supervisor's restart) with LEXEC_PROOF_RESUME_FILE set, so that each case records, once it is at
// rest, how long after the killed process came back the execution moved on — its first durable
// record, its final state, its workflow run closed (test/proof/resume-figures.ts) — and prints
// them per case and summed up. Figures, never assertions: the matrix itself asserts only the
// dispositions.
//
//   node bench/proof/resume.mjs [--engine temporal|embedded] [--dir PATH]
//   (from the repository root, after `npm run build`; Temporal needs LEXEC_TEMPORAL_CLI)
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { fail, runBenchmark, table } from '../lib/harness.mjs';
import { percentile } from '../lib/measure.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The target: a killed executor's work moves on within this long of its restart. */
const TARGET_MS = 3_000;

function parseArgs() {
  const argv = process.argv.slice(2);
  const options = { engine: 'temporal', dir: tmpdir() };
  for (let index = 0; index < argv.length; index += 1) {
    const [name, inline] = argv[index].includes('=') ? argv[index].split(/=(.*)/s) : [argv[index], undefined];
    if (name === '--help' || name === '-h') {
      process.stdout.write('usage: node bench/proof/resume.mjs [--engine temporal|embedded] [--dir PATH]\n');
      process.exit(0);
    }
    const value = inline ?? argv[++index];
    if (name === '--engine' && ['temporal', 'embedded'].includes(value)) options.engine = value;
    else if (name === '--dir' && value !== undefined) options.dir = value;
    else fail(`unknown or incomplete argument ${JSON.stringify(argv[index])}`);
  }
  if (!existsSync(join(root, 'dist'))) fail('dist missing: run `npm run build` first.');
  if (options.engine === 'temporal' && !process.env.LEXEC_TEMPORAL_CLI) fail('the Temporal matrix needs LEXEC_TEMPORAL_CLI.');
  return options;
}

const running = { child: null };

async function main(options, workDir) {
  const figures = join(workDir, 'resume.jsonl');
  const file = `test/proof/crash-points.${options.engine}.test.ts`;
  process.stderr.write(`bench/proof/resume: the ${options.engine} crash matrix (${file}), a few minutes\n`);
  const code = await new Promise((done) => {
    const child = spawn(process.execPath, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', file], {
      cwd: root,
      env: { ...process.env, LEXEC_PROOF_RESUME_FILE: figures },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    running.child = child;
    child.once('exit', (exitCode) => {
      running.child = null;
      done(exitCode ?? 1);
    });
  });
  const rows = existsSync(figures) ? readFileSync(figures, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line)) : [];
  return { code, rows };
}

async function stop() {
  running.child?.kill('SIGTERM');
}

const ms = (value) => (value === null || value === undefined ? '—' : String(value));

/** median / p90 / max of the figures present, and how many are within the target. */
function summary(values) {
  const sorted = values.filter((value) => value !== null).sort((a, b) => a - b);
  if (sorted.length === 0) return { n: 0 };
  return { n: sorted.length, median: percentile(sorted, 50), p90: percentile(sorted, 90), max: sorted.at(-1), within: sorted.filter((value) => value <= TARGET_MS).length };
}

function report(options, { code, rows }) {
  const lines = table(
    ['case', 'killed', 'kill → back ms', 'back → worker ms', 'back → next step ms', 'back → final ms', 'back → run closed ms'],
    rows.map((row) => [row.case, row.killed, ms(row.restartMs), ms(row.workerMs), ms(row.nextStepMs), ms(row.finalMs), ms(row.closedMs)]),
  );
  process.stdout.write(`bench/proof/resume (${options.engine}): ${rows.length} cases\n${lines.join('\n')}\n`);
  // The engine's resume: cases whose executor was killed while the run was open (a run that had
  // closed before the kill, a human's request, had nothing of the engine's to resume).
  const engineCases = rows.filter((row) => row.killed === 'executor' && (row.closedMs !== null || options.engine === 'embedded'));
  const moved = engineCases.map((row) => row.nextStepMs ?? row.closedMs ?? row.finalMs);
  const result = {
    engine: options.engine,
    cases: rows.length,
    executor_killed_open_run: engineCases.length,
    back_to_moved_on_ms: summary(moved),
    back_to_run_closed_ms: summary(engineCases.map((row) => row.closedMs)),
    kill_to_back_ms: summary(rows.map((row) => row.restartMs)),
    back_to_worker_ms: summary(rows.map((row) => row.workerMs)),
    ledger_killed_back_to_run_closed_ms: summary(rows.filter((row) => row.killed === 'ledger').map((row) => row.closedMs)),
    matrix_exit_code: code,
  };
  const line = (name, value) => (value.n === 0 ? `${name}: none` : `${name}: median ${value.median} ms, p90 ${value.p90} ms, max ${value.max} ms (${value.within}/${value.n} within ${TARGET_MS} ms)`);
  process.stdout.write(
    [
      line('executor killed, back → moved on (first durable step, else run closed)', result.back_to_moved_on_ms),
      line('executor killed, back → run closed', result.back_to_run_closed_ms),
      line('kill → back (supervisor restart and start-up)', result.kill_to_back_ms),
      line('back → Temporal worker polling', result.back_to_worker_ms),
      line('ledger killed, ledger back → run closed', result.ledger_killed_back_to_run_closed_ms),
    ].join('\n') + '\n',
  );
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  return code === 0 ? 0 : 1;
}

await runBenchmark({ name: 'proof-resume', what: 'the crash matrix', parseArgs, main, stop, report });
