// Benchmark: durable execution end to end against a real `lexec ledger serve`, a real
// `lexec provider sandbox serve --complete-after-ms 0` (a zero-latency provider) and a real
// `lexec executor serve` on a workflow engine — embedded, or managed_local (a Temporal dev server the
// executor starts itself from the pinned CLI) — all on loopback. Prints figures;
// asserts nothing about timings and exits 0 whatever they are. A non-zero exit means the benchmark
// itself could not run (a process did not start, a request answered with an unexpected status, an
// execution did not become terminal in time) or the final verification found a correctness problem
// (a duplicate submission, an execution not terminal, an authorization not settled exactly once);
// the message then says which.
//
//   node bench/durable-execution/run.mjs [--engine embedded|managed_local|embedded,managed_local]
//                                        [--temporal-cli PATH] [--latency N] [--warmup N] [--sustained M] [--concurrency C]
//                                        [--recovery R] [--detect log|poll] [--poll-ms MS]
//                                        [--count-fsyncs N] [--cpu-prof DIR] [--dir PATH]
//                                        (from the repository root)
//
// Processes, in one fresh temporary directory under --dir (default the OS temp dir), each on
// 127.0.0.1 port 0, each logging JSON lines on stderr, which this script reads to the end:
//   ledger    node bin/run.js ledger serve --config <tmp>/ledger.json (SQLite, WAL, synchronous=FULL)
//   sandbox   node bin/run.js provider sandbox serve --port 0 --complete-after-ms 0
//   executor  node bin/run.js executor serve --config <tmp>/executor.json --json: the shipped
//             templates/executor.example.json with providers {mode: sandbox, base_url: <sandbox
//             origin>, operation_deadline_seconds: 3600}, managed credentials created by the real
//             `lexec executor credentials bootstrap-managed --ledger-admin-capability …`, and
//             development_allowance true. It is SIGKILLed once (part 3) and started again on the
//             same database.
// All are stopped with SIGTERM at the end (each must exit 0), also when the benchmark fails or is
// interrupted, and the directory is removed.
//
// Engines (--engine): with two engines the script runs itself once per engine, each on fresh state
// (its own directory and processes), prints each run's report, then a side-by-side table and one
// `RESULT` with both runs and the targets: the Temporal p50 within 2x of embedded, at least 50
// executions/s sustained, recovery ending with all executions terminal, zero duplicate
// submissions. Default: both when a Temporal CLI is given (--temporal-cli, or LEXEC_TEMPORAL_CLI,
// e.g. "$(../shared/tools/temporal-cli-bin)"), embedded alone otherwise. managed_local adds to the
// executor's configuration `workflow_engine: {mode: managed_local, temporal_cli: {path, version
// 1.5.1}, data_dir and log_dir under the run's directory, port and ui_port free on 127.0.0.1}`; its
// SIGKILL in part 3 leaves the Temporal server behind, which the restarted executor stops and
// replaces (the benchmark kills a recorded one left at its end). The embedded-only checks (the
// `workflow_runs` rows) are skipped for Temporal, whose runs live in Temporal.
//
// Every execution asks for 1 image, preset `square` (512 x 512; every preset of the template costs
// 3/1000 USD per image), with a prompt unique to the execution. Set-up (timed, reported apart):
// every authorization the run needs, requested in advance with agent credentials, 8 at a time (one
// agent per 1000 authorizations, each agent's policy PUT with the admin capability: approval
// threshold and caps far above the run, so every authorization is approved by policy at once).
//
// Completion is detected from the executor's own log: the runner logs `execution_succeeded` (or
// `execution_failed`, `execution_reconciliation`) right after it committed the final state, and
// this script reads the executor's stderr anyway. That costs the executor nothing, unlike polling
// GET /v1/executions/{id}, which competes with the engine for the executor's single thread.
// `--detect poll` measures part 1 by polling GET /v1/executions/{id} every --poll-ms (default 5) ms
// instead, for comparison. Every execution's final state is read back from the database at the end.
//
// Part 1, admission to terminal (concurrency 1): W warm-up executions (default 20), then N (default
// 300), one at a time: the time from sending POST /v2/executions to the execution being
// `succeeded`, p50/p99 (nearest rank), split into the admission answer, answer -> checkpointed
// (the runner's `provider_operation_checkpointed` log line: engine pick-up and the submission) and
// checkpointed -> succeeded (poll, result, image, artifact, receipt, settlement).
//
// Part 2, sustained: M executions (default 1000) submitted by C (default 8) loops as fast as
// admission answers; executions/s = M / (first POST -> last execution succeeded).
//
// Part 3, restart recovery with R (default 10000) non-terminal executions. How the rows are made:
//   a. the sandbox answers every status poll 503 (fault `http_error`, route status): the engine
//      submits and checkpoints whatever it reaches, and its polls fail and are re-queued 500 ms
//      later, so nothing can finish; R executions are admitted through POST /v2/executions at
//      concurrency C meanwhile (timed, reported as set-up);
//   b. the fault is replaced by a 600 s `latency` on status: the engine's 4 worker slots hang on
//      status polls of checkpointed operations, so no submission is under way; once the sandbox's
//      submission count, the runner's checkpoint count and the database's attempt count agree and
//      stay still for 500 ms (at most 25 s), the executor is SIGKILLed;
//   c. the rows left behind are counted from the database (state, phase, run status, attempt
//      state), the sandbox's faults are cleared, and the executor is started again.
// Measured: spawn -> `executor_started` (listening), spawn -> GET /readyz 200 (polled every 5 ms
// once the port is known; the first executor's fresh start is measured the same way for
// comparison), and spawn -> all R executions terminal.
//
// Verification (with the services running, then again after they stopped where noted), every
// execution of the run (warm-up included) counted:
//   - the sandbox's submission log (GET /__sandbox/submissions) holds exactly one accepted
//     submission per execution: as many records as executions, every request id distinct, and the
//     set of request ids equal to the set of request ids the executor checkpointed, one attempt per
//     execution. The log never records prompts, so each submission's prompt is read back from the
//     sandbox's result (GET /{model}/requests/{id}, which echoes it): every prompt must belong to
//     exactly one execution, whose attempt names that request id;
//   - the executor's database: every execution terminal; a succeeded one has one attempt
//     (`completed`, 1 image delivered), one stored artifact, a receipt of exactly 3000 micro-units
//     carrying the ledger's settlement id; its workflow run `completed`;
//   - the ledger's database: every authorization `settled` by that execution, exactly one
//     settlement row for it (receipt rcpt_<execution>, 3000 micro-units), no release, no
//     reconciliation record; and the settle calls the ledger answered (from its request log).
// An execution whose attempt was still `submitting` at the SIGKILL would correctly end in
// `reconciliation` (submission_unconfirmed) with an open record and no settlement; such executions
// are counted and reported, not treated as failures. Anything else fails the run.
//
// With --count-fsyncs N (needs strace and permission to attach), N more executions run one at a
// time after part 3 (not timed, verified with the others) while `strace -f -c -e
// trace=fsync,fdatasync` is attached to the executor, the ledger and the sandbox, and the fsync and
// fdatasync calls per execution of each process are reported.
//
// With --cpu-prof DIR the ledger, the sandbox and the restarted executor run under
// `node --cpu-prof` and write ledger.cpuprofile, sandbox.cpuprofile and executor-2.cpuprofile into
// DIR when they stop (the SIGKILLed first executor writes none). Figures of such a run are not
// comparable with plain runs.
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { childEnv, createChildRegistry } from '../lib/children.mjs';
import { BenchError, fail, parseCount, runBenchmark, table } from '../lib/harness.mjs';
import { BIG_CAP, bootstrapManaged, openReadOnly, preCreateAuthorizations } from '../lib/lexec-stack.mjs';
import { clientCpuMs, filesystemOf, percentile, processCpuMs } from '../lib/measure.mjs';
import { attachStrace, detachStrace, requireStrace } from '../lib/strace.mjs';
import { ENGINES, engineSection, killRecordedTemporal, runPerEngine, temporalCliPath } from './engines.mjs';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(dirname(benchDir));
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;
/** No execution became terminal for this long: the benchmark gives up (and says where things stand). */
const STALL_TIMEOUT_MS = 120_000;
const QUIET_TIMEOUT_MS = 25_000;
/** The hold of every authorization: 0.01 USD; one execution costs 1 image at 3/1000 USD = 3000 units. */
const HOLD_UNITS = '10000';
const COST_UNITS = 3000n;
const MODEL = 'fal-ai/flux/schnell';
const TARGET_ID = 'lexec:target:v1:flux-schnell';
const IMAGE_SIZE = 'square';
const DEADLINE_SECONDS = 3600;
const TERMINAL_EVENTS = { execution_succeeded: 'succeeded', execution_failed: 'failed', execution_reconciliation: 'reconciliation' };

const USAGE =
  'usage: node bench/durable-execution/run.mjs [--engine embedded|managed_local|embedded,managed_local (default: both when a Temporal CLI is given, else embedded)] [--temporal-cli PATH (default LEXEC_TEMPORAL_CLI)] [--latency N (default 300)] [--warmup N (default 20)] [--sustained M (default 1000)] [--concurrency C (default 8)] [--recovery R (default 10000)] [--detect log|poll (default log)] [--poll-ms MS (default 5)] [--count-fsyncs N (default 0: off)] [--cpu-prof DIR (default: off)] [--dir PATH (default the OS temp dir)]';

function parseArgs(argv) {
  const options = { engines: null, temporalCli: null, latency: 300, warmup: 20, sustained: 1000, concurrency: 8, recovery: 10_000, detect: 'log', pollMs: 5, countFsyncs: 0, cpuProf: null, dir: tmpdir() };
  const counts = { '--latency': ['latency', 1], '--warmup': ['warmup', 0], '--sustained': ['sustained', 1], '--concurrency': ['concurrency', 1], '--recovery': ['recovery', 1], '--poll-ms': ['pollMs', 1], '--count-fsyncs': ['countFsyncs', 0] };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (name in counts) {
      const [key, minimum] = counts[name];
      options[key] = parseCount(name, inline ?? argv[++index], minimum);
    } else if (name === '--detect') {
      const value = inline ?? argv[++index];
      if (value !== 'log' && value !== 'poll') fail(`--detect needs log or poll (got ${JSON.stringify(value ?? null)}).`);
      options.detect = value;
    } else if (name === '--engine') {
      const value = inline ?? argv[++index] ?? '';
      const engines = value.split(',');
      if (engines.some((engine) => !ENGINES.includes(engine)) || new Set(engines).size !== engines.length) fail(`--engine needs ${ENGINES.join(', ')} or both, comma-separated (got ${JSON.stringify(value)}).`);
      options.engines = engines;
    } else if (name === '--temporal-cli') {
      const value = inline ?? argv[++index];
      if (value === undefined || !value.startsWith('/')) fail('--temporal-cli needs the absolute path of the Temporal CLI.');
      options.temporalCli = value;
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
  if (options.concurrency > 64) fail('--concurrency is at most 64.');
  options.temporalCli = temporalCliPath(options.temporalCli);
  if (options.engines === null) {
    options.engines = options.temporalCli === null ? ['embedded'] : [...ENGINES];
    if (options.temporalCli === null) process.stderr.write('bench/durable-execution: embedded only (no Temporal CLI: give --temporal-cli PATH or LEXEC_TEMPORAL_CLI to compare with managed_local).\n');
  }
  return options;
}

// --- child processes ----------------------------------------------------------------------------

const registry = createChildRegistry({ stopTimeoutMs: STOP_TIMEOUT_MS, exitSignal: 'SIGKILL' });
const { children, track, stopChild } = registry;
const TAIL_CHARS = 3000;

async function stopAll() {
  const outcomes = {};
  const order = ['executor', 'sandbox', 'ledger'];
  const ranked = [...children].sort((a, b) => order.indexOf(a.name.split('-')[0]) - order.indexOf(b.name.split('-')[0]));
  for (const entry of ranked) {
    const running = entry.exit === null;
    const outcome = await stopChild(entry, 'SIGTERM');
    if (running) outcomes[entry.name] = outcome;
  }
  return outcomes;
}

/**
 * A long-running service: `node <args>` in the repository root, stdout and stderr read to the end
 * and split into lines; `onLine(line, at)` sees every line (cheap substring tests first: the
 * services log one line per request). Only a tail is kept for error messages.
 */
function startService(name, args, home, cpuProfDir, onLine = () => undefined) {
  const profile = cpuProfDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, `--cpu-prof-name=${name}.cpuprofile`];
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...profile, ...args], { cwd: root, env: childEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
  const entry = track(name, child);
  const service = { name, entry, spawnedAt, tail: '', events: new Map(), waiters: new Map() };
  const partial = { stdout: '', stderr: '' };
  const handle = (line, at) => {
    const marker = line.indexOf('"event":"');
    if (marker !== -1) {
      const event = line.slice(marker + 9, line.indexOf('"', marker + 9));
      if (!service.events.has(event) && (service.waiters.has(event) || event.endsWith('_started') || event === 'executor_ready')) {
        try {
          const doc = JSON.parse(line);
          service.events.set(event, { doc, at });
          service.waiters.get(event)?.({ doc, at });
          service.waiters.delete(event);
        } catch {
          // Not a JSON line after all.
        }
      }
    }
    onLine(line, at);
  };
  for (const stream of ['stdout', 'stderr']) {
    child[stream].setEncoding('utf8');
    child[stream].on('data', (chunk) => {
      const at = performance.now();
      service.tail = (service.tail + chunk).slice(-TAIL_CHARS);
      const text = partial[stream] + chunk;
      const lines = text.split('\n');
      partial[stream] = lines.pop();
      for (const line of lines) if (line !== '') handle(line, at);
    });
  }
  service.tailText = () => {
    const text = service.tail.trim();
    return text === '' ? '' : `\n${name} output (last lines):\n${text.slice(text.indexOf('\n') + 1)}`;
  };
  /** Resolves with the first log line of `event` and when it arrived; fails if the process exits or the time runs out. */
  service.waitFor = (event) => {
    if (service.events.has(event)) return Promise.resolve(service.events.get(event));
    return new Promise((found, refused) => {
      const timer = setTimeout(() => refused(new BenchError(`${name} did not log ${event} within ${START_TIMEOUT_MS / 1000} s.${service.tailText()}`)), START_TIMEOUT_MS);
      service.waiters.set(event, (seen) => {
        clearTimeout(timer);
        found(seen);
      });
      void entry.exited.then((exit) => {
        clearTimeout(timer);
        if (!service.events.has(event)) refused(new BenchError(`${name} exited before it logged ${event} (${exit.error ?? exit.signal ?? `exit ${exit.code}`}).${service.tailText()}`));
      });
    });
  };
  return service;
}

/** CPU of every service and of this client; `since(before)` gives the difference. */
function cpuSnapshot(services) {
  const snapshot = { client: clientCpuMs() };
  for (const [name, service] of Object.entries(services)) snapshot[name] = service === null || service.entry.exit !== null ? null : processCpuMs(service.entry.child.pid);
  return snapshot;
}

function cpuSince(services, before) {
  const after = cpuSnapshot(services);
  return Object.fromEntries(Object.keys(after).map((name) => [name, before[name] === null || before[name] === undefined || after[name] === null ? null : after[name] - before[name]]));
}

// --- HTTP client --------------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: 32 });

/** One request; `payload` is an already serialised JSON body or undefined. */
function call(port, method, path, authorization, payload) {
  const headers = {};
  if (authorization !== null) headers.authorization = authorization;
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
          done({ status: res.statusCode, body: text === '' ? {} : JSON.parse(text), at: performance.now() });
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

const bearer = (token) => `Bearer ${token}`;

/** One call that must answer `expected`; anything else aborts the benchmark with the answer. */
async function expect(service, step, expected, method, path, authorization, body) {
  let answer;
  try {
    answer = await call(service.port, method, path, authorization, body === undefined || typeof body === 'string' ? body : JSON.stringify(body));
  } catch (error) {
    if (error instanceof BenchError) throw error;
    const gone = service.entry.exit === null ? '' : ` (${service.name} exited: ${service.entry.exit.signal ?? `exit ${service.entry.exit.code}`})`;
    throw new BenchError(`${step}: ${method} ${path} failed: ${error.message}${gone}${service.tailText()}`);
  }
  if (answer.status !== expected) {
    throw new BenchError(`${step}: ${method} ${path} at the ${service.name} answered ${answer.status}, expected ${expected}: ${JSON.stringify(answer.body).slice(0, 500)}`);
  }
  return answer;
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// --- set-up -------------------------------------------------------------------------------------

function ledgerConfig(workDir) {
  const ledgerDir = join(workDir, 'ledger');
  const config = {
    schema_version: 1,
    http: { host: '127.0.0.1', port: 0 },
    database_path: join(ledgerDir, 'ledger.db'),
    admin_capability_path: join(ledgerDir, 'credentials', 'admin.capability'),
    contract_level: 'v4.5',
    authorization_ttl_seconds: 3600 * 6,
    default_policy: { per_authorization_cap_units: BIG_CAP, daily_cap_units: BIG_CAP, approval_threshold_units: BIG_CAP, units_scale: 6, currency: 'USD' },
  };
  const path = join(workDir, 'ledger.json');
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  return { path, config };
}

async function executorConfig(workDir, ledgerPort, sandboxOrigin, options) {
  const executorDir = join(workDir, 'executor');
  const template = JSON.parse(readFileSync(join(root, 'templates', 'executor.example.json'), 'utf8'));
  const pricing = template.execution_targets.find((target) => target.target_id === TARGET_ID)?.pricing.by_image_size?.[IMAGE_SIZE];
  if (pricing?.numerator !== '3' || pricing.denominator !== '1000') fail(`templates/executor.example.json no longer prices ${IMAGE_SIZE} at 3/1000 USD per image; update COST_UNITS.`);
  const config = {
    ...template,
    http: { host: '127.0.0.1', port: 0 },
    ledger: { ...template.ledger, endpoint: `http://127.0.0.1:${ledgerPort}` },
    credentials: { mode: 'managed', state_dir: join(executorDir, 'credentials') },
    storage: { database_path: join(executorDir, 'executor.db'), artifact_root: join(executorDir, 'artifacts'), catalog_path: join(executorDir, 'provider-catalog.json') },
    providers: { mode: 'sandbox', base_url: sandboxOrigin, operation_deadline_seconds: DEADLINE_SECONDS },
    workflow_engine: await engineSection(options.engine, workDir, options.temporalCli),
    development_allowance: true,
  };
  const path = join(workDir, 'executor.json');
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  return { path, config };
}

// --- the run's state ----------------------------------------------------------------------------

/**
 * What the run knows about its executions: admitted ones by id (token, prompt, part), and the
 * terminal and checkpoint log events of the executor(s), by execution id, with their arrival time.
 */
const run = {
  tokens: [],
  nextToken: 0,
  executions: new Map(),
  byPrompt: new Map(),
  terminal: new Map(),
  checkpointed: new Map(),
  waiters: new Map(),
  checkpointEvents: 0,
  activityErrors: 0,
  internalErrors: 0,
  sandboxSubmissions: 0,
  ledgerSettleCalls: 0,
  ledgerSettleRefused: 0,
};

function executorLine(line, at) {
  if (line.includes('"event":"provider_operation_checkpointed"')) {
    run.checkpointEvents += 1;
    const id = JSON.parse(line).execution_id;
    if (!run.checkpointed.has(id)) run.checkpointed.set(id, at);
  } else if (line.includes('"event":"execution_')) {
    for (const [event, state] of Object.entries(TERMINAL_EVENTS)) {
      if (!line.includes(`"event":"${event}"`)) continue;
      const id = JSON.parse(line).execution_id;
      if (!run.terminal.has(id)) run.terminal.set(id, { state, at });
      run.waiters.get(id)?.();
      return;
    }
    if (line.includes('"event":"execution_activity_error"')) run.activityErrors += 1;
  } else if (line.includes('"event":"internal_error"')) {
    run.internalErrors += 1;
  }
}

function sandboxLine(line) {
  if (line.includes('"event":"sandbox_submission"')) run.sandboxSubmissions += 1;
}

function ledgerLine(line) {
  if (line.includes('"event":"http_request"') && line.includes('/settle"')) {
    if (line.includes('"status":200')) run.ledgerSettleCalls += 1;
    else run.ledgerSettleRefused += 1;
  }
}

/** Resolves once the executor logged a terminal state for `id`; fails if it exits or STALL_TIMEOUT_MS pass first. */
function terminalOf(id, stack) {
  if (run.terminal.has(id)) return Promise.resolve(run.terminal.get(id));
  const executor = stack.executor;
  return new Promise((done, refused) => {
    const timer = setTimeout(() => {
      run.waiters.delete(id);
      refused(new BenchError(`execution ${id} was not terminal after ${STALL_TIMEOUT_MS / 1000} s.${executor.tailText()}`));
    }, STALL_TIMEOUT_MS);
    run.waiters.set(id, () => {
      clearTimeout(timer);
      run.waiters.delete(id);
      done(run.terminal.get(id));
    });
    void executor.entry.exited.then((exit) => {
      if (!run.waiters.has(id)) return;
      clearTimeout(timer);
      run.waiters.delete(id);
      refused(new BenchError(`the executor exited (${exit.error ?? exit.signal ?? `exit ${exit.code}`}) before execution ${id} was terminal.${executor.tailText()}`));
    });
  });
}

/** Resolves once every id in `ids` is terminal; fails when none became terminal for STALL_TIMEOUT_MS. */
async function allTerminal(ids, what, stack) {
  let last = -1;
  let lastChange = performance.now();
  for (;;) {
    const count = ids.reduce((sum, id) => sum + (run.terminal.has(id) ? 1 : 0), 0);
    if (count === ids.length) return;
    if (count !== last) {
      last = count;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > STALL_TIMEOUT_MS) {
      fail(`${what}: ${ids.length - count} of ${ids.length} executions not terminal, and none became terminal for ${STALL_TIMEOUT_MS / 1000} s.${stack.executor.tailText()}`);
    }
    if (stack.executor.entry.exit !== null) fail(`${what}: the executor exited (${stack.executor.entry.exit.signal ?? `exit ${stack.executor.entry.exit.code}`}) with ${ids.length - count} executions not terminal.${stack.executor.tailText()}`);
    await sleep(20);
  }
}

/** A complete, valid execution request: 1 `square` image, a prompt unique to this execution. */
function executionRequest(tokenId, prompt) {
  return JSON.stringify({ schema_version: 2, spend_auth_token_id: tokenId, input: { prompt, image_count: 1, image_size: IMAGE_SIZE }, input_schema_version: 1, target_id: TARGET_ID });
}

/** POST /v2/executions with the next pre-created authorization; must answer 201 scheduled. */
async function admit(stack, part) {
  if (run.nextToken >= run.tokens.length) fail('admission: ran out of pre-created authorizations.');
  const token = run.tokens[run.nextToken++];
  const prompt = `bench durable-execution ${part} #${run.executions.size} ${randomUUID()}`;
  const sentAt = performance.now();
  const answer = await expect(stack.executor, `admission (${part})`, 201, 'POST', '/v2/executions', bearer(stack.caller), executionRequest(token, prompt));
  const execution = answer.body.execution;
  if (execution?.state !== 'scheduled' || execution.authorization?.spend_auth_token_id !== token || !/^exe_[0-9a-f]{32}$/.test(execution.execution_id ?? '')) {
    fail(`admission (${part}): expected a scheduled execution for ${token}, got ${JSON.stringify(answer.body).slice(0, 500)}`);
  }
  const record = { id: execution.execution_id, token, prompt, part, sentAt, answeredAt: answer.at };
  run.executions.set(record.id, record);
  run.byPrompt.set(prompt, record.id);
  return record;
}

/** Polls GET /v1/executions/{id} every `intervalMs` until it is terminal; returns when the answer saying so arrived. */
async function pollUntilTerminal(stack, id, intervalMs) {
  const deadline = performance.now() + STALL_TIMEOUT_MS;
  for (;;) {
    const answer = await expect(stack.executor, 'poll execution', 200, 'GET', `/v1/executions/${id}`, bearer(stack.caller));
    const state = answer.body.execution?.state;
    if (state === 'succeeded' || state === 'failed' || state === 'reconciliation') return { state, at: answer.at };
    if (performance.now() > deadline) fail(`poll execution: ${id} still ${state} after ${STALL_TIMEOUT_MS / 1000} s.`);
    await sleep(intervalMs);
  }
}

// --- parts --------------------------------------------------------------------------------------

async function partLatency(stack, options) {
  const samples = [];
  for (let index = 0; index < options.warmup + options.latency; index += 1) {
    const warm = index < options.warmup;
    const record = await admit(stack, warm ? 'warm-up' : 'latency');
    const end = options.detect === 'poll' ? await pollUntilTerminal(stack, record.id, options.pollMs) : await terminalOf(record.id, stack);
    if (end.state !== 'succeeded') fail(`latency: execution ${record.id} ended ${end.state}.${stack.executor.tailText()}`);
    if (options.detect === 'log') {
      // Not timed: the API must agree with the log.
      const answer = await expect(stack.executor, 'read execution', 200, 'GET', `/v1/executions/${record.id}`, bearer(stack.caller));
      if (answer.body.execution?.state !== 'succeeded') fail(`latency: the executor logged ${record.id} succeeded but answers ${answer.body.execution?.state}.`);
    }
    if (warm) continue;
    const checkpointAt = run.checkpointed.get(record.id);
    samples.push({
      total: end.at - record.sentAt,
      admission: record.answeredAt - record.sentAt,
      toCheckpoint: checkpointAt === undefined ? null : checkpointAt - record.answeredAt,
      afterCheckpoint: checkpointAt === undefined ? null : end.at - checkpointAt,
    });
  }
  return samples;
}

/** Admits `count` executions on `concurrency` loops; returns their records and the admission wall time. */
async function admitMany(stack, part, count, concurrency) {
  const records = [];
  let next = 0;
  const loop = async () => {
    while (next < count) {
      next += 1;
      records.push(await admit(stack, part));
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, loop));
  return { records, start, admittedAt: performance.now() };
}

async function partSustained(stack, options) {
  const before = cpuSnapshot(stack.services());
  const { records, start, admittedAt } = await admitMany(stack, 'sustained', options.sustained, options.concurrency);
  const ids = records.map((record) => record.id);
  await allTerminal(ids, 'sustained', stack);
  const ends = ids.map((id) => run.terminal.get(id));
  const notSucceeded = ends.filter((end) => end.state !== 'succeeded').length;
  if (notSucceeded > 0) {
    const db = openReadOnly(stack.executorDb);
    const why = tally(db, `SELECT state || '/' || COALESCE(state_reason, '-') AS k, COUNT(*) AS n FROM executions WHERE state <> 'succeeded' GROUP BY k`);
    const attempts = tally(db, `SELECT state || '/' || COALESCE(outcome_code, '-') AS k, COUNT(*) AS n FROM provider_attempts WHERE state NOT IN ('completed', 'checkpointed') GROUP BY k`);
    db.close();
    fail(`sustained: ${notSucceeded} executions did not succeed: ${listing(why)}; attempts ${listing(attempts)}.${stack.executor.tailText()}`);
  }
  const end = Math.max(...ends.map((item) => item.at));
  const cpu = cpuSince(stack.services(), before);
  const latencies = records.map((record) => run.terminal.get(record.id).at - record.sentAt).sort((a, b) => a - b);
  return { count: ids.length, wallMs: end - start, admissionMs: admittedAt - start, cpu, latencyP50: percentile(latencies, 50), latencyP99: percentile(latencies, 99) };
}

/** Counts rows of `sql` (which must select one column `k` and one `n`) into a plain object. */
const tally = (db, sql) => Object.fromEntries(db.prepare(sql).all().map((row) => [String(row.k), Number(row.n)]));

/** What the executor's database holds for a set of executions (by part), for the census and quiet checks. */
function census(dbPath, part) {
  const db = openReadOnly(dbPath);
  try {
    const inPart = `execution_id IN (SELECT execution_id FROM executions WHERE request_json LIKE '%bench durable-execution ${part} #%')`;
    return {
      executions: tally(db, `SELECT state || COALESCE('/' || phase, '') AS k, COUNT(*) AS n FROM executions WHERE ${inPart} GROUP BY k ORDER BY k`),
      runs: tally(db, `SELECT status || '/' || phase AS k, COUNT(*) AS n FROM workflow_runs WHERE ${inPart} GROUP BY k ORDER BY k`),
      attempts: tally(db, `SELECT state AS k, COUNT(*) AS n FROM provider_attempts WHERE ${inPart} GROUP BY k ORDER BY k`),
      submitting: Number(db.prepare("SELECT COUNT(*) AS n FROM provider_attempts WHERE state = 'submitting'").get().n),
      attemptsAll: Number(db.prepare('SELECT COUNT(*) AS n FROM provider_attempts').get().n),
    };
  } finally {
    db.close();
  }
}

/** Waits until nothing is being submitted: sandbox submissions = checkpoints logged = attempts in the database, still for 500 ms. */
async function waitQuiet(stack) {
  const start = performance.now();
  let stableSince = null;
  let last = null;
  for (;;) {
    const { submitting, attemptsAll } = census(stack.executorDb, 'recovery');
    const now = { sandbox: run.sandboxSubmissions, checkpoints: run.checkpointEvents, attempts: attemptsAll, submitting };
    const agree = now.sandbox === now.checkpoints && now.checkpoints === now.attempts && now.submitting === 0;
    const same = last !== null && last.sandbox === now.sandbox && last.checkpoints === now.checkpoints && last.attempts === now.attempts;
    if (agree && same) {
      stableSince ??= performance.now();
      if (performance.now() - stableSince >= 500) return { quiet: true, waitedMs: performance.now() - start, ...now };
    } else {
      stableSince = null;
    }
    last = now;
    if (performance.now() - start > QUIET_TIMEOUT_MS) return { quiet: false, waitedMs: performance.now() - start, ...now };
    await sleep(50);
  }
}

/** Starts an executor and measures spawn -> listening, -> executor_ready logged, -> /readyz 200 (polled every 5 ms). */
async function startExecutor(stack, name, cpuProfDir) {
  const executor = startService(name, ['bin/run.js', 'executor', 'serve', '--config', stack.executorConfigPath, '--json'], stack.workDir, cpuProfDir, executorLine);
  stack.executor = executor;
  const started = await executor.waitFor('executor_started');
  executor.port = started.doc.port;
  let ready;
  const deadline = performance.now() + START_TIMEOUT_MS;
  for (;;) {
    let answer;
    try {
      answer = await call(executor.port, 'GET', '/readyz', bearer(stack.caller));
    } catch (error) {
      if (executor.entry.exit !== null) fail(`${name} exited before /readyz answered 200.${executor.tailText()}`);
      throw new BenchError(`${name}: GET /readyz failed: ${error.message}`);
    }
    if (answer.status === 200) {
      ready = answer.at;
      break;
    }
    if (performance.now() > deadline) fail(`${name}: /readyz still ${answer.status} after ${START_TIMEOUT_MS / 1000} s: ${JSON.stringify(answer.body)}`);
    await sleep(5);
  }
  const logged = await executor.waitFor('executor_ready');
  return { startedMs: started.at - executor.spawnedAt, readyLogMs: logged.at - executor.spawnedAt, readyzMs: ready - executor.spawnedAt };
}

async function partRecovery(stack, options) {
  const sandbox = stack.sandbox;
  // a. Nothing can finish: every status poll answers 503; admit R executions meanwhile.
  await expect(sandbox, 'set sandbox faults', 200, 'PUT', '/__sandbox/faults', null, { faults: [{ kind: 'http_error', route: 'status', status: 503 }] });
  const { records, start, admittedAt } = await admitMany(stack, 'recovery', options.recovery, options.concurrency);
  const admissionMs = admittedAt - start;
  const finishedEarly = records.filter((record) => run.terminal.has(record.id)).length;
  if (finishedEarly > 0) fail(`recovery set-up: ${finishedEarly} executions became terminal while every status poll answered 503.`);
  // b. Hang the engine's slots on status polls, wait until no submission is under way, SIGKILL.
  await expect(sandbox, 'set sandbox faults', 200, 'PUT', '/__sandbox/faults', null, { faults: [{ kind: 'latency', ms: 600_000, routes: ['status'] }] });
  const quiet = await waitQuiet(stack);
  const killedAt = performance.now();
  const killed = await stopChild(stack.executor.entry, 'SIGKILL');
  if (killed.signal !== 'SIGKILL') fail(`recovery: the executor ended ${JSON.stringify(killed)} instead of by SIGKILL.`);
  const holdMs = killedAt - admittedAt;
  // c. The rows left behind.
  const left = census(stack.executorDb, 'recovery');
  const nonTerminal = Object.entries(left.executions).reduce((sum, [key, n]) => sum + (/^(pending|scheduled|running)/.test(key) ? n : 0), 0);
  if (nonTerminal !== options.recovery) fail(`recovery set-up: ${nonTerminal} non-terminal executions at the SIGKILL, expected ${options.recovery}: ${JSON.stringify(left.executions)}`);
  const ambiguousAtKill = left.attempts.submitting ?? 0;
  await expect(sandbox, 'clear sandbox faults', 200, 'DELETE', '/__sandbox/faults', null);

  // Restart on the same database and measure.
  const before = cpuSnapshot({ ledger: stack.ledger, sandbox: stack.sandbox });
  const startup = await startExecutor(stack, 'executor-2', options.cpuProf);
  const ids = records.map((record) => record.id);
  await allTerminal(ids, 'recovery', stack);
  const spawnedAt = stack.executor.spawnedAt;
  const ends = ids.map((id) => run.terminal.get(id).at - spawnedAt).sort((a, b) => a - b);
  const cpu = { ...cpuSince({ ledger: stack.ledger, sandbox: stack.sandbox }, before), executor: processCpuMs(stack.executor.entry.child.pid) };
  // Executions that were still `scheduled` at the SIGKILL are submitted (and checkpointed) after the restart.
  const checkpointsAfter = ids.map((id) => run.checkpointed.get(id)).filter((at) => at !== undefined && at > spawnedAt);
  const lastCheckpointMs = checkpointsAfter.length === 0 ? null : Math.max(...checkpointsAfter) - spawnedAt;
  const states = {};
  for (const id of ids) states[run.terminal.get(id).state] = (states[run.terminal.get(id).state] ?? 0) + 1;
  return {
    count: ids.length,
    setUp: { admissionMs, holdMs, quiet, checkpointedBeforeKill: left.attempts.checkpointed ?? 0 },
    left,
    ambiguousAtKill,
    startup,
    allTerminalMs: ends.at(-1),
    firstTerminalMs: ends[0],
    submittedAfterRestart: checkpointsAfter.length,
    lastCheckpointMs,
    halfTerminalMs: percentile(ends, 50),
    drainMs: ends.at(-1) - startup.readyzMs,
    states,
    cpu,
  };
}

// --- fsync counting (optional) ------------------------------------------------------------------

/** N executions one at a time with strace attached to the three services; fsync calls per execution. */
async function countFsyncs(stack, count) {
  requireStrace();
  const services = { executor: stack.executor, ledger: stack.ledger, sandbox: stack.sandbox };
  const tracers = {};
  for (const [name, service] of Object.entries(services)) tracers[name] = await attachStrace({ workDir: stack.workDir, service, registry });
  for (let index = 0; index < count; index += 1) {
    const record = await admit(stack, 'fsyncs');
    const end = await terminalOf(record.id, stack);
    if (end.state !== 'succeeded') fail(`count fsyncs: execution ${record.id} ended ${end.state}.`);
  }
  // The last execution's final commits are logged before the engine marks its run completed.
  await sleep(300);
  const perExecution = {};
  const msPerExecution = {};
  for (const [name, tracer] of Object.entries(tracers)) {
    const total = await detachStrace(tracer);
    perExecution[name] = total.calls / count;
    msPerExecution[name] = (total.seconds * 1000) / count;
  }
  return { executions: count, perExecution, msPerExecution };
}

// --- verification -------------------------------------------------------------------------------

async function verify(stack, paths, engine) {
  const problems = [];
  const problem = (text) => {
    if (problems.length < 20) problems.push(text);
    else if (problems.length === 20) problems.push('… (more problems not listed)');
  };
  const executions = run.executions;

  // The executor's database.
  const db = openReadOnly(paths.executorDb);
  const attemptsByExecution = new Map();
  const receipts = new Map();
  const reconciliations = new Set();
  const states = {};
  try {
    const rows = db.prepare('SELECT execution_id, spend_auth_token_id, state, state_reason, request_json FROM executions').all();
    if (rows.length !== executions.size) problem(`the executor database holds ${rows.length} executions; ${executions.size} were admitted.`);
    for (const row of rows) {
      states[row.state] = (states[row.state] ?? 0) + 1;
      const known = executions.get(row.execution_id);
      if (known === undefined) problem(`execution ${row.execution_id} in the executor database was not admitted by this run.`);
      else if (known.token !== row.spend_auth_token_id || JSON.parse(row.request_json).input.prompt !== known.prompt) problem(`execution ${row.execution_id} does not hold the token and prompt it was admitted with.`);
      if (row.state === 'reconciliation') reconciliations.add(row.execution_id);
      else if (row.state !== 'succeeded') problem(`execution ${row.execution_id} is ${row.state}${row.state_reason === null ? '' : ` (${row.state_reason})`}, not terminal-succeeded.`);
    }
    for (const attempt of db.prepare('SELECT execution_id, attempt_id, state, request_id, operation_id, delivered_images FROM provider_attempts').all()) {
      attemptsByExecution.set(attempt.execution_id, [...(attemptsByExecution.get(attempt.execution_id) ?? []), attempt]);
    }
    for (const receipt of db.prepare('SELECT execution_id, receipt_id, exact_amount, scale, receipt_shape, ledger_settlement_id FROM receipts').all()) receipts.set(receipt.execution_id, receipt);
    const artifacts = new Map(db.prepare('SELECT execution_id, COUNT(*) AS n FROM artifacts GROUP BY execution_id').all().map((row) => [row.execution_id, Number(row.n)]));
    const runs = new Map(db.prepare('SELECT execution_id, status FROM workflow_runs').all().map((row) => [row.execution_id, row.status]));
    for (const row of rows) {
      const attempts = attemptsByExecution.get(row.execution_id) ?? [];
      if (attempts.length !== 1) {
        problem(`execution ${row.execution_id} has ${attempts.length} provider attempts.`);
        continue;
      }
      const [attempt] = attempts;
      // The embedded engine's own runs; a Temporal engine keeps its runs in Temporal.
      if (engine === 'embedded' && runs.get(row.execution_id) !== 'completed') problem(`execution ${row.execution_id}: its workflow run is ${runs.get(row.execution_id) ?? 'missing'}, not completed.`);
      if (row.state === 'reconciliation') {
        if (row.state_reason !== 'submission_unconfirmed' || attempt.state !== 'ambiguous') problem(`execution ${row.execution_id} is in reconciliation (${row.state_reason}, attempt ${attempt.state}); only an attempt interrupted before its checkpoint may end there.`);
        if (receipts.has(row.execution_id)) problem(`execution ${row.execution_id} is in reconciliation but holds a receipt.`);
        continue;
      }
      if (attempt.state !== 'completed' || attempt.operation_id === null || Number(attempt.delivered_images) !== 1) problem(`execution ${row.execution_id}: attempt ${attempt.state}, delivered ${attempt.delivered_images}; expected completed, 1 image.`);
      if (artifacts.get(row.execution_id) !== 1) problem(`execution ${row.execution_id} has ${artifacts.get(row.execution_id) ?? 0} artifacts, expected 1.`);
      const receipt = receipts.get(row.execution_id);
      if (receipt === undefined) problem(`execution ${row.execution_id} succeeded without a receipt.`);
      else if (receipt.receipt_id !== `rcpt_${row.execution_id.slice(4)}` || receipt.exact_amount !== COST_UNITS || receipt.scale !== 6n || receipt.receipt_shape !== 'precise' || receipt.ledger_settlement_id === null) {
        problem(`execution ${row.execution_id}: receipt ${JSON.stringify(receipt, (key, value) => (typeof value === 'bigint' ? String(value) : value))} is not a settled precise receipt of ${COST_UNITS} micro-units.`);
      }
    }
  } finally {
    db.close();
  }

  // The sandbox: exactly one accepted submission per execution, matched by request id and by prompt.
  const submissions = (await expect(stack.sandbox, 'sandbox submissions', 200, 'GET', '/__sandbox/submissions', null)).body.submissions;
  const accepted = submissions.filter((record) => record.outcome === 'accepted' && record.request_id !== null);
  if (submissions.length > executions.size) problem(`the sandbox received ${submissions.length} submissions for ${executions.size} executions.`);
  if (accepted.length !== submissions.length) problem(`${submissions.length - accepted.length} sandbox submissions were not accepted: ${JSON.stringify(submissions.filter((record) => record.outcome !== 'accepted').slice(0, 3))}`);
  const requestIds = new Set(accepted.map((record) => record.request_id));
  if (requestIds.size !== accepted.length) problem(`${accepted.length - requestIds.size} sandbox request ids occur more than once.`);
  for (const record of accepted) {
    if (record.model !== MODEL || record.image_size !== IMAGE_SIZE || record.num_images !== 1) problem(`sandbox submission ${record.sequence}: ${record.model} ${record.image_size} x${record.num_images}, expected ${MODEL} ${IMAGE_SIZE} x1.`);
  }
  const checkpointedIds = new Map();
  for (const [executionId, attempts] of attemptsByExecution) {
    for (const attempt of attempts) if (attempt.request_id !== null) checkpointedIds.set(attempt.request_id, executionId);
  }
  // Every submission's prompt, as the sandbox received it (its result echoes it).
  const promptOf = new Map();
  const ids = [...requestIds];
  let next = 0;
  const key = 'Key bench-durable-execution';
  const readResults = async () => {
    while (next < ids.length) {
      const requestId = ids[next++];
      const answer = await expect(stack.sandbox, 'sandbox result', 200, 'GET', `/${MODEL}/requests/${requestId}`, key);
      promptOf.set(requestId, answer.body.prompt);
    }
  };
  await Promise.all(Array.from({ length: 8 }, readResults));
  const submissionsPerExecution = new Map();
  for (const [requestId, prompt] of promptOf) {
    const executionId = run.byPrompt.get(prompt);
    if (executionId === undefined) {
      problem(`sandbox request ${requestId} carried a prompt no execution of this run had.`);
      continue;
    }
    submissionsPerExecution.set(executionId, [...(submissionsPerExecution.get(executionId) ?? []), requestId]);
  }
  // An attempt interrupted before its checkpoint (still `submitting` at the SIGKILL) has no request
  // id: its submission may or may not have reached the sandbox, and it must end in reconciliation.
  const uncheckpointed = (executionId) => {
    const attempt = (attemptsByExecution.get(executionId) ?? [])[0];
    return reconciliations.has(executionId) && attempt?.state === 'ambiguous' && attempt.request_id === null;
  };
  for (const requestId of requestIds) {
    if (!checkpointedIds.has(requestId) && !uncheckpointed(run.byPrompt.get(promptOf.get(requestId)))) problem(`sandbox request ${requestId} belongs to no checkpointed provider attempt.`);
  }
  let duplicates = 0;
  let missing = 0;
  for (const [executionId] of executions) {
    const received = submissionsPerExecution.get(executionId) ?? [];
    const attempt = (attemptsByExecution.get(executionId) ?? [])[0];
    if (received.length > 1) {
      duplicates += received.length - 1;
      problem(`DUPLICATE SUBMISSION: execution ${executionId} reached the sandbox ${received.length} times (${received.join(', ')}).`);
    } else if (received.length === 0) {
      missing += 1;
      if (!uncheckpointed(executionId)) problem(`execution ${executionId} never reached the sandbox.`);
    } else if (attempt?.request_id !== received[0] && !uncheckpointed(executionId)) {
      problem(`execution ${executionId}: the sandbox received its prompt as ${received[0]}, but its attempt names ${attempt?.request_id ?? 'nothing'}.`);
    }
  }

  // The ledger: every authorization settled exactly once, by its execution.
  const ledgerDb = openReadOnly(paths.ledgerDb);
  let settled = 0;
  let openRecords;
  try {
    const authorizations = new Map(ledgerDb.prepare('SELECT token_id, status, execution_id FROM authorizations').all().map((row) => [row.token_id, row]));
    const settlements = new Map();
    for (const row of ledgerDb.prepare('SELECT settlement_id, token_id, receipt_id, execution_id, amount_units FROM settlements').all()) settlements.set(row.token_id, [...(settlements.get(row.token_id) ?? []), row]);
    const releases = Number(ledgerDb.prepare('SELECT COUNT(*) AS n FROM releases').get().n);
    const records = new Map(ledgerDb.prepare("SELECT token_id, COUNT(*) AS n FROM reconciliation_records WHERE status = 'open' GROUP BY token_id").all().map((row) => [row.token_id, Number(row.n)]));
    openRecords = [...records.values()].reduce((sum, n) => sum + n, 0);
    if (authorizations.size !== run.tokens.length) problem(`the ledger holds ${authorizations.size} authorizations; ${run.tokens.length} were requested.`);
    if (releases !== 0) problem(`the ledger holds ${releases} releases; none was expected.`);
    for (const [executionId, record] of executions) {
      const authorization = authorizations.get(record.token);
      const rows = settlements.get(record.token) ?? [];
      if (reconciliations.has(executionId)) {
        if (authorization?.status !== 'claimed' || rows.length !== 0 || records.get(record.token) !== 1) problem(`execution ${executionId} (reconciliation): authorization ${authorization?.status}, ${rows.length} settlements, ${records.get(record.token) ?? 0} open records; expected claimed, none, one.`);
        continue;
      }
      if (authorization?.status !== 'settled' || authorization.execution_id !== executionId) problem(`authorization ${record.token} is ${authorization?.status} by ${authorization?.execution_id}; expected settled by ${executionId}.`);
      if (rows.length !== 1) {
        problem(`authorization ${record.token} has ${rows.length} settlements, expected exactly 1.`);
        continue;
      }
      const [settlement] = rows;
      if (settlement.execution_id !== executionId || settlement.receipt_id !== `rcpt_${executionId.slice(4)}` || settlement.amount_units !== COST_UNITS) problem(`settlement ${settlement.settlement_id} does not match execution ${executionId}'s receipt.`);
      else if (receipts.get(executionId)?.ledger_settlement_id !== settlement.settlement_id) problem(`execution ${executionId}'s receipt names settlement ${receipts.get(executionId)?.ledger_settlement_id}, the ledger ${settlement.settlement_id}.`);
      else settled += 1;
      if (records.has(record.token)) problem(`authorization ${record.token} is settled but has an open reconciliation record.`);
    }
  } finally {
    ledgerDb.close();
  }
  return {
    problems,
    executions: executions.size,
    states,
    submissions: submissions.length,
    matchedByRequestId: [...requestIds].filter((id) => checkpointedIds.has(id)).length,
    matchedByPrompt: [...submissionsPerExecution.values()].filter((list) => list.length === 1).length,
    duplicates,
    missing,
    settled,
    reconciliation: reconciliations.size,
    openRecords,
    settleCalls: run.ledgerSettleCalls,
    settleRefused: run.ledgerSettleRefused,
    activityErrors: run.activityErrors,
    internalErrors: run.internalErrors,
  };
}

// --- figures ------------------------------------------------------------------------------------


const round2 = (value) => (value === null ? null : Math.round(value * 100) / 100);



function distribution(values) {
  const sorted = values.filter((value) => value !== null).sort((a, b) => a - b);
  if (sorted.length === 0) return { p50: null, p99: null, mean: null };
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean: sorted.reduce((sum, value) => sum + value, 0) / sorted.length };
}

const fmt = (value, digits = 2) => (value === null || value === undefined ? '?' : value.toFixed(digits));
const perExecution = (cpu, count) => Object.fromEntries(Object.entries(cpu).map(([name, ms]) => [name, ms === null ? null : ms / count]));
const listing = (counts) =>
  Object.entries(counts)
    .map(([key, n]) => `${key} ${n}`)
    .join(', ') || 'none';

function report(options, outcome, workDir) {
  const { latency, sustained, recovery, fsyncs, verification, setUp, firstStart, stopped, filesystem } = outcome;
  const cpuList = cpus();
  const facts = {
    node: process.version,
    cpus: cpuList.length,
    cpu_model: cpuList[0]?.model?.trim() ?? null,
    platform: `${process.platform}-${process.arch}`,
    filesystem,
    detect: options.detect,
    poll_ms: options.detect === 'poll' ? options.pollMs : null,
  };
  const parts = {
    total: distribution(latency.map((sample) => sample.total)),
    admission: distribution(latency.map((sample) => sample.admission)),
    toCheckpoint: distribution(latency.map((sample) => sample.toCheckpoint)),
    afterCheckpoint: distribution(latency.map((sample) => sample.afterCheckpoint)),
  };
  const sustainedCpu = perExecution(sustained.cpu, sustained.count);
  const recoveryCpu = perExecution(recovery.cpu, recovery.count);
  const stoppedText = Object.entries(stopped)
    .map(([name, how]) => `${name} ${how === null ? 'never started' : `${how.signal ?? `exit ${how.code}`}${how.forced ? ' (SIGKILL after SIGTERM timed out)' : ''}`}`)
    .join(', ');
  const perSecond = sustained.count / (sustained.wallMs / 1000);
  const lines = [
    `Durable execution on loopback — ${facts.node}, ${facts.cpus} CPUs (${facts.cpu_model ?? 'unknown CPU'}), ${facts.platform}`,
    `processes: lexec ledger serve + lexec provider sandbox serve --complete-after-ms 0 + lexec executor serve (${options.engine === 'embedded' ? 'embedded engine' : 'managed_local engine: its own temporal server start-dev'}); SQLite WAL + synchronous=FULL on ${facts.filesystem ?? 'unknown filesystem'} (${workDir})`,
    `each execution: 1 image, ${IMAGE_SIZE}, ${COST_UNITS} micro-units; completion detected ${options.detect === 'log' ? "from the executor's execution_succeeded log line" : `by polling GET /v1/executions/{id} every ${options.pollMs} ms`}`,
    `set-up: ${setUp.authorizations} authorizations approved by policy for ${setUp.agents} agents in ${setUp.seconds.toFixed(1)} s (8 at a time)`,
    `fresh executor start (empty database): spawn -> listening ${fmt(firstStart.startedMs, 0)} ms, -> /readyz 200 ${fmt(firstStart.readyzMs, 0)} ms`,
    ...(options.cpuProf === null ? [] : [`profiled: node --cpu-prof, profiles in ${options.cpuProf} (figures not comparable with unprofiled runs)`]),
    '',
    `1. admission to succeeded, concurrency 1 (${latency.length} executions after ${options.warmup} warm-up):`,
    ...table(
      ['span', 'p50 ms', 'p99 ms', 'mean ms'],
      [
        ['POST -> succeeded', fmt(parts.total.p50), fmt(parts.total.p99), fmt(parts.total.mean)],
        ['  POST -> 201 answer', fmt(parts.admission.p50), fmt(parts.admission.p99), fmt(parts.admission.mean)],
        ['  answer -> checkpointed', fmt(parts.toCheckpoint.p50), fmt(parts.toCheckpoint.p99), fmt(parts.toCheckpoint.mean)],
        ['  checkpointed -> succeeded', fmt(parts.afterCheckpoint.p50), fmt(parts.afterCheckpoint.p99), fmt(parts.afterCheckpoint.mean)],
      ],
    ),
    '',
    `2. sustained, ${sustained.count} executions admitted by ${options.concurrency} loops:`,
    `   ${perSecond.toFixed(1)} executions/s (first POST -> last succeeded ${(sustained.wallMs / 1000).toFixed(2)} s; all admitted after ${(sustained.admissionMs / 1000).toFixed(2)} s = ${(sustained.count / (sustained.admissionMs / 1000)).toFixed(1)} admissions/s)`,
    `   POST -> succeeded per execution: p50 ${fmt(sustained.latencyP50, 0)} ms, p99 ${fmt(sustained.latencyP99, 0)} ms`,
    `   CPU ms per execution: executor ${fmt(sustainedCpu.executor)}, ledger ${fmt(sustainedCpu.ledger)}, sandbox ${fmt(sustainedCpu.sandbox)}, client ${fmt(sustainedCpu.client)}`,
    '',
    `3. restart recovery with ${recovery.count} non-terminal executions:`,
    `   set-up: ${recovery.count} admitted at concurrency ${options.concurrency} in ${(recovery.setUp.admissionMs / 1000).toFixed(1)} s while every status poll answered 503; then status held, ${recovery.setUp.quiet.quiet ? 'no submission under way' : 'NOT QUIET'} after ${(recovery.setUp.quiet.waitedMs / 1000).toFixed(1)} s; SIGKILL ${(recovery.setUp.holdMs / 1000).toFixed(1)} s after the last admission`,
    `   left at the SIGKILL: executions ${listing(recovery.left.executions)}`,
    `                        workflow runs ${listing(recovery.left.runs)}`,
    `                        provider attempts ${listing(recovery.left.attempts)}`,
    `   restart: spawn -> listening ${fmt(recovery.startup.startedMs, 0)} ms, -> executor_ready logged ${fmt(recovery.startup.readyLogMs, 0)} ms, -> /readyz 200 ${fmt(recovery.startup.readyzMs, 0)} ms`,
    `   the ${recovery.submittedAfterRestart} executions left unsubmitted were all submitted and checkpointed ${recovery.lastCheckpointMs === null ? '(none)' : `${fmt(recovery.lastCheckpointMs / 1000)} s after the spawn`}`,
    `   spawn -> first terminal ${fmt(recovery.firstTerminalMs / 1000)} s, half ${fmt(recovery.halfTerminalMs / 1000)} s, all ${recovery.count} terminal ${fmt(recovery.allTerminalMs / 1000)} s (${(recovery.count / (recovery.drainMs / 1000)).toFixed(1)} executions/s after ready); ${listing(recovery.states)}`,
    `   CPU ms per execution from spawn to all terminal: executor ${fmt(recoveryCpu.executor)}, ledger ${fmt(recoveryCpu.ledger)}, sandbox ${fmt(recoveryCpu.sandbox)}`,
    ...(fsyncs === null
      ? []
      : [
          '',
          `fsync + fdatasync calls per execution (strace -f -c, ${fsyncs.executions} executions one at a time, not timed): executor ${fmt(fsyncs.perExecution.executor)}, ledger ${fmt(fsyncs.perExecution.ledger)}, sandbox ${fmt(fsyncs.perExecution.sandbox)}`,
          `   time in them per execution (as strace saw it): executor ${fmt(fsyncs.msPerExecution.executor)} ms, ledger ${fmt(fsyncs.msPerExecution.ledger)} ms`,
        ]),
    '',
    'verification (all executions of the run):',
    `   executions ${verification.executions}: ${listing(verification.states)}`,
    `   sandbox submissions ${verification.submissions}; matched one-to-one by request id ${verification.matchedByRequestId}, by prompt ${verification.matchedByPrompt}; duplicate submissions ${verification.duplicates}; executions never submitted ${verification.missing}`,
    `   ledger: ${verification.settled} authorizations settled exactly once by their execution; settle calls answered 200: ${verification.settleCalls} (refused ${verification.settleRefused}); open reconciliation records ${verification.openRecords}`,
    `   executor log: activity errors ${verification.activityErrors}, internal errors ${verification.internalErrors}; attempts interrupted before their checkpoint at the SIGKILL: ${recovery.ambiguousAtKill}`,
    `   ${verification.problems.length === 0 ? 'OK: zero duplicate submissions, every execution terminal, every authorization settled exactly once' : `PROBLEMS:\n     ${verification.problems.join('\n     ')}`}`,
    `stopped: ${stoppedText}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  const result = {
    benchmark: 'durable-execution',
    engine: options.engine,
    ...facts,
    set_up: { authorizations: setUp.authorizations, agents: setUp.agents, seconds: round2(setUp.seconds) },
    fresh_start_ms: { listening: round2(firstStart.startedMs), readyz: round2(firstStart.readyzMs) },
    latency: {
      executions: latency.length,
      warmup: options.warmup,
      total_ms: { p50: round2(parts.total.p50), p99: round2(parts.total.p99), mean: round2(parts.total.mean) },
      admission_ms: { p50: round2(parts.admission.p50), p99: round2(parts.admission.p99) },
      to_checkpoint_ms: { p50: round2(parts.toCheckpoint.p50), p99: round2(parts.toCheckpoint.p99) },
      after_checkpoint_ms: { p50: round2(parts.afterCheckpoint.p50), p99: round2(parts.afterCheckpoint.p99) },
    },
    sustained: {
      executions: sustained.count,
      concurrency: options.concurrency,
      per_second: round2(perSecond),
      wall_s: round2(sustained.wallMs / 1000),
      admission_s: round2(sustained.admissionMs / 1000),
      latency_ms: { p50: round2(sustained.latencyP50), p99: round2(sustained.latencyP99) },
      cpu_ms_per_execution: Object.fromEntries(Object.entries(sustainedCpu).map(([name, value]) => [name, round2(value)])),
    },
    recovery: {
      executions: recovery.count,
      set_up: { admission_s: round2(recovery.setUp.admissionMs / 1000), quiet: recovery.setUp.quiet.quiet, hold_s: round2(recovery.setUp.holdMs / 1000) },
      left_at_kill: { executions: recovery.left.executions, workflow_runs: recovery.left.runs, provider_attempts: recovery.left.attempts },
      restart_ms: { listening: round2(recovery.startup.startedMs), ready_logged: round2(recovery.startup.readyLogMs), readyz: round2(recovery.startup.readyzMs) },
      submitted_after_restart: recovery.submittedAfterRestart,
      last_checkpoint_s: recovery.lastCheckpointMs === null ? null : round2(recovery.lastCheckpointMs / 1000),
      first_terminal_s: round2(recovery.firstTerminalMs / 1000),
      half_terminal_s: round2(recovery.halfTerminalMs / 1000),
      all_terminal_s: round2(recovery.allTerminalMs / 1000),
      per_second_after_ready: round2(recovery.count / (recovery.drainMs / 1000)),
      states: recovery.states,
      cpu_ms_per_execution: Object.fromEntries(Object.entries(recoveryCpu).map(([name, value]) => [name, round2(value)])),
    },
    fsyncs_per_execution:
      fsyncs === null
        ? null
        : {
            executions: fsyncs.executions,
            calls: Object.fromEntries(Object.entries(fsyncs.perExecution).map(([name, value]) => [name, round2(value)])),
            ms: Object.fromEntries(Object.entries(fsyncs.msPerExecution).map(([name, value]) => [name, round2(value)])),
          },
    verification: {
      ok: verification.problems.length === 0,
      executions: verification.executions,
      states: verification.states,
      sandbox_submissions: verification.submissions,
      matched_by_request_id: verification.matchedByRequestId,
      matched_by_prompt: verification.matchedByPrompt,
      duplicate_submissions: verification.duplicates,
      never_submitted: verification.missing,
      settled_exactly_once: verification.settled,
      ledger_settle_calls: verification.settleCalls,
      reconciliation: verification.reconciliation,
      open_reconciliation_records: verification.openRecords,
      interrupted_before_checkpoint_at_kill: recovery.ambiguousAtKill,
      activity_errors: verification.activityErrors,
      problems: verification.problems,
    },
    exits: Object.fromEntries(Object.entries(stopped).map(([name, how]) => [name, how === null ? null : { code: how.code, signal: how.signal, forced: how.forced }])),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

// --- main ---------------------------------------------------------------------------------------

async function main(options, workDir) {
  const needed = ['dist/credentials/capability.js', 'dist/commands/ledger/serve.js', 'dist/commands/executor/serve.js', 'dist/commands/provider/sandbox/serve.js', 'oclif.manifest.json'];
  const missing = needed.filter((name) => !existsSync(join(root, name)));
  if (missing.length > 0) fail(`${missing.join(' and ')} missing in ${root}; run \`npm run build\` first.`);
  if (options.cpuProf !== null) mkdirSync(options.cpuProf, { recursive: true });
  const capability = await import(pathToFileURL(join(root, 'dist', 'credentials', 'capability.js')).href);

  const ledgerFiles = ledgerConfig(workDir);
  const ledger = startService('ledger', ['bin/run.js', 'ledger', 'serve', '--config', ledgerFiles.path], workDir, options.cpuProf, ledgerLine);
  const sandbox = startService('sandbox', ['bin/run.js', 'provider', 'sandbox', 'serve', '--port', '0', '--complete-after-ms', '0'], workDir, options.cpuProf, sandboxLine);
  ledger.port = (await ledger.waitFor('ledger_started')).doc.port;
  const sandboxStarted = (await sandbox.waitFor('sandbox_started')).doc;
  sandbox.port = sandboxStarted.port;
  const adminToken = readFileSync(ledgerFiles.config.admin_capability_path, 'utf8').trim();

  const executorFiles = await executorConfig(workDir, ledger.port, sandboxStarted.origin, options);
  temporalDataDir = executorFiles.config.workflow_engine.data_dir ?? null;
  bootstrapManaged(workDir, executorFiles.path, ledgerFiles.config.admin_capability_path);
  const stack = {
    workDir,
    ledger,
    sandbox,
    executor: null,
    executorConfigPath: executorFiles.path,
    executorDb: executorFiles.config.storage.database_path,
    caller: readFileSync(join(executorFiles.config.credentials.state_dir, 'caller.capability'), 'utf8').trim(),
    services: () => ({ executor: stack.executor, ledger: stack.ledger, sandbox: stack.sandbox }),
  };
  // The first executor is SIGKILLed in part 3 and writes no profile; only the restarted one is profiled.
  const firstStart = await startExecutor(stack, 'executor-1', null);

  const setUpStart = performance.now();
  const created = await preCreateAuthorizations({
    request: async (step, status, method, path, token, body) => (await expect(ledger, step, status, method, path, bearer(token), body)).body,
    adminToken,
    capability,
    name: 'bench-durable-execution',
    count: options.warmup + options.latency + options.sustained + options.recovery + options.countFsyncs,
    holdUnits: HOLD_UNITS,
  });
  run.tokens = created.tokens;
  const setUp = { authorizations: created.tokens.length, agents: created.agents, seconds: (performance.now() - setUpStart) / 1000 };

  const latency = await partLatency(stack, options);
  const sustained = await partSustained(stack, options);
  const recovery = await partRecovery(stack, options);
  const fsyncs = options.countFsyncs > 0 ? await countFsyncs(stack, options.countFsyncs) : null;
  const verification = await verify(stack, { executorDb: stack.executorDb, ledgerDb: ledgerFiles.config.database_path }, options.engine);
  agent.destroy();
  const stopped = await stopAll();
  for (const [name, how] of Object.entries(stopped)) {
    if (how !== null && (how.forced || how.code !== 0)) fail(`${name} did not stop cleanly on SIGTERM (${how.signal ?? `exit ${how.code}`}${how.forced ? ', killed' : ''}).`);
  }
  return { latency, sustained, recovery, fsyncs, verification, setUp, firstStart, stopped, filesystem: filesystemOf(workDir) };
}

/** Where a managed_local executor keeps its Temporal server's state: read at clean-up, so no server outlives the run. */
let temporalDataDir = null;

async function stopEverything() {
  agent.destroy();
  await stopAll();
  if (temporalDataDir !== null) killRecordedTemporal(temporalDataDir);
}

/** Both engines, each run on fresh state by a child run of this script, then side by side. */
function compareEngines(options, argv) {
  const passOn = [];
  for (let index = 0; index < argv.length; index += 1) {
    if (argv[index] === '--engine' || argv[index] === '--temporal-cli') index += 1;
    else if (!argv[index].startsWith('--engine=') && !argv[index].startsWith('--temporal-cli=')) passOn.push(argv[index]);
  }
  if (options.temporalCli !== null) passOn.push('--temporal-cli', options.temporalCli);
  const results = runPerEngine(fileURLToPath(import.meta.url), options.engines, passOn);
  const [base, other] = options.engines.map((engine) => results[engine]);
  const cell = (engine, pick) => pick(results[engine]);
  const row = (label, pick) => [label, ...options.engines.map((engine) => cell(engine, pick))];
  const text = (value, digits = 1) => (typeof value === 'number' ? value.toFixed(digits) : String(value));
  const lines = [
    '',
    `== side by side: ${options.engines.join(' vs ')} ==`,
    ...table(
      ['', ...options.engines],
      [
        row('POST -> succeeded p50 ms (concurrency 1)', (r) => text(r.latency.total_ms.p50)),
        row('POST -> succeeded p99 ms (concurrency 1)', (r) => text(r.latency.total_ms.p99)),
        row(`sustained executions/s (${base.sustained.executions} at concurrency ${base.sustained.concurrency})`, (r) => text(r.sustained.per_second)),
        row('restart: spawn -> /readyz 200 ms', (r) => text(r.recovery.restart_ms.readyz, 0)),
        row(`recovery: spawn -> all ${base.recovery.executions} terminal s`, (r) => text(r.recovery.all_terminal_s, 2)),
        row('recovery: end states', (r) => Object.entries(r.recovery.states).map(([state, n]) => `${state} ${n}`).join(', ')),
        row('duplicate submissions', (r) => String(r.verification.duplicate_submissions)),
        row('verification', (r) => (r.verification.ok ? 'OK' : 'PROBLEMS')),
      ],
    ),
  ];
  const targets = other === undefined
    ? null
    : {
        p50_ratio: Math.round((other.latency.total_ms.p50 / base.latency.total_ms.p50) * 100) / 100,
        p50_within_2x: other.latency.total_ms.p50 <= 2 * base.latency.total_ms.p50,
        sustained_at_least_50_per_s: other.sustained.per_second >= 50,
        recovery_all_terminal: Object.keys(other.recovery.states).every((state) => state === 'succeeded' || state === 'reconciliation'),
        zero_duplicates: options.engines.every((engine) => results[engine].verification.duplicate_submissions === 0),
      };
  if (targets !== null) {
    lines.push(
      '',
      `targets for ${options.engines[1]}: p50 within 2x of ${options.engines[0]} — ${targets.p50_ratio}x, ${targets.p50_within_2x ? 'met' : 'NOT met'}; at least 50 executions/s — ${other.sustained.per_second}, ${targets.sustained_at_least_50_per_s ? 'met' : 'NOT met'}; recovery ends with all terminal — ${targets.recovery_all_terminal ? 'met' : 'NOT met'}; zero duplicate submissions — ${targets.zero_duplicates ? 'met' : 'NOT met'}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  process.stdout.write(`RESULT ${JSON.stringify({ benchmark: 'durable-execution-engines', engines: results, targets })}\n`);
  return options.engines.every((engine) => results[engine].verification.ok) ? 0 : 1;
}

const argv = process.argv.slice(2);
let parsed;
try {
  parsed = parseArgs(argv);
} catch (error) {
  process.stderr.write(`bench/durable-execution: ${error instanceof BenchError ? error.message : String(error)}\n`);
  process.exit(1);
}
if (parsed.engines.length > 1) {
  try {
    process.exit(compareEngines(parsed, argv));
  } catch (error) {
    process.stderr.write(`bench/durable-execution: ${error instanceof BenchError ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

await runBenchmark({
  name: 'durable-execution',
  parseArgs: () => ({ ...parsed, engine: parsed.engines[0] }),
  main,
  stop: stopEverything,
  report: (options, outcome, workDir) => {
    report(options, outcome, workDir);
    if (outcome.verification.problems.length === 0) return 0;
    process.stderr.write('bench/durable-execution: the verification found a correctness problem (see PROBLEMS above).\n');
    return 1;
  },
});
