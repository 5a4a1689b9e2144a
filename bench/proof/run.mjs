// The randomized proof runs (issue 14 item 4, issue 24 items 11-12; docs/reliability.md
// "Randomized runs"): many seeds, each fresh sandbox stacks with concurrent `lexec run`
// executions, random SIGKILLs of the executor, the ledger, the sandbox provider and (Temporal) the
// Temporal server, random provider faults and (mode `terminations`) workflow runs terminated
// mid-run, then the independent invariant checker on the stacks at rest (bench/proof/driver.mjs).
// Prints the first seed, each run's figures on stderr, and the totals by engine and mode; exits 1
// if any run broke a money rule (or a workflow run did not come to rest COMPLETED), naming its
// seed (run it again with --seed S --runs 1).
//
//   node bench/proof/run.mjs [--runs N] [--seed S] [--engine embedded|temporal|both]
//                            [--mode any|single|two_executors|terminations] [--parallel P] [--dir PATH]
//   (from the repository root, after `npm run build`, on Node.js 24)
//
// --runs (default 20) seeds S, S+1, …; --seed (default: random, printed); --engine (default
// embedded; `both` alternates, Temporal needs the CLI: LEXEC_TEMPORAL_CLI or the toolchain cache);
// --mode (default any: whatever each seed chooses) keeps only the seeds from S on whose schedule
// has that mode, until N runs (two_executors and terminations are Temporal modes); --parallel
// (default 1) runs that many seeds at once. A run that broke a rule (or gave up on an execution,
// or could not be made) keeps its stack home under --dir and says where; clean ones are removed.
// SIGINT or SIGTERM stops the commands in flight (a `lexec stack start` is let finish), then every
// stack running (`lexec stack stop`, then SIGKILL to whatever is left) and the dev servers, and
// exits 130.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, runBenchmark, table } from '../lib/harness.mjs';
import { describeEvents, MODES, proofRun, scheduleOf } from './driver.mjs';
import { createRunRegistry, stopAll } from './processes.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function parseArgs() {
  const argv = process.argv.slice(2);
  const options = { runs: 20, seed: Math.floor(Math.random() * 2 ** 31), engine: 'embedded', mode: 'any', parallel: 1, dir: tmpdir() };
  for (let index = 0; index < argv.length; index += 1) {
    const [name, inline] = argv[index].includes('=') ? argv[index].split(/=(.*)/s) : [argv[index], undefined];
    if (name === '--help' || name === '-h') {
      process.stdout.write('usage: node bench/proof/run.mjs [--runs N] [--seed S] [--engine embedded|temporal|both] [--mode any|single|two_executors|terminations] [--parallel P] [--dir PATH]\n');
      process.exit(0);
    }
    const value = inline ?? argv[++index];
    if (name === '--dir') options.dir = value;
    else if (name === '--engine') {
      if (!['embedded', 'temporal', 'both'].includes(value)) fail('--engine is embedded, temporal or both');
      options.engine = value;
    } else if (name === '--mode') {
      if (value !== 'any' && !MODES.includes(value)) fail(`--mode is any, ${MODES.join(', ')}`);
      options.mode = value;
    } else if (['--runs', '--seed', '--parallel'].includes(name)) {
      if (value === undefined || !/^\d+$/.test(value) || (name !== '--seed' && Number(value) < 1)) fail(`${name} needs a whole number${name === '--seed' ? '' : ' >= 1'}`);
      options[name.slice(2)] = Number(value);
    } else fail(`unknown argument ${JSON.stringify(argv[index])}`);
  }
  if (!existsSync(join(root, 'dist')) || !existsSync(join(root, 'oclif.manifest.json'))) fail('dist or oclif.manifest.json missing: run `npm run build` first.');
  if (options.engine === 'embedded' && !['any', 'single'].includes(options.mode)) fail(`--mode ${options.mode} is a Temporal mode: use --engine temporal or both`);
  return options;
}

/** The runs to make: seeds S, S+1, … (alternating engines with `both`), only those of the mode asked for, until N. */
function plan(options) {
  const runs = [];
  for (let index = 0; runs.length < options.runs; index += 1) {
    if (index >= options.runs * 50) fail(`no ${options.runs} seeds of mode ${options.mode} from seed ${options.seed} within ${index} seeds`);
    const seed = options.seed + index;
    const engine = options.engine === 'both' ? (index % 2 === 0 ? 'embedded' : 'temporal') : options.engine;
    if (options.mode === 'any' || scheduleOf(seed, engine).mode === options.mode) runs.push({ seed, engine });
  }
  return runs;
}

function temporalCli() {
  if (process.env.LEXEC_TEMPORAL_CLI) return process.env.LEXEC_TEMPORAL_CLI;
  const found = spawnSync(join(root, '..', 'shared', 'tools', 'temporal-cli-bin'), { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

/** The stacks and commands the runs have going, so that a signal stops them all. */
const registry = createRunRegistry();

async function main(options, workDir) {
  const cli = options.engine === 'embedded' ? null : temporalCli();
  if (options.engine !== 'embedded' && cli === null) fail('the Temporal engine needs the Temporal CLI (set LEXEC_TEMPORAL_CLI).');
  const runs = plan(options);
  process.stderr.write(`bench/proof: ${options.runs} runs from seed ${options.seed} (${options.engine}, mode ${options.mode}, ${options.parallel} at a time)\n`);
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const { seed, engine } = runs[next++];
      const mode = scheduleOf(seed, engine).mode;
      let result;
      try {
        result = await proofRun({ seed, engine, workDir, temporalCli: cli, registry, keepDir: options.dir });
      } catch (error) {
        result = { seed, engine, mode, error: error instanceof Error ? error.message : String(error), events: [], outcomes: [], kills: {}, faults: 0, terminations: 0, rescheduled: 0, violations: [], keptHome: null };
      }
      results.push(result);
      const killed = Object.entries(result.kills).filter(([, count]) => count > 0).map(([target, count]) => `${target}×${count}`).join(' ') || 'none';
      const status = result.error !== undefined ? `ERROR ${result.error.slice(0, 400)}` : result.violations.length > 0 ? `VIOLATIONS ${JSON.stringify(result.violations)}` : 'ok';
      const kept = result.keptHome === null ? '' : `; stack home kept at ${result.keptHome}`;
      const terminated = mode === 'terminations' ? `, terminated ${result.terminations} (started again ${result.rescheduled})` : '';
      process.stderr.write(
        `run ${results.length}/${options.runs} seed ${seed} ${engine} ${mode}: ${result.outcomes.length} executions, kills ${killed}, faults ${result.faults}${terminated}, events [${describeEvents(result.events)}], ${status}${kept}\n`,
      );
    }
  };
  await Promise.all(Array.from({ length: options.parallel }, worker));
  return results;
}

function report(options, results) {
  const groups = ['embedded', 'temporal'].flatMap((engine) => MODES.map((mode) => ({ engine, mode })));
  const byEngine = groups.map(({ engine, mode }) => {
    const runs = results.filter((result) => result.engine === engine && result.mode === mode);
    const sum = (f) => runs.reduce((total, result) => total + f(result), 0);
    return {
      engine: `${engine} ${mode}`,
      runs: runs.length,
      terminations: `${sum((result) => result.terminations ?? 0)} / ${sum((result) => result.rescheduled ?? 0)}`,
      executions: sum((result) => result.counts?.executions ?? 0),
      outcomes: ['succeeded', 'reconciliation', 'failed'].map((state) => sum((result) => result.outcomes.filter((outcome) => outcome.outcome === state).length)),
      kills: ['executor', 'ledger', 'sandbox', 'temporal'].map((target) => sum((result) => result.kills[target] ?? 0)),
      faults: sum((result) => result.faults),
      violations: sum((result) => result.violations.length),
      gaveUp: sum((result) => result.outcomes.filter((outcome) => outcome.outcome.startsWith('gave_up')).length),
      errors: runs.filter((result) => result.error !== undefined).length,
    };
  }).filter((row) => row.runs > 0);
  const rows = byEngine.map((row) => [row.engine, String(row.runs), String(row.executions), row.outcomes.join(' / '), String(row.gaveUp), row.kills.join(' / '), String(row.faults), row.terminations, String(row.violations), String(row.errors)]);
  const lines = table(['engine mode', 'runs', 'executions', 'succeeded / reconciliation / failed', 'given up', 'kills executor / ledger / sandbox / temporal', 'faults set', 'runs terminated / started again', 'violations', 'runs not made'], rows);
  process.stdout.write(`bench/proof: seeds ${options.seed}..${Math.max(...results.map((result) => result.seed), options.seed)} (mode ${options.mode})\n${lines.join('\n')}\n`);
  const broken = results.filter((result) => result.violations.length > 0);
  for (const result of broken) {
    process.stdout.write(`seed ${result.seed} (${result.engine} ${result.mode}) broke: ${JSON.stringify(result.violations)}${result.keptHome === null ? '' : `; its stack home is kept at ${result.keptHome}`}\n`);
  }
  const gaveUp = results.filter((result) => result.outcomes.some((outcome) => outcome.outcome.startsWith('gave_up')));
  for (const result of gaveUp) process.stdout.write(`seed ${result.seed} (${result.engine}): an agent gave up on an execution${result.keptHome === null ? '' : `; its stack home is kept at ${result.keptHome}`}\n`);
  return broken.length > 0 || gaveUp.length > 0 || results.some((result) => result.error !== undefined) ? 1 : 0;
}

await runBenchmark({ name: 'proof', what: 'the stacks', parseArgs, main, stop: () => stopAll(registry), report });
