// Benchmark: the launcher's stack lifecycle on real processes. Prints figures; asserts nothing
// about timings and exits 0 whatever they are (a non-zero exit means the benchmark itself could
// not run: a command failed or a server did not become ready; the message says which).
//
//   node bench/stack-lifecycle/run.mjs [--cycles N] [--boots N] [--status-runs N] [--dir PATH]
//   (from the repository root, after `npm run build`)
//
// Everything runs in one fresh temporary LEXEC_HOME under --dir (default the OS temp dir) with a
// sandbox profile written from profiles.example/sandbox.toml, its three ports replaced by free
// ones. One warm-up `stack start` + `stack stop` first renders and activates the generation and
// creates the state (databases, credentials), so every measured run starts a stack that has run
// before — the common case after the first start.
//
// Part 1, the components' own boot times (each server alone, from spawn to ready, --boots runs
// each, default 5, median reported), started exactly as the supervisor starts them, from the
// active generation's files:
//   ledger    node bin/run.js ledger serve --config <gen>/ledger.json            → GET /health 200
//   executor  node bin/run.js executor serve --config <gen>/executor.json        → GET /readyz 200
//             (with the ledger already running: the executor's readiness includes the ledger proof)
//   sandbox   node bin/run.js provider sandbox serve --port P --complete-after-ms M → TCP connect
// Each is stopped with SIGTERM after it is ready. Their sum is the floor a sequential start pays.
//
// Part 2, `stack start --json` to ready (the command's wall time from spawn to exit 0: supervisor
// spawn, ledger, credential bootstrap, local credentials, executor and sandbox, handoff) and
// `stack stop --json` (wall time; executor and sandbox, then the ledger, each SIGTERM), --cycles
// times (default 5), medians and p90 reported.
//
// Part 3, `stack status --json` on the running stack beside the minimal oclif command of
// bench/cli-startup (a one-command oclif CLI on the same @oclif/core), --status-runs rounds
// (default 30), interleaved, after 3 warm-up rounds; medians and p90.
//
// Targets (information only): start to ready under 3x the sum of the components' boot times;
// status within 1.5x of the minimal oclif command.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/measure.mjs';
import { sandboxStackHome } from '../lib/sandbox-home.mjs';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(dirname(benchDir));
const bin = join(root, 'bin', 'run.js');
const minimalRoot = join(root, 'bench', 'cli-startup', 'minimal-cli');
const START_TARGET = 3;
const STATUS_TARGET = 1.5;

function fail(message) {
  process.stderr.write(`bench/stack-lifecycle: ${message}\n`);
  process.exitCode = 1;
  throw new Error(message);
}

function parseArgs(argv) {
  const options = { cycles: 5, boots: 5, statusRuns: 30, dir: tmpdir() };
  const names = { '--cycles': 'cycles', '--boots': 'boots', '--status-runs': 'statusRuns', '--dir': 'dir' };
  for (let index = 0; index < argv.length; index += 1) {
    const [name, inline] = argv[index].includes('=') ? argv[index].split(/=(.*)/s) : [argv[index], undefined];
    if (name === '--help' || name === '-h') {
      process.stdout.write('usage: node bench/stack-lifecycle/run.mjs [--cycles N] [--boots N] [--status-runs N] [--dir PATH]\n');
      process.exit(0);
    }
    const key = names[name];
    if (key === undefined) fail(`unknown argument ${JSON.stringify(argv[index])}`);
    const value = inline ?? argv[++index];
    if (key === 'dir') options.dir = value;
    else if (value === undefined || !/^\d+$/.test(value) || Number(value) < 1) fail(`${name} needs a whole number >= 1`);
    else options[key] = Number(value);
  }
  return options;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values) => percentile([...values].sort((a, b) => a - b), 50);
const p90 = (values) => percentile([...values].sort((a, b) => a - b), 90);

/** Runs a command to completion; returns wall milliseconds; aborts unless it exited 0. */
function timed(args, env, label) {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 * 1024 * 1024 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) fail(`${label} exited ${result.status ?? result.signal}:\n${result.stdout}\n${result.stderr}`);
  return { ms, stdout: result.stdout.toString() };
}

async function httpReady(url) {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1000) })).status === 200;
  } catch {
    return false;
  }
}

function tcpReady(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Spawns one server, waits until `ready()`, stops it with SIGTERM; returns spawn→ready ms. */
async function bootOnce(label, args, env, ready) {
  const start = process.hrtime.bigint();
  const child = spawn(process.execPath, [bin, ...args], { env, cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let exitedEarly = false;
  void exited.then(() => {
    exitedEarly = true;
  });
  const deadline = Date.now() + 60_000;
  while (!(await ready())) {
    if (exitedEarly) fail(`${label} exited before it was ready:\n${stderr}`);
    if (Date.now() > deadline) fail(`${label} was not ready within 60 s`);
    await sleep(5);
  }
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  return { ms, stop: async () => (child.kill('SIGTERM'), await exited) };
}

async function writeMinimalManifest() {
  const { Plugin } = await import('@oclif/core');
  const plugin = new Plugin({ root: minimalRoot, type: 'core', isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
  await plugin.load();
  writeFileSync(join(minimalRoot, 'oclif.manifest.json'), `${JSON.stringify(plugin.manifest, null, 2)}\n`);
}

// ---------------------------------------------------------------------------------------------

const options = parseArgs(process.argv.slice(2));
if (!existsSync(join(root, 'dist')) || !existsSync(join(root, 'oclif.manifest.json'))) fail('dist or oclif.manifest.json missing: run `npm run build` first.');
await writeMinimalManifest();

const { home, env, profileDir, ports } = await sandboxStackHome(options.dir, 'lexec-bench-stack-');
const { ledger: ledgerPort, executor: executorPort, sandbox: sandboxPort } = ports;

const stopStack = () => spawnSync(process.execPath, [bin, 'stack', 'stop', '--json'], { env, cwd: root, stdio: 'ignore' });
try {
  process.stderr.write('warm-up start/stop (renders, activates, creates state)…\n');
  timed([bin, 'stack', 'start', '--json'], env, 'warm-up stack start');
  timed([bin, 'stack', 'stop', '--json'], env, 'warm-up stack stop');

  const generation = readFileSync(join(profileDir, 'active'), 'utf8').trim();
  const generationDir = join(profileDir, 'generations', generation);
  const manifest = JSON.parse(readFileSync(join(generationDir, 'manifest.json'), 'utf8'));

  process.stderr.write(`part 1: component boot times (${options.boots} each)…\n`);
  const boots = { ledger: [], executor: [], sandbox: [] };
  const ledgerArgs = ['ledger', 'serve', '--config', join(generationDir, 'ledger.json')];
  const ledgerHealthy = () => httpReady(`http://127.0.0.1:${ledgerPort}/health`);
  for (let run = 0; run < options.boots; run += 1) {
    const ledger = await bootOnce('ledger', ledgerArgs, env, ledgerHealthy);
    boots.ledger.push(ledger.ms);
    await ledger.stop();
  }
  const ledger = await bootOnce('ledger', ledgerArgs, env, ledgerHealthy);
  try {
    for (let run = 0; run < options.boots; run += 1) {
      const executor = await bootOnce('executor', ['executor', 'serve', '--config', join(generationDir, 'executor.json')], env, () =>
        httpReady(`http://127.0.0.1:${executorPort}/readyz`),
      );
      boots.executor.push(executor.ms);
      await executor.stop();
    }
  } finally {
    await ledger.stop();
  }
  const sandboxArgs = ['provider', 'sandbox', 'serve', '--port', String(sandboxPort), '--complete-after-ms', String(manifest.components.sandbox.complete_after_ms)];
  for (let run = 0; run < options.boots; run += 1) {
    const sandbox = await bootOnce('sandbox', sandboxArgs, env, () => tcpReady(sandboxPort));
    boots.sandbox.push(sandbox.ms);
    await sandbox.stop();
  }

  process.stderr.write(`part 2: stack start / stop (${options.cycles} cycles)…\n`);
  const starts = [];
  const stops = [];
  for (let cycle = 0; cycle < options.cycles; cycle += 1) {
    const started = timed([bin, 'stack', 'start', '--json'], env, 'stack start');
    if (JSON.parse(started.stdout).result.outcome !== 'started') fail('stack start did not report outcome "started"');
    starts.push(started.ms);
    stops.push(timed([bin, 'stack', 'stop', '--json'], env, 'stack stop').ms);
  }

  process.stderr.write(`part 3: stack status --json vs the minimal oclif command (${options.statusRuns} rounds)…\n`);
  timed([bin, 'stack', 'start', '--json'], env, 'stack start');
  const status = [];
  const minimal = [];
  const statusCase = () => {
    const run = timed([bin, 'stack', 'status', '--json'], env, 'stack status');
    if (JSON.parse(run.stdout).result.state !== 'running') fail('stack status did not report state "running"');
    return run.ms;
  };
  const minimalCase = () => timed([join(minimalRoot, 'bin', 'run.js'), 'hello'], env, 'minimal oclif command').ms;
  for (let round = 0; round < 3; round += 1) {
    statusCase();
    minimalCase();
  }
  for (let round = 0; round < options.statusRuns; round += 1) {
    if (round % 2 === 0) {
      status.push(statusCase());
      minimal.push(minimalCase());
    } else {
      minimal.push(minimalCase());
      status.push(statusCase());
    }
  }
  stopStack();

  const bootSum = median(boots.ledger) + median(boots.executor) + median(boots.sandbox);
  const startRatio = median(starts) / bootSum;
  const statusRatio = median(status) / median(minimal);
  const cpuList = cpus();
  const facts = { node: process.version, cpus: cpuList.length, cpu_model: cpuList[0]?.model?.trim() ?? null, platform: `${process.platform}-${process.arch}` };
  const rows = [
    ['ledger boot (spawn → /health 200)', boots.ledger],
    ['executor boot (spawn → /readyz 200)', boots.executor],
    ['sandbox boot (spawn → port open)', boots.sandbox],
    ['stack start --json (to ready)', starts],
    ['stack stop --json', stops],
    ['stack status --json (running)', status],
    ['minimal oclif command', minimal],
  ].map(([label, values]) => [label, String(values.length), median(values).toFixed(1), p90(values).toFixed(1)]);
  const header = ['case', 'runs', 'median ms', 'p90 ms'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const format = (row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');
  const lines = [
    `Stack lifecycle — ${facts.node}, ${facts.cpus} CPUs (${facts.cpu_model ?? 'unknown CPU'}), ${facts.platform}`,
    '',
    format(header),
    format(widths.map((width) => '-'.repeat(width))),
    ...rows.map(format),
    '',
    `sum of the components' boot medians: ${bootSum.toFixed(1)} ms`,
    `target: start to ready under ${START_TARGET}x that sum: ${startRatio.toFixed(2)}x ${startRatio < START_TARGET ? 'PASS' : 'OVER'} (information only)`,
    `target: status within ${STATUS_TARGET}x of the minimal oclif command: ${statusRatio.toFixed(2)}x ${statusRatio <= STATUS_TARGET ? 'PASS' : 'OVER'} (information only)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const round1 = (value) => Math.round(value * 10) / 10;
  const summary = (values) => ({ runs: values.length, median_ms: round1(median(values)), p90_ms: round1(p90(values)) });
  process.stdout.write(
    `RESULT ${JSON.stringify({
      benchmark: 'stack-lifecycle',
      ...facts,
      boot: { ledger: summary(boots.ledger), executor: summary(boots.executor), sandbox: summary(boots.sandbox), sum_of_medians_ms: round1(bootSum) },
      stack_start: summary(starts),
      stack_stop: summary(stops),
      stack_status: summary(status),
      minimal_oclif: summary(minimal),
      targets: { start_over_boot_sum: Math.round(startRatio * 1000) / 1000, status_over_minimal: Math.round(statusRatio * 1000) / 1000 },
    })}\n`,
  );
} finally {
  stopStack();
  rmSync(home, { recursive: true, force: true });
}
