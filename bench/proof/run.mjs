// The randomized proof runs (issue 14 item 4; docs/reliability.md "Randomized runs"): many seeds,
// each a fresh sandbox stack with concurrent `lexec run` executions, random SIGKILLs of the
// executor, the ledger, the sandbox provider and (Temporal) the executor's Temporal child, and
// random provider faults, then the independent invariant checker on the stack at rest
// (bench/proof/driver.mjs). Prints the first seed, each run's figures on stderr, and the totals;
// exits 1 if any run broke a money rule, naming its seed (run it again with --seed S --runs 1).
//
//   node bench/proof/run.mjs [--runs N] [--seed S] [--engine embedded|temporal|both]
//                            [--parallel P] [--dir PATH]
//   (from the repository root, after `npm run build`, on Node.js 24)
//
// --runs (default 20) seeds S, S+1, …; --seed (default: random, printed); --engine (default
// embedded; `both` alternates, Temporal needs the CLI: LEXEC_TEMPORAL_CLI or the toolchain cache);
// --parallel (default 1) runs that many seeds at once. A run that broke a rule (or gave up on an
// execution, or could not be made) keeps its stack home under --dir and says where; clean ones
// are removed. SIGINT or SIGTERM stops every stack running (`lexec stack stop`, then SIGKILL to
// whatever is left) and the commands in flight, and exits 130.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, runBenchmark, table } from '../lib/harness.mjs';
import { describeEvents, proofRun } from './driver.mjs';
import { createRunRegistry, stopAll } from './processes.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function parseArgs() {
  const argv = process.argv.slice(2);
  const options = { runs: 20, seed: Math.floor(Math.random() * 2 ** 31), engine: 'embedded', parallel: 1, dir: tmpdir() };
  for (let index = 0; index < argv.length; index += 1) {
    const [name, inline] = argv[index].includes('=') ? argv[index].split(/=(.*)/s) : [argv[index], undefined];
    if (name === '--help' || name === '-h') {
      process.stdout.write('usage: node bench/proof/run.mjs [--runs N] [--seed S] [--engine embedded|temporal|both] [--parallel P] [--dir PATH]\n');
      process.exit(0);
    }
    const value = inline ?? argv[++index];
    if (name === '--dir') options.dir = value;
    else if (name === '--engine') {
      if (!['embedded', 'temporal', 'both'].includes(value)) fail('--engine is embedded, temporal or both');
      options.engine = value;
    } else if (['--runs', '--seed', '--parallel'].includes(name)) {
      if (value === undefined || !/^\d+$/.test(value) || (name !== '--seed' && Number(value) < 1)) fail(`${name} needs a whole number${name === '--seed' ? '' : ' >= 1'}`);
      options[name.slice(2)] = Number(value);
    } else fail(`unknown argument ${JSON.stringify(argv[index])}`);
  }
  if (!existsSync(join(root, 'dist')) || !existsSync(join(root, 'oclif.manifest.json'))) fail('dist or oclif.manifest.json missing: run `npm run build` first.');
  return options;
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
  process.stderr.write(`bench/proof: ${options.runs} runs from seed ${options.seed} (${options.engine}, ${options.parallel} at a time)\n`);
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < options.runs) {
      const index = next++;
      const seed = options.seed + index;
      const engine = options.engine === 'both' ? (index % 2 === 0 ? 'embedded' : 'temporal') : options.engine;
      let result;
      try {
        result = await proofRun({ seed, engine, workDir, temporalCli: cli, registry, keepDir: options.dir });
      } catch (error) {
        result = { seed, engine, error: error instanceof Error ? error.message : String(error), events: [], outcomes: [], kills: {}, faults: 0, violations: [], keptHome: null };
      }
      results.push(result);
      const killed = Object.entries(result.kills).filter(([, count]) => count > 0).map(([target, count]) => `${target}×${count}`).join(' ') || 'none';
      const status = result.error !== undefined ? `ERROR ${result.error.slice(0, 400)}` : result.violations.length > 0 ? `VIOLATIONS ${JSON.stringify(result.violations)}` : 'ok';
      const kept = result.keptHome === null ? '' : `; stack home kept at ${result.keptHome}`;
      process.stderr.write(
        `run ${results.length}/${options.runs} seed ${seed} ${engine}: ${result.outcomes.length} executions, kills ${killed}, faults ${result.faults}, events [${describeEvents(result.events)}], ${status}${kept}\n`,
      );
    }
  };
  await Promise.all(Array.from({ length: options.parallel }, worker));
  return results;
}

function report(options, results) {
  const byEngine = ['embedded', 'temporal'].map((engine) => {
    const runs = results.filter((result) => result.engine === engine);
    const sum = (f) => runs.reduce((total, result) => total + f(result), 0);
    return {
      engine,
      runs: runs.length,
      executions: sum((result) => result.counts?.executions ?? 0),
      outcomes: ['succeeded', 'reconciliation', 'failed'].map((state) => sum((result) => result.outcomes.filter((outcome) => outcome.outcome === state).length)),
      kills: ['executor', 'ledger', 'sandbox', 'temporal'].map((target) => sum((result) => result.kills[target] ?? 0)),
      faults: sum((result) => result.faults),
      violations: sum((result) => result.violations.length),
      gaveUp: sum((result) => result.outcomes.filter((outcome) => outcome.outcome.startsWith('gave_up')).length),
      errors: runs.filter((result) => result.error !== undefined).length,
    };
  }).filter((row) => row.runs > 0);
  const rows = byEngine.map((row) => [row.engine, String(row.runs), String(row.executions), row.outcomes.join(' / '), String(row.gaveUp), row.kills.join(' / '), String(row.faults), String(row.violations), String(row.errors)]);
  const lines = table(['engine', 'runs', 'executions', 'succeeded / reconciliation / failed', 'given up', 'kills executor / ledger / sandbox / temporal', 'faults set', 'violations', 'runs not made'], rows);
  process.stdout.write(`bench/proof: seeds ${options.seed}..${options.seed + options.runs - 1}\n${lines.join('\n')}\n`);
  const broken = results.filter((result) => result.violations.length > 0);
  for (const result of broken) {
    process.stdout.write(`seed ${result.seed} (${result.engine}) broke: ${JSON.stringify(result.violations)}${result.keptHome === null ? '' : `; its stack home is kept at ${result.keptHome}`}\n`);
  }
  const gaveUp = results.filter((result) => result.outcomes.some((outcome) => outcome.outcome.startsWith('gave_up')));
  for (const result of gaveUp) process.stdout.write(`seed ${result.seed} (${result.engine}): an agent gave up on an execution${result.keptHome === null ? '' : `; its stack home is kept at ${result.keptHome}`}\n`);
  return broken.length > 0 || gaveUp.length > 0 || results.some((result) => result.error !== undefined) ? 1 : 0;
}

await runBenchmark({ name: 'proof', what: 'the stacks', parseArgs, main, stop: () => stopAll(registry), report });
