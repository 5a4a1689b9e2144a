// Benchmark: executor admission (`POST /v2/executions`) against a real `lexec executor serve` and a
// real `lexec ledger serve` on loopback, read against a baseline server built from the same HTTP
// stack and the same SQLite durability. Prints figures; asserts nothing about timings and exits 0
// whatever they are (a non-zero exit means the benchmark itself could not run: a process did not
// start, a request answered with an unexpected status, or the final verification failed).
//
//   node bench/executor-admission/run.mjs [--requests N] [--warmup N] [--rounds R] [--concurrency 1,8]
//                                         [--count-fsyncs N] [--cpu-prof DIR] [--dir PATH]
//                                         (from the repository root)
//
// Three child processes in one fresh temporary directory under --dir (default the OS temp dir),
// each on 127.0.0.1 port 0, each with its own SQLite database in WAL mode with synchronous=FULL
// (every committed transaction is fsynced before the answer), each logging one JSON line per
// request on stderr, which this script reads to the end:
//   ledger    node bin/run.js ledger serve --config <tmp>/ledger.json
//             default policy: approval threshold and caps far above the run, so every
//             authorization is approved by policy at request time;
//   executor  node bin/run.js executor serve --config <tmp>/executor.json
//             the shipped templates/executor.example.json with managed credentials (created by the
//             real `lexec executor credentials bootstrap-managed --ledger-admin-capability …`),
//             development_allowance true; the benchmark waits until /readyz answers 200;
//   baseline  node bench/executor-admission/baseline-server.mjs <tmp>/baseline/baseline.db
//             createJsonServer + openDatabase + pino to stderr, and two routes: POST /insert (one
//             INSERT in its own transaction) and GET /select/:id (one SELECT by primary key).
// All three are stopped with SIGTERM at the end, also when the benchmark fails or is interrupted,
// and the directory is removed.
//
// Set-up (not timed): every authorization the run needs, requested in advance with agent
// credentials (one agent per 1000 authorizations), each answered 201 `approved` by policy.
//
// Measured, per concurrency level (default 1, then 8 independent request loops): each operation
// W warm-up requests (default 200), then N measured requests (default 2000) in R interleaved
// rounds (default 5: every round runs N/R of each operation in turn, so an operation and its
// baseline are measured side by side again and again), in this order:
//   insert baseline  POST /insert                          201
//   new admission    POST /v2/executions, a fresh token    201, execution `scheduled` for that token
//   select baseline  GET  /select/:id (rows inserted so far, round-robin)                 200
//   replay           POST /v2/executions, the identical body of an admitted execution     200, same execution
// Reported per level and operation: requests per second (N / wall time of the measured requests),
// p50/p99 latency (nearest rank), and the CPU time the executor, the ledger, the baseline (from
// /proc) and this client used per request. Then the two ratios at each level, with their targets
// as information only: new admissions/s ÷ insert/s (target ≥ 0.30) and replays/s ÷ select/s
// (target ≥ 0.70), from all rounds together, with the range of the per-round ratios beside them.
//
// With --count-fsyncs N (needs strace and permission to attach), N more requests of each operation
// run at concurrency 1 while `strace -f -c -e trace=fsync,fdatasync` is attached to all three
// servers, and the fsync/fdatasync calls per request of each server are reported. strace slows
// the servers down; these requests are not timed.
//
// With --cpu-prof DIR the three servers run with `node --cpu-prof` and write executor.cpuprofile,
// ledger.cpuprofile and baseline.cpuprofile into DIR when they stop (open them in Chrome DevTools).
// Profiling costs the servers CPU: figures of such a run are not comparable with plain runs.
//
// At the end, with the services still running, the executor's database (opened read-only) must
// hold exactly one execution per admitted token, with the execution id its answer named, in state
// `scheduled`, and nothing else; the ledger's database (read-only) must show every one of these
// authorizations `claimed` by exactly that execution and no authorization left in another
// state; the ledger's admin list of claimed authorizations is read as a cross-check. A last
// context figure, taken after the services stopped, times 4 KiB writes + fdatasync in the same
// directory: what one durable commit pays at least.
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { childEnv, createChildRegistry } from '../lib/children.mjs';
import { BenchError, fail, parseCount, runBenchmark, table } from '../lib/harness.mjs';
import { BIG_CAP, bootstrapManaged, openReadOnly, preCreateAuthorizations } from '../lib/lexec-stack.mjs';
import { clientCpuMs, filesystemOf, fsyncProbe, percentile, processCpuMs } from '../lib/measure.mjs';
import { attachStrace, detachStrace, requireStrace } from '../lib/strace.mjs';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(dirname(benchDir));
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
/** The hold of every authorization: 0.01 USD; one request costs 2 images at 3/1000 USD = 6000 units. */
const HOLD_UNITS = '10000';
const TARGETS = { admission: 0.3, replay: 0.7 };
const OPERATIONS = ['insert', 'admission', 'select', 'replay'];
const LABELS = { insert: 'insert baseline', admission: 'new admission', select: 'select baseline', replay: 'replay' };
const SERVICES = ['executor', 'ledger', 'baseline'];

const USAGE =
  'usage: node bench/executor-admission/run.mjs [--requests N (default 2000)] [--warmup N (default 200)] [--rounds R (default 5)] [--concurrency LIST (default 1,8)] [--count-fsyncs N (default 0: off)] [--cpu-prof DIR (default: off)] [--dir PATH (default the OS temp dir)]';

function parseArgs(argv) {
  const options = { requests: 2000, warmup: 200, rounds: 5, countFsyncs: 0, cpuProf: null, dir: tmpdir(), concurrency: [1, 8] };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (name === '--requests') {
      options.requests = parseCount(name, inline ?? argv[++index], 1);
    } else if (name === '--warmup') {
      options.warmup = parseCount(name, inline ?? argv[++index], 0);
    } else if (name === '--rounds') {
      options.rounds = parseCount(name, inline ?? argv[++index], 1);
    } else if (name === '--count-fsyncs') {
      options.countFsyncs = parseCount(name, inline ?? argv[++index], 0);
    } else if (name === '--concurrency') {
      const value = inline ?? argv[++index];
      const levels = (value ?? '').split(',');
      if (levels.some((level) => !/^[1-9]\d*$/.test(level) || Number(level) > 64)) fail(`--concurrency needs a comma-separated list of whole numbers 1-64 (got ${JSON.stringify(value ?? null)}).`);
      options.concurrency = levels.map(Number);
    } else if (name === '--dir' || name === '--cpu-prof') {
      const value = inline ?? argv[++index];
      if (value === undefined || value === '') fail(`${name} needs a directory.`);
      options[name === '--dir' ? 'dir' : 'cpuProf'] = resolve(value);
    } else if (name === '--help' || name === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      fail(`unknown argument ${JSON.stringify(arg)}; ${USAGE}`);
    }
  }
  if (options.rounds > options.requests) fail(`--rounds (${options.rounds}) cannot exceed --requests (${options.requests}).`);
  return options;
}

// --- child processes ----------------------------------------------------------------------------

const registry = createChildRegistry({ stopTimeoutMs: STOP_TIMEOUT_MS, exitSignal: 'SIGTERM' });
const { children, track, stopChild } = registry;
const STDERR_TAIL_CHARS = 2000;

async function stopAll() {
  closeProviderSink();
  const outcomes = {};
  // The executor first (it calls the ledger), strace before the processes it is attached to.
  const order = ['strace', 'executor', 'baseline', 'ledger'];
  const ranked = [...children].sort((a, b) => order.indexOf(a.name.split(':')[0]) - order.indexOf(b.name.split(':')[0]));
  for (const entry of ranked) {
    const outcome = await stopChild(entry, entry.name.startsWith('strace') ? 'SIGINT' : 'SIGTERM');
    if (!entry.name.startsWith('strace')) outcomes[entry.name] = outcome;
  }
  return outcomes;
}

/**
 * A long-running service: `node <args>` in the repository root, stdout and stderr read to the end
 * (only a tail is kept for error messages). JSON lines are parsed only while someone waits for an
 * event; the servers log one line per request, and parsing them all would cost the client CPU.
 */
function startService(name, args, home, cpuProfDir) {
  const profile = cpuProfDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, `--cpu-prof-name=${name}.cpuprofile`];
  const child = spawn(process.execPath, [...profile, ...args], { cwd: root, env: childEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
  const entry = track(name, child);
  const service = { name, entry, tail: '', scanned: 0, waiters: new Map(), seen: new Map() };
  const scan = () => {
    let newline;
    while (service.waiters.size > 0 && (newline = service.tail.indexOf('\n', service.scanned)) !== -1) {
      const line = service.tail.slice(service.scanned, newline);
      service.scanned = newline + 1;
      try {
        const doc = JSON.parse(line);
        if (typeof doc.event === 'string' && !service.seen.has(doc.event)) {
          service.seen.set(doc.event, doc);
          service.waiters.get(doc.event)?.(doc);
          service.waiters.delete(doc.event);
        }
      } catch {
        // Not a JSON line (e.g. a crash trace): kept in the tail for the error message.
      }
    }
    if (service.waiters.size === 0 && service.tail.length > 2 * STDERR_TAIL_CHARS) {
      service.tail = service.tail.slice(-STDERR_TAIL_CHARS);
      service.scanned = service.tail.length;
    }
  };
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      service.tail += chunk;
      scan();
    });
  }
  service.tailText = () => {
    const text = service.tail.trim();
    return text === '' ? '' : `\n${name} output (last lines):\n${text.length > STDERR_TAIL_CHARS ? text.slice(text.indexOf('\n', text.length - STDERR_TAIL_CHARS) + 1) : text}`;
  };
  /** Resolves with the first log line of `event`; fails if the process exits or the time runs out. */
  service.waitFor = (event) => {
    if (service.seen.has(event)) return Promise.resolve(service.seen.get(event));
    return new Promise((found, refused) => {
      const timer = setTimeout(() => refused(new BenchError(`${name} did not log ${event} within ${START_TIMEOUT_MS / 1000} s.${service.tailText()}`)), START_TIMEOUT_MS);
      service.waiters.set(event, (doc) => {
        clearTimeout(timer);
        found(doc);
      });
      scan();
      void entry.exited.then((exit) => {
        clearTimeout(timer);
        if (!service.seen.has(event)) refused(new BenchError(`${name} exited before it logged ${event} (${exit.error ?? exit.signal ?? `exit ${exit.code}`}).${service.tailText()}`));
      });
    });
  };
  return service;
}

// --- HTTP client --------------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: 16 });

/** One request; `payload` is an already serialised JSON body or undefined. */
function call(port, method, path, token, payload) {
  const headers = { authorization: `Bearer ${token}` };
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(payload);
  }
  return new Promise((done, failed) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        try {
          done({ status: res.statusCode, body: text === '' ? {} : JSON.parse(text) });
        } catch {
          failed(new BenchError(`${method} ${path} answered ${res.statusCode} with a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}`));
        }
      });
      res.on('error', failed);
    });
    req.on('error', failed);
    req.end(payload);
  });
}

/** One call that must answer `expected`; anything else aborts the benchmark with the answer. */
async function expect(service, step, expected, method, path, token, body) {
  let answer;
  try {
    answer = await call(service.port, method, path, token, body === undefined || typeof body === 'string' ? body : JSON.stringify(body));
  } catch (error) {
    if (error instanceof BenchError) throw error;
    const gone = service.entry.exit === null ? '' : ` (${service.name} exited: ${service.entry.exit.signal ?? `exit ${service.entry.exit.code}`})`;
    throw new BenchError(`${step}: ${method} ${path} failed: ${error.message}${gone}${service.tailText()}`);
  }
  if (answer.status !== expected) {
    throw new BenchError(`${step}: ${method} ${path} at the ${service.name} answered ${answer.status}, expected ${expected}: ${JSON.stringify(answer.body).slice(0, 500)}`);
  }
  return answer.body;
}

// --- set-up -------------------------------------------------------------------------------------

/**
 * A provider address that accepts connections and never answers. The executor's engine runs
 * admitted work; pointed here, a submission is never provably untransmitted, so no authorization
 * is released and admission is measured on its own (the engine holds its slots on the sink).
 */
const sinkSockets = new Set();
const providerSink = createServer((socket) => {
  sinkSockets.add(socket);
  socket.on('close', () => sinkSockets.delete(socket));
});
function closeProviderSink() {
  for (const socket of sinkSockets) socket.destroy();
  if (providerSink.listening) providerSink.close();
}

function writeConfigs(workDir, ledgerPort, sinkPort) {
  const executorDir = join(workDir, 'executor');
  const template = JSON.parse(readFileSync(join(root, 'templates', 'executor.example.json'), 'utf8'));
  const config = {
    ...template,
    http: { host: '127.0.0.1', port: 0 },
    ledger: { ...template.ledger, endpoint: `http://127.0.0.1:${ledgerPort}` },
    credentials: { mode: 'managed', state_dir: join(executorDir, 'credentials') },
    storage: {
      database_path: join(executorDir, 'executor.db'),
      artifact_root: join(executorDir, 'artifacts'),
      catalog_path: join(executorDir, 'provider-catalog.json'),
    },
    providers: { mode: 'sandbox', base_url: `http://127.0.0.1:${sinkPort}` },
    development_allowance: true,
  };
  const path = join(workDir, 'executor.json');
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  return { path, config };
}

function ledgerConfig(workDir) {
  const ledgerDir = join(workDir, 'ledger');
  const config = {
    schema_version: 1,
    http: { host: '127.0.0.1', port: 0 },
    database_path: join(ledgerDir, 'ledger.db'),
    admin_capability_path: join(ledgerDir, 'credentials', 'admin.capability'),
    contract_level: 'v4.5',
    authorization_ttl_seconds: 3600,
    default_policy: {
      per_authorization_cap_units: BIG_CAP,
      daily_cap_units: BIG_CAP,
      approval_threshold_units: BIG_CAP,
      units_scale: 6,
      currency: 'USD',
    },
  };
  const path = join(workDir, 'ledger.json');
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  return { path, config };
}

/** A complete, valid execution request for `tokenId` (as test/support/executor.ts builds it). */
function executionRequest(tokenId) {
  return {
    schema_version: 2,
    spend_auth_token_id: tokenId,
    input: { prompt: 'a lighthouse at dusk', image_count: 2, image_size: 'square_hd' },
    input_schema_version: 1,
    target_id: 'lexec:target:v1:flux-schnell',
  };
}

// --- operations ---------------------------------------------------------------------------------

/**
 * The four operations. Each call makes one HTTP request and checks its answer; state (tokens
 * consumed, executions admitted, rows inserted) lives in `state`.
 */
function operations(services, credentials, state) {
  const { executor, baseline } = services;
  const insertBody = JSON.stringify({ payload: 'bench-executor-admission' });
  return {
    async insert() {
      const body = await expect(baseline, 'insert', 201, 'POST', '/insert', credentials.caller, insertBody);
      if (typeof body.row?.id !== 'string') fail(`insert: no row id in ${JSON.stringify(body).slice(0, 300)}`);
      state.rows.push(body.row.id);
    },
    async admission() {
      if (state.nextToken >= state.tokens.length) fail('admission: ran out of pre-created authorizations.');
      const token = state.tokens[state.nextToken++];
      const payload = JSON.stringify(executionRequest(token));
      const body = await expect(executor, 'new admission', 201, 'POST', '/v2/executions', credentials.caller, payload);
      const execution = body.execution;
      if (execution?.state !== 'scheduled' || execution.authorization?.spend_auth_token_id !== token || !/^exe_[0-9a-f]{32}$/.test(execution.execution_id ?? '')) {
        fail(`new admission: expected a scheduled execution for ${token}, got ${JSON.stringify(body).slice(0, 500)}`);
      }
      state.admitted.push({ token, executionId: execution.execution_id, payload });
    },
    async select() {
      if (state.rows.length === 0) fail('select: no rows inserted yet.');
      const id = state.rows[state.nextRow++ % state.rows.length];
      const body = await expect(baseline, 'select', 200, 'GET', `/select/${id}`, credentials.caller);
      if (body.row?.id !== id) fail(`select: expected row ${id}, got ${JSON.stringify(body).slice(0, 300)}`);
    },
    async replay() {
      if (state.admitted.length === 0) fail('replay: nothing admitted yet.');
      const admitted = state.admitted[state.nextReplay++ % state.admitted.length];
      const body = await expect(executor, 'replay', 200, 'POST', '/v2/executions', credentials.caller, admitted.payload);
      if (body.execution?.execution_id !== admitted.executionId || body.execution.state === 'failed') {
        fail(`replay: expected execution ${admitted.executionId}, not failed, got ${JSON.stringify(body).slice(0, 500)}`);
      }
    },
  };
}

/** Runs `count` requests of `operation` on `concurrency` loops; returns wall ms, CPU ms per process and latencies. */
async function runRequests(services, operation, concurrency, count) {
  const latencies = [];
  let next = 0;
  const loop = async () => {
    while (next < count) {
      next += 1;
      const start = performance.now();
      await operation();
      latencies.push(performance.now() - start);
    }
  };
  const cpuOf = () => Object.fromEntries(SERVICES.map((name) => [name, processCpuMs(services[name].entry.child.pid)]));
  const serverBefore = cpuOf();
  const clientBefore = clientCpuMs();
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, loop));
  const wallMs = performance.now() - start;
  const serverAfter = cpuOf();
  const cpu = Object.fromEntries(
    SERVICES.map((name) => [name, serverBefore[name] === null || serverAfter[name] === null ? null : serverAfter[name] - serverBefore[name]]),
  );
  cpu.client = clientCpuMs() - clientBefore;
  return { wallMs, cpu, latencies };
}

// --- fsync counting (optional) ------------------------------------------------------------------

async function countFsyncs(workDir, services, ops, count) {
  requireStrace();
  const counts = {};
  for (const operation of OPERATIONS) {
    const tracers = {};
    for (const name of SERVICES) tracers[name] = await attachStrace({ workDir, service: services[name], label: operation, registry });
    for (let index = 0; index < count; index += 1) await ops[operation]();
    counts[operation] = {};
    for (const name of SERVICES) {
      const total = await detachStrace(tracers[name]);
      counts[operation][name] = { calls: total.calls, per_request: total.calls / count };
    }
  }
  return { requests: count, counts };
}

// --- verification -------------------------------------------------------------------------------

async function verify(services, paths, adminToken, state) {
  const expected = new Map(state.admitted.map((admitted) => [admitted.token, admitted.executionId]));
  if (expected.size !== state.admitted.length) fail(`verify: ${state.admitted.length} admissions named only ${expected.size} distinct tokens.`);
  if (state.nextToken !== state.tokens.length) fail(`verify: ${state.tokens.length - state.nextToken} pre-created authorizations were not used.`);

  const executorDb = openReadOnly(paths.executorDb);
  try {
    const rows = executorDb.prepare('SELECT execution_id, spend_auth_token_id, state FROM executions').all();
    const perToken = new Map();
    for (const row of rows) perToken.set(row.spend_auth_token_id, [...(perToken.get(row.spend_auth_token_id) ?? []), row]);
    if (rows.length !== expected.size) fail(`verify: the executor database holds ${rows.length} executions, expected ${expected.size}.`);
    for (const [token, executionId] of expected) {
      const found = perToken.get(token) ?? [];
      if (found.length !== 1 || found[0].execution_id !== executionId || found[0].state === 'failed') {
        fail(`verify: token ${token} has ${found.length} executions in the executor database (${JSON.stringify(found.map((row) => [row.execution_id, row.state]))}); expected exactly ${executionId}, not failed.`);
      }
    }
    const fingerprints = executorDb.prepare('SELECT COUNT(*) AS n FROM admission_fingerprints').get().n;
    if (Number(fingerprints) !== expected.size) fail(`verify: the executor database holds ${fingerprints} admission fingerprints, expected ${expected.size}.`);
  } finally {
    executorDb.close();
  }

  const ledgerDb = openReadOnly(paths.ledgerDb);
  let claimed = 0;
  try {
    // The ledger is fresh: every authorization it holds was requested by this benchmark.
    const rows = ledgerDb.prepare('SELECT token_id, status, execution_id FROM authorizations').all();
    if (rows.length !== state.tokens.length) fail(`verify: the ledger holds ${rows.length} authorizations, expected ${state.tokens.length}.`);
    for (const row of rows) {
      const executionId = expected.get(row.token_id);
      if (row.status !== 'claimed' || executionId === undefined || row.execution_id !== executionId) {
        fail(`verify: authorization ${row.token_id} is ${row.status} by ${JSON.stringify(row.execution_id)} at the ledger; expected claimed by ${JSON.stringify(executionId ?? null)}.`);
      }
      claimed += 1;
    }
  } finally {
    ledgerDb.close();
  }

  // Cross-check through the ledger's admin API (the list pages at 500).
  const listed = await expect(services.ledger, 'verify', 200, 'GET', '/authorizations?status=claimed&limit=500', adminToken);
  if (listed.authorizations.length !== Math.min(500, expected.size)) fail(`verify: the ledger lists ${listed.authorizations.length} claimed authorizations, expected ${Math.min(500, expected.size)}.`);
  for (const authorization of listed.authorizations) {
    if (expected.get(authorization.token_id) !== authorization.execution_id) fail(`verify: the ledger lists ${authorization.token_id} claimed by ${authorization.execution_id}, not by the execution the executor admitted.`);
  }
  const approved = await expect(services.ledger, 'verify', 200, 'GET', '/authorizations?status=approved&limit=500', adminToken);
  if (approved.authorizations.length !== 0) fail(`verify: ${approved.authorizations.length} authorizations are still approved (unclaimed) at the ledger.`);
  return { executions: expected.size, claimed };
}

// --- figures ------------------------------------------------------------------------------------


const round2 = (value) => Math.round(value * 100) / 100;
const round3 = (value) => Math.round(value * 1000) / 1000;

/** One run from several: wall times and CPU times added, latencies pooled. */
function mergeRuns(runs) {
  const cpu = {};
  for (const name of Object.keys(runs[0].cpu)) cpu[name] = runs.some((run) => run.cpu[name] === null) ? null : runs.reduce((sum, run) => sum + run.cpu[name], 0);
  return { wallMs: runs.reduce((sum, run) => sum + run.wallMs, 0), cpu, latencies: runs.flatMap((run) => run.latencies) };
}

function summarise(run) {
  const sorted = [...run.latencies].sort((a, b) => a - b);
  const requests = sorted.length;
  const cpuPerRequest = Object.fromEntries(Object.entries(run.cpu).map(([name, ms]) => [name, ms === null ? null : ms / requests]));
  return { requests, wallMs: run.wallMs, perSecond: requests / (run.wallMs / 1000), p50: percentile(sorted, 50), p99: percentile(sorted, 99), cpuPerRequest };
}




function ratiosOf(levels) {
  const range = (values) => ({ min: Math.min(...values), max: Math.max(...values) });
  return levels.map((level) => {
    const admission = level.ops.admission.perSecond / level.ops.insert.perSecond;
    const replay = level.ops.replay.perSecond / level.ops.select.perSecond;
    return {
      concurrency: level.concurrency,
      admission,
      replay,
      admissionRounds: range(level.rounds.map((round) => round.admission)),
      replayRounds: range(level.rounds.map((round) => round.replay)),
    };
  });
}

const verdict = (value, target) => (value >= target ? 'PASS' : 'BELOW');

function report(options, outcome, workDir) {
  const { levels, verification, probe, stopped, filesystem, fsyncs, setUp } = outcome;
  const cpuList = cpus();
  const facts = {
    node: process.version,
    cpus: cpuList.length,
    cpu_model: cpuList[0]?.model?.trim() ?? null,
    platform: `${process.platform}-${process.arch}`,
    filesystem,
    client: 'node:http keep-alive Agent',
    requests: options.requests,
    warmup: options.warmup,
    rounds: options.rounds,
  };
  const ms = (value) => (value === null ? '?' : value.toFixed(2));
  const roundRange = (range) => `${range.min.toFixed(2)}–${range.max.toFixed(2)}`;
  const rows = levels.flatMap((level) =>
    OPERATIONS.map((operation) => {
      const op = level.ops[operation];
      return [
        LABELS[operation],
        String(level.concurrency),
        op.perSecond.toFixed(1),
        op.p50.toFixed(2),
        op.p99.toFixed(2),
        ms(op.cpuPerRequest.executor),
        ms(op.cpuPerRequest.ledger),
        ms(op.cpuPerRequest.baseline),
        ms(op.cpuPerRequest.client),
      ];
    }),
  );
  const ratios = ratiosOf(levels);
  const ratioRows = ratios.flatMap((ratio) => [
    [String(ratio.concurrency), 'new admissions/s ÷ insert/s', ratio.admission.toFixed(2), roundRange(ratio.admissionRounds), `>= ${TARGETS.admission.toFixed(2)}`, verdict(ratio.admission, TARGETS.admission)],
    [String(ratio.concurrency), 'replays/s ÷ select/s', ratio.replay.toFixed(2), roundRange(ratio.replayRounds), `>= ${TARGETS.replay.toFixed(2)}`, verdict(ratio.replay, TARGETS.replay)],
  ]);
  const stoppedText = Object.entries(stopped)
    .map(([name, how]) => `${name} ${how === null ? 'never started' : `${how.signal ?? `exit ${how.code}`}${how.forced ? ' (SIGKILL after SIGTERM timed out)' : ''}`}`)
    .join(', ');
  const lines = [
    `Executor admission on loopback — ${facts.node}, ${facts.cpus} CPUs (${facts.cpu_model ?? 'unknown CPU'}), ${facts.platform}`,
    `servers: lexec executor serve + lexec ledger serve + baseline (createJsonServer + openDatabase), child processes; SQLite WAL + synchronous=FULL on ${facts.filesystem ?? 'unknown filesystem'} (${workDir})`,
    `client: ${facts.client}; ${facts.requests} measured requests per operation and level after ${facts.warmup} warm-up requests, in ${facts.rounds} interleaved rounds`,
    `set-up (not timed): ${setUp.authorizations} authorizations approved by policy for ${setUp.agents} agent(s) in ${setUp.seconds.toFixed(1)} s`,
    ...(options.cpuProf === null ? [] : [`profiled: node --cpu-prof, profiles in ${options.cpuProf} (figures not comparable with unprofiled runs)`]),
    '',
    ...table(['operation', 'c', 'req/s', 'p50 ms', 'p99 ms', 'executor CPU ms/req', 'ledger CPU ms/req', 'baseline CPU ms/req', 'client CPU ms/req'], rows),
    '',
    'ratios (information only; the benchmark never fails on a timing):',
    ...table(['c', 'ratio', 'value', `per round (${options.rounds})`, 'target', 'reading'], ratioRows, 2),
  ];
  if (fsyncs !== null) {
    lines.push('', `fsync + fdatasync calls per request (strace -f -c, ${fsyncs.requests} requests of each operation at concurrency 1, not timed):`);
    lines.push(
      ...table(
        ['operation', ...SERVICES],
        OPERATIONS.map((operation) => [LABELS[operation], ...SERVICES.map((name) => fsyncs.counts[operation][name].per_request.toFixed(2))]),
      ),
    );
  }
  lines.push(
    '',
    `verified: ${verification.executions} executions in the executor database, one per admitted token, none failed; ${verification.claimed} authorizations claimed by exactly those executions at the ledger`,
    `fsync floor: ${probe.writes} x (4 KiB write + fdatasync) in the same directory: p50 ${probe.p50.toFixed(2)} ms, p99 ${probe.p99.toFixed(2)} ms`,
    `stopped: ${stoppedText}`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);

  const result = {
    benchmark: 'executor-admission',
    ...facts,
    levels: levels.map((level) => ({
      concurrency: level.concurrency,
      operations: Object.fromEntries(
        OPERATIONS.map((operation) => {
          const op = level.ops[operation];
          return [
            operation,
            {
              requests: op.requests,
              wall_s: round2(op.wallMs / 1000),
              per_second: round2(op.perSecond),
              latency_ms: { p50: round2(op.p50), p99: round2(op.p99) },
              cpu_ms_per_request: Object.fromEntries(Object.entries(op.cpuPerRequest).map(([name, value]) => [name, value === null ? null : round3(value)])),
            },
          ];
        }),
      ),
    })),
    ratios: ratios.map((ratio) => ({
      concurrency: ratio.concurrency,
      admission_over_insert: round3(ratio.admission),
      admission_target: TARGETS.admission,
      admission_met: ratio.admission >= TARGETS.admission,
      admission_rounds: { min: round3(ratio.admissionRounds.min), max: round3(ratio.admissionRounds.max) },
      replay_over_select: round3(ratio.replay),
      replay_target: TARGETS.replay,
      replay_met: ratio.replay >= TARGETS.replay,
      replay_rounds: { min: round3(ratio.replayRounds.min), max: round3(ratio.replayRounds.max) },
    })),
    fsyncs_per_request: fsyncs === null ? null : { requests: fsyncs.requests, ...Object.fromEntries(OPERATIONS.map((operation) => [operation, Object.fromEntries(SERVICES.map((name) => [name, fsyncs.counts[operation][name].per_request]))])) },
    set_up: { authorizations: setUp.authorizations, agents: setUp.agents, seconds: round2(setUp.seconds) },
    verified_executions: verification.executions,
    verified_claimed: verification.claimed,
    fsync_probe_ms: { writes: probe.writes, p50: round2(probe.p50), p99: round2(probe.p99) },
    exits: Object.fromEntries(Object.entries(stopped).map(([name, how]) => [name, how === null ? null : { code: how.code, signal: how.signal, forced: how.forced }])),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

// --- main ---------------------------------------------------------------------------------------

async function main(options, workDir) {
  const needed = ['dist/credentials/capability.js', 'dist/commands/ledger/serve.js', 'dist/commands/executor/serve.js', 'dist/http/json-server.js', 'dist/storage/open-database.js', 'oclif.manifest.json'];
  const missing = needed.filter((name) => !existsSync(join(root, name)));
  if (missing.length > 0) fail(`${missing.join(' and ')} missing in ${root}; run \`npm run build\` first.`);
  if (options.cpuProf !== null) mkdirSync(options.cpuProf, { recursive: true });
  const capability = await import(pathToFileURL(join(root, 'dist', 'credentials', 'capability.js')).href);

  // The ledger.
  const ledgerFiles = ledgerConfig(workDir);
  const ledger = startService('ledger', ['bin/run.js', 'ledger', 'serve', '--config', ledgerFiles.path], workDir, options.cpuProf);
  ledger.port = (await ledger.waitFor('ledger_started')).port;
  const adminToken = readFileSync(ledgerFiles.config.admin_capability_path, 'utf8').trim();

  // The executor, with managed credentials bootstrapped for real.
  await new Promise((listening) => providerSink.listen(0, '127.0.0.1', listening));
  const executorFiles = writeConfigs(workDir, ledger.port, providerSink.address().port);
  bootstrapManaged(workDir, executorFiles.path, ledgerFiles.config.admin_capability_path);
  const caller = readFileSync(join(executorFiles.config.credentials.state_dir, 'caller.capability'), 'utf8').trim();
  const executor = startService('executor', ['bin/run.js', 'executor', 'serve', '--config', executorFiles.path, '--json'], workDir, options.cpuProf);
  executor.port = (await executor.waitFor('executor_started')).port;
  await executor.waitFor('executor_ready');
  const ready = await call(executor.port, 'GET', '/readyz', caller);
  if (ready.status !== 200) fail(`the executor logged executor_ready but /readyz answered ${ready.status}: ${JSON.stringify(ready.body)}`);

  // The baseline.
  const baselineDir = join(workDir, 'baseline');
  mkdirSync(baselineDir, { mode: 0o700 });
  const baseline = startService('baseline', [join(benchDir, 'baseline-server.mjs'), join(baselineDir, 'baseline.db')], workDir, options.cpuProf);
  baseline.port = (await baseline.waitFor('baseline_started')).port;

  const services = { executor, ledger, baseline };
  const perLevel = options.warmup + options.requests;
  const setUpStart = performance.now();
  const created = await preCreateAuthorizations({
    request: (step, status, method, path, token, body) => expect(ledger, step, status, method, path, token, body),
    adminToken,
    capability,
    name: 'bench-executor-admission',
    count: perLevel * options.concurrency.length + options.countFsyncs,
    holdUnits: HOLD_UNITS,
  });
  const setUp = { authorizations: created.tokens.length, agents: created.agents, seconds: (performance.now() - setUpStart) / 1000 };
  const state = { tokens: created.tokens, nextToken: 0, admitted: [], rows: [], nextRow: 0, nextReplay: 0 };
  const ops = operations(services, { caller }, state);

  const levels = [];
  for (const concurrency of options.concurrency) {
    const level = { concurrency, ops: {}, rounds: [] };
    for (const operation of OPERATIONS) {
      if (options.warmup > 0) await runRequests(services, ops[operation], concurrency, options.warmup);
    }
    // Interleaved rounds: each operation runs next to its baseline again and again, so a slow
    // stretch of the machine weighs on both sides of a ratio instead of on one of them.
    const runs = Object.fromEntries(OPERATIONS.map((operation) => [operation, []]));
    for (let round = 0; round < options.rounds; round += 1) {
      const share = Math.floor(options.requests / options.rounds) + (round < options.requests % options.rounds ? 1 : 0);
      const measured = {};
      for (const operation of OPERATIONS) {
        measured[operation] = await runRequests(services, ops[operation], concurrency, share);
        runs[operation].push(measured[operation]);
      }
      const rate = (run) => run.latencies.length / run.wallMs;
      level.rounds.push({ admission: rate(measured.admission) / rate(measured.insert), replay: rate(measured.replay) / rate(measured.select) });
    }
    for (const operation of OPERATIONS) level.ops[operation] = summarise(mergeRuns(runs[operation]));
    levels.push(level);
  }
  const fsyncs = options.countFsyncs > 0 ? await countFsyncs(workDir, services, ops, options.countFsyncs) : null;

  const verification = await verify(services, { executorDb: executorFiles.config.storage.database_path, ledgerDb: ledgerFiles.config.database_path }, adminToken, state);
  agent.destroy();
  const stopped = await stopAll();
  for (const [name, how] of Object.entries(stopped)) {
    if (how !== null && (how.forced || how.code !== 0)) fail(`${name} did not stop cleanly on SIGTERM (${how.signal ?? `exit ${how.code}`}${how.forced ? ', killed' : ''}).${services[name]?.tailText() ?? ''}`);
  }
  const probe = fsyncProbe(workDir);
  return { levels, verification, probe, stopped, filesystem: filesystemOf(workDir), fsyncs, setUp };
}

await runBenchmark({
  name: 'executor-admission',
  parseArgs: () => parseArgs(process.argv.slice(2)),
  main,
  stop: async () => {
    agent.destroy();
    await stopAll();
  },
  report,
});
