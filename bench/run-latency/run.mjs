// Benchmark: what `lexec run` of one image costs beyond the provider's own work (issue 15 item 4;
// docs/benchmarks.md "Run latency"). Prints figures; asserts nothing about timings and exits 0
// whatever they are (a non-zero exit means the benchmark itself could not run).
//
//   node bench/run-latency/run.mjs [--runs N] [--settings 0,300,2000] [--dir PATH]
//   (from the repository root, after `npm run build`)
//
// For each provider setting (the sandbox completes each job that many ms after its submission):
// a fresh LEXEC_HOME with the shipped sandbox profile on free ports and that `complete_after_ms`,
// `lexec stack start`, one warm-up run, then --runs rounds (default 10) of:
//   1. `lexec version` — wall time from spawn to exit (the CLI's own start, measured in the round);
//   2. `lexec run "<prompt>" --count 1 --out <dir> --json` — wall time from spawn to exit 0.
// overhead = run wall − the provider's completion time − that round's `lexec version` wall: the
// time spent waiting between polls, on the ledger, the engine, storing and settling. Reported:
// median and p90 per setting, and the largest median against the target (0.4 s at every setting).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, runBenchmark, table } from '../lib/harness.mjs';
import { percentile } from '../lib/measure.mjs';
import { sandboxStackHome } from '../lib/sandbox-home.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'run.js');
const TARGET_MS = 400;

function parseArgs() {
  const argv = process.argv.slice(2);
  const options = { runs: 10, settings: [0, 300, 2000], dir: tmpdir() };
  for (let index = 0; index < argv.length; index += 1) {
    const [name, inline] = argv[index].includes('=') ? argv[index].split(/=(.*)/s) : [argv[index], undefined];
    if (name === '--help' || name === '-h') {
      process.stdout.write('usage: node bench/run-latency/run.mjs [--runs N] [--settings 0,300,2000] [--dir PATH]\n');
      process.exit(0);
    }
    const value = inline ?? argv[++index];
    if (name === '--dir') options.dir = value;
    else if (name === '--runs') {
      if (value === undefined || !/^\d+$/.test(value) || Number(value) < 1) fail('--runs needs a whole number >= 1');
      options.runs = Number(value);
    } else if (name === '--settings') {
      if (value === undefined || !/^\d+(,\d+)*$/.test(value)) fail('--settings needs milliseconds separated by commas, e.g. 0,300,2000');
      options.settings = value.split(',').map(Number);
    } else fail(`unknown argument ${JSON.stringify(argv[index])}`);
  }
  if (!existsSync(join(root, 'dist')) || !existsSync(join(root, 'oclif.manifest.json'))) fail('dist or oclif.manifest.json missing: run `npm run build` first.');
  return options;
}

/** Wall milliseconds of one `lexec` command from spawn to exit; fails unless it exits 0. */
function timed(args, env, label) {
  return new Promise((done, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [bin, ...args], { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code === 0) done(ms);
      else reject(new Error(`${label} exited ${code}: ${output.slice(-1500)}`));
    });
  });
}

let current = null;

async function measureSetting(options, workDir, completeAfterMs) {
  const stack = await sandboxStackHome(workDir, `latency-${completeAfterMs}-`);
  const file = join(stack.profileDir, 'profile.toml');
  writeFileSync(file, readFileSync(file, 'utf8').replace(/^complete_after_ms = \d+/m, `complete_after_ms = ${completeAfterMs}`));
  current = stack;
  await timed(['stack', 'start', '--json'], stack.env, 'stack start');
  const out = mkdtempSync(join(stack.home, 'out-'));
  const run = (round) => timed(['run', `latency round ${round}: a lighthouse`, '--count', '1', '--out', join(out, String(round)), '--json'], stack.env, 'lexec run');
  await run('warm-up');
  const overheads = [];
  const walls = [];
  const versions = [];
  for (let round = 0; round < options.runs; round += 1) {
    const version = await timed(['version', '--json'], stack.env, 'lexec version');
    const wall = await run(round);
    versions.push(version);
    walls.push(wall);
    overheads.push(wall - completeAfterMs - version);
    process.stderr.write(`complete_after_ms ${completeAfterMs}, round ${round + 1}/${options.runs}: run ${wall.toFixed(0)} ms, version ${version.toFixed(0)} ms, overhead ${(wall - completeAfterMs - version).toFixed(0)} ms\n`);
  }
  spawnSync(process.execPath, [bin, 'stack', 'stop', '--json'], { env: stack.env, cwd: root, stdio: 'ignore' });
  current = null;
  const sorted = (values) => [...values].sort((a, b) => a - b);
  return {
    completeAfterMs,
    wall: { p50: percentile(sorted(walls), 50), p90: percentile(sorted(walls), 90) },
    version: { p50: percentile(sorted(versions), 50) },
    overhead: { p50: percentile(sorted(overheads), 50), p90: percentile(sorted(overheads), 90) },
  };
}

async function main(options, workDir) {
  const results = [];
  for (const setting of options.settings) results.push(await measureSetting(options, workDir, setting));
  return results;
}

function stop() {
  if (current !== null) spawnSync(process.execPath, [bin, 'stack', 'stop', '--json'], { env: current.env, cwd: root, stdio: 'ignore' });
  current = null;
  return Promise.resolve();
}

function report(options, results) {
  const ms = (value) => value.toFixed(0);
  const rows = results.map((result) => [String(result.completeAfterMs), ms(result.wall.p50), ms(result.wall.p90), ms(result.version.p50), ms(result.overhead.p50), ms(result.overhead.p90)]);
  const lines = table(['provider completes after (ms)', 'run wall p50', 'p90', 'lexec version p50', 'overhead p50', 'overhead p90'], rows);
  const worst = Math.max(...results.map((result) => result.overhead.p50));
  process.stdout.write(`bench/run-latency: ${options.runs} runs per setting (ms)\n${lines.join('\n')}\n`);
  process.stdout.write(`RESULT largest median overhead ${ms(worst)} ms (target <= ${TARGET_MS} ms at every setting: ${worst <= TARGET_MS ? 'met' : 'not met'})\n`);
  return 0;
}

process.on('exit', () => {
  if (current !== null) rmSync(current.home, { recursive: true, force: true });
});

await runBenchmark({ name: 'run-latency', what: 'the stack', parseArgs, main, stop, report });
