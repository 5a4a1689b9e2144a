// Benchmark (issue 29 item 5): how far one ledger goes — authorization cycles from two client hosts
// at once against one `lexec ledger serve` over TLS, side by side with the same two clients on the
// ledger host's own loopback over plain HTTP; the ratio of the two. Prints figures; asserts nothing
// about timings and exits 0 whatever they are (non-zero: the benchmark itself could not run).
//
//   node bench/ledger-hosts/run.mjs [--cycles N] [--warmup N] [--concurrency 1,8] [--dir PATH]
//                                                                     (from the repository root, as root)
//
// The hosts are a lab of Linux network namespaces (test/support/netns-core.ts, the one the
// cross-host proofs use, loaded here with Node's type stripping): host 1 is the ledger host, hosts 2
// and 3 the client hosts, each with its own address on a private /24 behind a bridge in a switch
// namespace; the machine's root namespace gets no interface, address or route. Without root (or
// iproute2's `ip`) it prints one line saying so and exits 0.
//
// Two ledgers run on the ledger host, each a child `node bin/run.js ledger serve` inside its
// namespace with a database of its own (SQLite WAL, synchronous=FULL) in the temporary directory:
//   tls       on the host's lab address, `http.allow_non_loopback` and `http.tls`: a team CA and a
//             server certificate for that address made with the project's own code
//             (bench/ledger-cycles/tls.mjs → dist/launcher/tls/team-ca.js); clients trust that CA.
//   loopback  on the ledger host's 127.0.0.1, plain HTTP (today's all-in-one).
// Both listen on port 0 and log the port they bound.
//
// For each concurrency level C (default 1, then 8) and each mode (tls, then loopback), two cycle
// clients (bench/ledger-hosts/client.mjs, node:http(s) with keep-alive, the cycle of
// bench/ledger-cycles) start at once — for tls one on each client host, reaching the ledger
// through the bridge; for loopback both on the ledger host. Each sets up an agent of its own, runs
// W warm-up cycles (default 50) on C loops, and says ready; then both are told "go" together and
// run N measured cycles (default 500) each on C loops. Reported per mode and level: total
// cycles/s (both clients' cycles / the wall time from "go" until both finished), each client's
// cycles/s, p50/p99 of each step and of the whole cycle over both clients' cycles, and the ledger
// process's CPU per cycle (from /proc over the same window). Then each client reads every one of
// its authorizations back (settled, none left open). Last, the ratio tls ÷ loopback of the total
// cycles/s per level.
//
// Every namespace is one machine's: all of them share its CPUs, so the clients compete with the
// ledger for the same cores in both modes, and the bridge adds no distance. The ratio measures
// what TLS and a real network stack (veth + bridge, not loopback) cost the ledger, not a WAN.
//
// The ledgers are stopped with SIGTERM at the end; the lab is torn down (everything in its
// namespaces killed, the namespaces deleted) at the end, on failure, at exit and on SIGINT/SIGTERM,
// and the temporary directory is removed.
import { spawn } from 'node:child_process';
import { existsSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BIG_CAP, round2, STEPS, summarise } from '../ledger-cycles/cycles.mjs';
import { benchTls } from '../ledger-cycles/tls.mjs';
import { BenchError, fail, parseCount, runBenchmark, table } from '../lib/harness.mjs';
import { followLedger } from '../lib/ledger-child.mjs';
import { filesystemOf, processCpuMs } from '../lib/measure.mjs';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const CLIENT_TIMEOUT_MS = 600_000;
const MODES = ['tls', 'loopback'];

const USAGE = 'usage: node bench/ledger-hosts/run.mjs [--cycles N per client (default 500)] [--warmup N per client (default 50)] [--concurrency LIST per client (default 1,8)] [--dir PATH (default the OS temp dir)]';

function parseArgs(argv) {
  const options = { cycles: 500, warmup: 50, concurrency: [1, 8], dir: tmpdir() };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (name === '--cycles' || name === '--warmup') {
      options[name.slice(2)] = parseCount(name, inline ?? argv[++index], name === '--cycles' ? 1 : 0);
    } else if (name === '--concurrency') {
      const value = inline ?? argv[++index];
      const levels = (value ?? '').split(',');
      if (levels.some((level) => !/^[1-9]\d*$/.test(level) || Number(level) > 64)) fail(`--concurrency needs a comma-separated list of whole numbers 1-64 (got ${JSON.stringify(value ?? null)}).`);
      options.concurrency = levels.map(Number);
    } else if (name === '--dir') {
      const value = inline ?? argv[++index];
      if (value === undefined || value === '') fail('--dir needs a directory.');
      options.dir = resolve(value);
    } else if (name === '--help' || name === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      fail(`unknown argument ${JSON.stringify(arg)}; ${USAGE}`);
    }
  }
  return options;
}

// --- the lab ------------------------------------------------------------------------------------

const netns = await import(pathToFileURL(join(root, 'test', 'support', 'netns-core.ts')).href);
let unavailable;
try {
  unavailable = netns.netnsUnavailable();
} catch (error) {
  unavailable = error.message;
}
if (unavailable !== null) {
  process.stdout.write(`bench/ledger-hosts: skipped — ${unavailable.replace(/^network-namespace tests skipped — they need /, 'it needs ')} for its network-namespace lab.\n`);
  process.exit(0);
}

let lab = null;
const childEnv = () => {
  const env = {};
  for (const name of ['PATH', 'HOME']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
};
/** `ip netns exec <host's namespace> <node> args…` (ip execs the command: the child's pid is node's). */
const spawnIn = (host, args, stdio) => spawn(netns.ipPath(), ['netns', 'exec', host.namespace, process.execPath, ...args], { cwd: root, env: childEnv(), stdio });

// --- the ledgers --------------------------------------------------------------------------------

const ledgers = [];

/** Starts `lexec ledger serve` in `host`'s namespace; resolves once it logs `ledger_started`. */
function startLedger(host, configPath, name) {
  const child = spawnIn(host, ['bin/run.js', 'ledger', 'serve', '--config', configPath], ['ignore', 'ignore', 'pipe']);
  const ledger = Object.assign(followLedger(child, { label: `the ${name} ledger`, timeoutMs: START_TIMEOUT_MS }), { name });
  ledgers.push(ledger);
  return ledger.started.then((port) => ({ ...ledger, port }));
}

async function stopLedgers() {
  const outcomes = {};
  for (const ledger of ledgers) {
    if (ledger.exit === null) ledger.child.kill('SIGTERM');
    let timer;
    const ended = await Promise.race([ledger.exited, new Promise((done) => (timer = setTimeout(() => done(null), STOP_TIMEOUT_MS)))]);
    clearTimeout(timer);
    if (ended === null) {
      ledger.child.kill('SIGKILL');
      await ledger.exited;
    }
    outcomes[ledger.name] = { ...ledger.exit, forced: ended === null };
  }
  return outcomes;
}

async function stop() {
  const outcomes = await stopLedgers();
  lab?.teardown();
  return outcomes;
}

function ledgerConfig(workDir, name, http) {
  const dir = join(workDir, name);
  const config = {
    schema_version: 1,
    http,
    database_path: join(dir, 'ledger.db'),
    admin_capability_path: join(dir, 'credentials', 'admin.capability'),
    contract_level: 'v4.5',
    authorization_ttl_seconds: 3600,
    default_policy: { per_authorization_cap_units: BIG_CAP, daily_cap_units: BIG_CAP, approval_threshold_units: '0', units_scale: 6, currency: 'USD' },
  };
  const path = join(workDir, `${name}.json`);
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  return { path, adminFile: config.admin_capability_path };
}

// --- the clients --------------------------------------------------------------------------------

/** A cycle client in `host`'s namespace; `next(key)` resolves with its next message carrying `key`. */
function startClient(host, args, label) {
  const child = spawnIn(host, ['bench/ledger-hosts/client.mjs', ...args], ['pipe', 'pipe', 'pipe']);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-2000)));
  const messages = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise((done) => child.once('exit', (code, signal) => done({ code, signal })));
  return {
    label,
    async next(key) {
      let timer;
      const gone = exited.then(({ code, signal }) => {
        throw new BenchError(`client ${label} exited (${signal ?? `exit ${code}`}) before answering ${key}: ${stderr.trim()}`);
      });
      const late = new Promise((_, failed) => (timer = setTimeout(() => failed(new BenchError(`client ${label}: no ${key} within ${CLIENT_TIMEOUT_MS / 1000} s`)), CLIENT_TIMEOUT_MS)));
      try {
        const line = await Promise.race([messages.next(), gone, late]);
        if (line.done) return await gone;
        const message = JSON.parse(line.value);
        if (!(key in message)) fail(`client ${label}: expected ${key}, got ${line.value.slice(0, 200)}`);
        return message[key];
      } finally {
        clearTimeout(timer);
      }
    },
    tell(word) {
      child.stdin.write(`${word}\n`);
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Both clients of one mode and level: set-up and warm-up, then one common measured window. */
async function measure(options, mode, concurrency, target) {
  const clients = target.hosts.map((host, offset) =>
    startClient(
      host,
      [
        '--host', target.address, '--port', String(target.port), '--admin-file', target.adminFile,
        ...(target.caFile === null ? [] : ['--ca', target.caFile]),
        '--concurrency', String(concurrency), '--cycles', String(options.cycles), '--warmup', String(options.warmup),
        '--name', `bench-ledger-hosts-${mode}-c${concurrency}-${offset + 1}`,
      ],
      `${mode} c=${concurrency} #${offset + 1} (${host.namespace})`,
    ),
  );
  try {
    await Promise.all(clients.map((client) => client.next('ready')));
    const cpuBefore = processCpuMs(target.pid);
    const start = performance.now();
    for (const client of clients) client.tell('go');
    const done = await Promise.all(clients.map(async (client) => {
      const result = await client.next('done');
      return { ...result, end: performance.now() };
    }));
    const wallMs = Math.max(...done.map((result) => result.end)) - start;
    const cpuAfter = processCpuMs(target.pid);
    for (const client of clients) client.tell('verify');
    const verified = await Promise.all(clients.map((client) => client.next('verified')));
    const total = options.cycles + options.warmup;
    verified.forEach((result, index) => {
      if (result.settled !== total || result.total !== total) fail(`client ${clients[index].label}: ${result.settled}/${result.total} settled, expected ${total}.`);
    });
    const combined = summarise(concurrency, {
      wallMs,
      serverCpuMs: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
      clientCpuMs: done.reduce((sum, result) => sum + result.client_cpu_ms, 0),
      samples: done.flatMap((result) => result.samples),
    });
    return {
      mode,
      ...combined,
      perClient: done.map((result, index) => ({ host: target.hosts[index].namespace, cyclesPerSecond: result.samples.length / (result.wall_ms / 1000) })),
      verified: verified.reduce((sum, result) => sum + result.settled, 0),
    };
  } finally {
    for (const client of clients) client.kill();
  }
}

// --- main ---------------------------------------------------------------------------------------

async function main(options, workDir) {
  const missing = ['dist/credentials/capability.js', 'dist/commands/ledger/serve.js', 'dist/launcher/tls/team-ca.js', 'oclif.manifest.json'].filter((name) => !existsSync(join(root, name)));
  if (missing.length > 0) fail(`${missing.join(' and ')} missing in ${root}; run \`npm run build\` first.`);
  // The lab's own handlers tear it down on a signal and then let the signal end this process: the
  // directory goes first (nothing writes into it once the lab's processes are killed).
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      lab?.teardown();
      rmSync(workDir, { recursive: true, force: true });
    });
  }
  lab = netns.createNetnsLab(3);
  const [ledgerHost, ...clientHosts] = lab.hosts;

  const tls = await benchTls(root, workDir, [ledgerHost.address]);
  const tlsConfig = ledgerConfig(workDir, 'tls', { host: ledgerHost.address, port: 0, allow_non_loopback: true, tls: { certificate_file: tls.certificateFile, key_file: tls.keyFile } });
  const loopbackConfig = ledgerConfig(workDir, 'loopback', { host: '127.0.0.1', port: 0 });
  const [tlsLedger, loopbackLedger] = await Promise.all([startLedger(ledgerHost, tlsConfig.path, 'tls'), startLedger(ledgerHost, loopbackConfig.path, 'loopback')]);
  for (const ledger of [tlsLedger, loopbackLedger]) {
    const exe = readlinkSync(`/proc/${ledger.child.pid}/exe`);
    if (exe !== realpathSync(process.execPath)) fail(`the ${ledger.name} ledger's pid ${ledger.child.pid} runs ${exe}, not node: its CPU could not be read.`);
  }
  const targets = {
    tls: { hosts: clientHosts, address: ledgerHost.address, port: tlsLedger.port, caFile: tls.caFile, adminFile: tlsConfig.adminFile, pid: tlsLedger.child.pid },
    loopback: { hosts: [ledgerHost, ledgerHost], address: '127.0.0.1', port: loopbackLedger.port, caFile: null, adminFile: loopbackConfig.adminFile, pid: loopbackLedger.child.pid },
  };

  const runs = [];
  for (const concurrency of options.concurrency) {
    for (const mode of MODES) runs.push(await measure(options, mode, concurrency, targets[mode]));
  }
  const stopped = await stopLedgers();
  return { lab: { subnet: lab.subnet, ledger: ledgerHost, clients: clientHosts }, runs, stopped, filesystem: filesystemOf(workDir) };
}

function report(options, outcome, workDir) {
  const { runs, stopped } = outcome;
  const cpuList = cpus();
  const facts = { node: process.version, cpus: cpuList.length, cpu_model: cpuList[0]?.model?.trim() ?? null, platform: `${process.platform}-${process.arch}`, filesystem: outcome.filesystem };
  const find = (mode, concurrency) => runs.find((run) => run.mode === mode && run.concurrency === concurrency);
  const ratios = options.concurrency.map((concurrency) => ({ concurrency, ratio: find('tls', concurrency).cyclesPerSecond / find('loopback', concurrency).cyclesPerSecond }));

  const rateRows = runs.map((run) => [
    run.mode,
    String(run.concurrency),
    run.cyclesPerSecond.toFixed(1),
    run.perClient.map((client) => client.cyclesPerSecond.toFixed(1)).join(' + '),
    run.serverCpuPerCycle === null ? '?' : run.serverCpuPerCycle.toFixed(2),
    run.serverBusy === null ? '?' : `${(run.serverBusy * 100).toFixed(0)}%`,
    (run.clientCpuPerCycle).toFixed(2),
  ]);
  const latencyHeader = ['step', ...runs.flatMap((run) => [`${run.mode} c=${run.concurrency} p50`, 'p99'])];
  const latencyRows = [...STEPS, 'cycle'].map((step) => [step, ...runs.flatMap((run) => [run.latency[step].p50.toFixed(2), run.latency[step].p99.toFixed(2)])]);
  const lines = [
    `One ledger, two client hosts: TLS across network namespaces vs plain HTTP on loopback — ${facts.node}, ${facts.cpus} CPUs (${facts.cpu_model ?? 'unknown CPU'}), ${facts.platform}`,
    `lab: ${outcome.lab.subnet}; ledger host ${outcome.lab.ledger.address}, client hosts ${outcome.lab.clients.map((host) => host.address).join(' and ')} (namespaces on one machine: all share its CPUs)`,
    `ledgers: lexec ledger serve in the ledger host's namespace, SQLite WAL + synchronous=FULL on ${facts.filesystem ?? 'unknown filesystem'} (${workDir})`,
    `  tls: https://${outcome.lab.ledger.address} (a bench team CA; clients node:https, keep-alive, trusting it only), clients on the two client hosts`,
    '  loopback: http://127.0.0.1 (clients node:http, keep-alive), both clients on the ledger host',
    `per client and level: ${options.cycles} measured cycles after ${options.warmup} warm-up cycles; both clients measured over one window`,
    '',
    ...table(['mode', 'c/client', 'cycles/s total', 'per client', 'ledger CPU ms/cycle', 'ledger busy', 'client CPU ms/cycle'], rateRows, 1),
    '',
    'latency (ms, over both clients\' cycles):',
    ...table(latencyHeader, latencyRows, 1),
    '',
    ...ratios.map(({ concurrency, ratio }) => `ratio tls ÷ loopback at concurrency ${concurrency} per client: ${ratio.toFixed(2)}`),
    `verified: ${runs.map((run) => `${run.mode} c=${run.concurrency} ${run.verified}`).join(', ')} authorizations settled (each read back by id; none left open)`,
    `ledgers stopped: ${Object.entries(stopped).map(([name, end]) => `${name} ${end.signal ?? `exit ${end.code}`}${end.forced ? ' (SIGKILL)' : ''}`).join(', ')}; lab torn down`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const result = {
    benchmark: 'ledger-hosts',
    ...facts,
    cycles_per_client: options.cycles,
    warmup_per_client: options.warmup,
    runs: runs.map((run) => ({
      mode: run.mode,
      tls: run.mode === 'tls',
      concurrency_per_client: run.concurrency,
      cycles: run.cycles,
      wall_s: round2(run.wallMs / 1000),
      cycles_per_second: round2(run.cyclesPerSecond),
      per_client_cycles_per_second: run.perClient.map((client) => round2(client.cyclesPerSecond)),
      ledger_cpu_ms_per_cycle: run.serverCpuPerCycle === null ? null : round2(run.serverCpuPerCycle),
      ledger_cpu_busy: run.serverBusy === null ? null : round2(run.serverBusy),
      client_cpu_ms_per_cycle: round2(run.clientCpuPerCycle),
      latency_ms: Object.fromEntries(Object.entries(run.latency).map(([step, { p50, p99 }]) => [step, { p50: round2(p50), p99: round2(p99) }])),
      verified_settled: run.verified,
    })),
    ratio_tls_over_loopback: ratios.map(({ concurrency, ratio }) => ({ concurrency_per_client: concurrency, ratio: round2(ratio) })),
    ledger_exit: stopped,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

await runBenchmark({ name: 'ledger-hosts', what: 'the ledgers and the lab', parseArgs: () => parseArgs(process.argv.slice(2)), main, stop, report });
