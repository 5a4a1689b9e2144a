// Benchmark: full authorization cycles per second against a real `lexec ledger serve` on loopback.
// Prints figures; asserts nothing about timings and exits 0 whatever they are (a non-zero exit
// means the benchmark itself could not run: the ledger did not start, or a step answered with an
// unexpected status, or an authorization did not end up settled).
//
//   node bench/ledger-cycles/run.mjs [--cycles N] [--warmup N] [--concurrency 1,8]
//                                    [--client http|fetch] [--tls] [--dir PATH]
//                                    [--max-requests-per-hour N] [--webhooks [--webhook-events T,…]] [--scrape-ms N]
//                                    [--installation-budget day|week|month] [--history N] [--pin]   (from the repository root)
//
// With --pin (Linux, util-linux taskset) the ledger's request thread runs alone on CPU 0 and
// everything else — the ledger's other threads (its webhook delivery thread among them), this
// process (the client) and the receivers — on CPU 1, pinned before each measured level: the
// figure of a ledger whose request thread has a core to itself, as on a host whose clients and
// webhook receivers are other machines. To compare builds, run both pinned.
//
// BENCH_LEDGER_NODE_OPTIONS, when set, is the ledger child's NODE_OPTIONS (nothing else of this
// process's environment but PATH and HOME reaches it): `--cpu-prof --cpu-prof-dir=DIR` profiles
// its request thread and its webhook delivery thread, one file each.
//
// With --installation-budget PERIOD (issue 28) the installation has a budget for that calendar
// period (UTC), set so high it never refuses: every request then also sums what all agents spent
// and hold since the period began, in its transaction — how a calendar budget's cost grows with
// the rows of its period (the daily cap sums the agent's last 24 hours either way).
//
// With --scrape-ms N (issue 28) a Prometheus-like scraper reads GET /metrics with a metrics
// capability every N ms while the cycles run, and each scrape must answer 200 with text; its round
// trips are reported (p50 and the longest).
//
// With --history N the ledger starts on a database that already holds a long history: N settled
// authorizations of ten other agents (three targets and none, older than every window), their
// settlements and events, and a removed webhook sink's N delivered deliveries — written with SQL
// through the build's own migrations (dist/) before the ledger starts, not timed. What a scrape
// or a request costs on a ledger that has run for a long time.
//
// With --webhooks (issue 28) the ledger also delivers its events to two webhook sinks on loopback,
// receivers in a process of their own (receivers.mjs): one answers 200 at once, the other never answers (each of its
// deliveries in flight until the ledger's 10 s timeout, then retried). Reported besides: commit →
// webhook receipt at the prompt receiver (its arrival time minus the event's `at`, written in the
// event's transaction just before the commit), p50 and p95 over every event of the run, after
// waiting (at most 30 s) for every event to arrive.
//
// The ledger is a child process, `node bin/run.js ledger serve --config <tmp>/ledger.json`, in a
// fresh temporary directory under --dir (default the OS temp dir): port 0 on 127.0.0.1, its own
// SQLite database in WAL mode with synchronous=FULL, so every committed write is fsynced. It is
// stopped with SIGTERM at the end, also when the benchmark fails or is interrupted, and the
// directory is removed.
//
// Set-up (not timed): one agent whose policy has an approval threshold of 0 (every request waits
// for a human) and caps far above anything the run can spend; an agent, an approver and an
// executor capability, generated here and registered by their SHA-256 digest. With
// --max-requests-per-hour N the policy also sets that velocity limit, so every request is counted
// in the ledger's request log (N must exceed the run's cycles, or requests are refused).
//
// One cycle (cycles.mjs, shared with bench/ledger-hosts), each step an HTTP request checked for its
// expected status and state:
//   request   agent     POST /authorizations                              201, requested
//   approve   approver  POST /authorizations/{id}/approve                 200, approved
//   resolve   executor  GET  /executor/authorizations/{id}                200, approved
//   claim     executor  POST /executor/authorizations/{id}/claim          200, claimed
//   settle    executor  POST /executor/authorizations/{id}/settle         200, settled (precise receipt)
// Any other answer aborts the benchmark with the step, the status and the body.
//
// With --tls (issue 29) the ledger serves HTTPS on 127.0.0.1 (`http.tls`): before it starts, a
// team CA and a server certificate for 127.0.0.1 are made with the project's own code
// (dist/launcher/tls/team-ca.js, as `lexec stack tls init` and `issue --host 127.0.0.1` make them)
// in a LEXEC_HOME inside the temporary directory, and the client (node:https, keep-alive) trusts
// that CA only.
//
// The client is node:http with a keep-alive Agent by default; `--client fetch` uses Node's global
// fetch (undici, also keep-alive), which costs the client about twice the CPU per request, and the
// client shares the machine's cores with the ledger.
//
// For each concurrency level (default 1, then 8 independent cycle loops sharing one agent), W
// warm-up cycles (default 50) and then N measured cycles (default 500) run at that concurrency.
// Reported per level: cycles per second (N / wall time of the measured cycles), p50/p99 latency
// of each step and of the whole cycle, and the CPU time the ledger process (from /proc; and its
// request thread alone — the webhook delivery runs in a thread of its own) and the client used
// per cycle. At the end every cycle's authorization (warm-up included) is read back
// by id with the admin capability and must be `settled` with its receipt, and no authorization may
// be left requested, approved or claimed. A last context figure, taken after the ledger stopped,
// times 4 KiB writes + fdatasync in the same directory: what one durable commit pays at least.
import { fork, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fail, parseCount, runBenchmark } from '../lib/harness.mjs';
import { followLedger } from '../lib/ledger-child.mjs';
import { filesystemOf, fsyncProbe, percentile, processCpuMs, threadCpuMs } from '../lib/measure.mjs';
import { BIG_CAP, expect, makeClient, registerCredential, round2, runCycles, setUp, STEPS, summarise, verify } from './cycles.mjs';
import { benchTls } from './tls.mjs';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(dirname(benchDir));
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

const USAGE =
  'usage: node bench/ledger-cycles/run.mjs [--cycles N (default 500)] [--warmup N (default 50)] [--concurrency LIST (default 1,8)] [--client http|fetch (default http)] [--tls (HTTPS, a bench CA)] [--dir PATH (default the OS temp dir)] [--max-requests-per-hour N (default: no velocity limit)] [--webhooks (two sinks: one prompt receiver, one hanging)] [--webhook-events TYPES (the sinks take only these; default all)] [--scrape-ms N (GET /metrics every N ms during the cycles)] [--installation-budget day|week|month (a budget that never refuses: every request sums the period)] [--history N (start on a database holding N settled authorizations of other agents, their events and deliveries)] [--pin (Linux: the ledger\'s request thread alone on CPU 0, everything else on CPU 1)]';

function parseArgs(argv) {
  const options = { cycles: 500, warmup: 50, client: 'http', tls: false, dir: tmpdir(), concurrency: [1, 8], maxRequestsPerHour: null, webhooks: false, webhookEvents: null, scrapeMs: null, pin: false, installationBudget: null, history: 0 };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (name === '--cycles' || name === '--warmup') {
      options[name.slice(2)] = parseCount(name, inline ?? argv[++index], name === '--cycles' ? 1 : 0);
    } else if (name === '--max-requests-per-hour') {
      options.maxRequestsPerHour = parseCount(name, inline ?? argv[++index], 1);
    } else if (name === '--client') {
      const value = inline ?? argv[++index];
      if (value !== 'fetch' && value !== 'http') fail(`--client needs "fetch" or "http" (got ${JSON.stringify(value ?? null)}).`);
      options.client = value;
    } else if (name === '--concurrency') {
      const value = inline ?? argv[++index];
      const levels = (value ?? '').split(',');
      if (levels.some((level) => !/^[1-9]\d*$/.test(level) || Number(level) > 64)) fail(`--concurrency needs a comma-separated list of whole numbers 1-64 (got ${JSON.stringify(value ?? null)}).`);
      options.concurrency = levels.map(Number);
    } else if (name === '--dir') {
      const value = inline ?? argv[++index];
      if (value === undefined || value === '') fail('--dir needs a directory.');
      options.dir = resolve(value);
    } else if (name === '--tls') {
      options.tls = true;
    } else if (name === '--pin') {
      options.pin = true;
    } else if (name === '--webhooks') {
      options.webhooks = true;
    } else if (name === '--webhook-events') {
      const value = inline ?? argv[++index];
      if (value === undefined || !/^[a-z_.]+(,[a-z_.]+)*$/.test(value)) fail('--webhook-events needs a comma-separated list of event types.');
      options.webhookEvents = value.split(',');
    } else if (name === '--installation-budget') {
      const value = inline ?? argv[++index];
      if (value !== 'day' && value !== 'week' && value !== 'month') fail(`--installation-budget needs day, week or month (got ${JSON.stringify(value ?? null)}).`);
      options.installationBudget = value;
    } else if (name === '--history') {
      options.history = parseCount(name, inline ?? argv[++index], 0);
    } else if (name === '--scrape-ms') {
      options.scrapeMs = parseCount(name, inline ?? argv[++index], 10);
    } else if (name === '--help' || name === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      fail(`unknown argument ${JSON.stringify(arg)}; ${USAGE}`);
    }
  }
  if (options.pin && (process.platform !== 'linux' || cpus().length < 2)) fail('--pin needs Linux (taskset, /proc) and at least 2 CPUs.');
  if (options.tls && options.client === 'fetch') fail('--tls needs the http client (node:https with the bench CA); drop --client fetch.');
  return options;
}

// --- the ledger child process ------------------------------------------------------------------

// The ledger child as bench/lib/ledger-child.mjs follows it (null fields until it is spawned).
let ledger = { child: null, exited: null, stderr: '', exit: null, tail: () => '' };
const stderrTail = () => ledger.tail();

/** Spawns `lexec ledger serve` and resolves with its port once it logs `ledger_started`. */
function startLedger(configPath) {
  const env = {};
  for (const name of ['PATH', 'HOME']) if (process.env[name] !== undefined) env[name] = process.env[name];
  if (process.env.BENCH_LEDGER_NODE_OPTIONS) env.NODE_OPTIONS = process.env.BENCH_LEDGER_NODE_OPTIONS;
  const child = spawn(process.execPath, ['bin/run.js', 'ledger', 'serve', '--config', configPath], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  ledger = followLedger(child, { label: 'the ledger', timeoutMs: START_TIMEOUT_MS });
  return ledger.started;
}

/** Stops the ledger with SIGTERM (SIGKILL if it has not exited after 10 s); returns how it ended. */
async function stopLedger() {
  const child = ledger.child;
  if (child === null) return null;
  if (ledger.exit === null) child.kill('SIGTERM');
  let timer;
  const outcome = await Promise.race([ledger.exited, new Promise((done) => (timer = setTimeout(() => done(null), STOP_TIMEOUT_MS)))]);
  clearTimeout(timer);
  if (outcome === null) {
    child.kill('SIGKILL');
    await ledger.exited;
    return { ...ledger.exit, forced: true };
  }
  return { ...outcome, forced: false };
}

// Last resort (uncaught error, process.exit elsewhere): never leave the ledger running.
process.on('exit', () => {
  if (ledger.child !== null && ledger.exit === null) ledger.child.kill('SIGTERM');
});

/** The ledger's exit and stderr tail, for a failed call's message. */
const ledgerFailure = () => `${ledger.exit === null ? '' : ` (the ledger exited: ${ledger.exit.signal ?? `exit ${ledger.exit.code}`})`}${stderrTail()}`;

/**
 * CPU time (user + system) the ledger process has used so far, in ms, from /proc (Linux; clock
 * ticks of 10 ms); null where /proc is not available. Time blocked in fsync is not CPU time.
 */
const ledgerCpuMs = () => processCpuMs(ledger.child?.pid);
const ledgerRequestThreadCpuMs = () => threadCpuMs(ledger.child?.pid);

// --- webhook sinks (--webhooks) -----------------------------------------------------------------

/**
 * Two receivers on loopback in a child process (receivers.mjs): `/prompt` answers 200 and notes
 * when each event arrived; `/hang` never answers.
 */
async function startReceivers() {
  const child = fork(fileURLToPath(new URL('./receivers.mjs', import.meta.url)), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const answer = (key) =>
    new Promise((done, failed) => {
      const onMessage = (message) => {
        if (message !== null && typeof message === 'object' && key in message) {
          child.off('message', onMessage);
          child.off('exit', onExit);
          done(message[key]);
        }
      };
      const onExit = (code) => failed(new Error(`the webhook receivers exited (code ${code}) before answering`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const origin = await answer('origin');
  return {
    origin,
    pid: child.pid,
    async arrivals() {
      const waiting = answer('arrivals');
      child.send('arrivals');
      return new Map(await waiting);
    },
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.send('close');
      await exited;
    },
  };
}

async function addSinks(client, adminToken, receivers, workDir, events) {
  mkdirSync(join(workDir, 'secrets'), { mode: 0o700 });
  const secretFile = join(workDir, 'secrets', 'webhook.secret');
  writeFileSync(secretFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  for (const path of ['/prompt', '/hang']) await expect(client, 'add webhook sink', 201, 'POST', '/webhooks', adminToken, { url: `${receivers.origin}${path}`, secret_file: secretFile, ...(events === null ? {} : { events }) });
}

/** Every event id written so far (after the sinks were added: they start after the latest event). */
async function eventIds(client, adminToken, types = null) {
  const ids = [];
  let after = '0';
  for (;;) {
    const page = await expect(client, 'read events', 200, 'GET', `/events?after=${after}&limit=500${types === null ? '' : `&types=${types.join(',')}`}`, adminToken);
    ids.push(...page.events.map((event) => event.event_id));
    after = page.next_after;
    if (!page.more) return ids;
  }
}

async function webhookFigures(client, adminToken, receivers, firstEventId, types) {
  const wanted = (await eventIds(client, adminToken, types)).filter((id) => BigInt(id) > firstEventId);
  const deadline = Date.now() + 30_000;
  let arrivals = await receivers.arrivals();
  while (wanted.some((id) => !arrivals.has(id)) && Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, 50));
    arrivals = await receivers.arrivals();
  }
  const sorted = wanted.filter((id) => arrivals.has(id)).map((id) => arrivals.get(id)).sort((a, b) => a - b);
  return { events: wanted.length, received: sorted.length, p50: sorted.length === 0 ? null : percentile(sorted, 50), p95: sorted.length === 0 ? null : percentile(sorted, 95) };
}

// --- figures ------------------------------------------------------------------------------------



function report(options, outcome, workDir) {
  const { client, levels, verification, probe, stopped, filesystem, webhooks, scrapes } = outcome;
  const cpuList = cpus();
  const facts = {
    node: process.version,
    cpus: cpuList.length,
    cpu_model: cpuList[0]?.model?.trim() ?? null,
    platform: `${process.platform}-${process.arch}`,
    filesystem,
    client: options.client,
    tls: options.tls,
    pinned: options.pin,
    cycles: options.cycles,
    warmup: options.warmup,
    max_requests_per_hour: options.maxRequestsPerHour,
    installation_budget: options.installationBudget,
    history: options.history,
  };

  const header = ['step', ...levels.flatMap((level) => [`c=${level.concurrency} p50 ms`, `c=${level.concurrency} p99 ms`])];
  const rows = [...STEPS, 'cycle'].map((step) => [step, ...levels.flatMap((level) => [level.latency[step].p50.toFixed(2), level.latency[step].p99.toFixed(2)])]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const format = (row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');
  const lines = [
    `Ledger authorization cycles on loopback${options.tls ? ' over HTTPS (TLS, a bench CA)' : ' over plain HTTP'} — ${facts.node}, ${facts.cpus} CPUs (${facts.cpu_model ?? 'unknown CPU'}), ${facts.platform}`,
    `ledger: lexec ledger serve child process, SQLite WAL + synchronous=FULL on ${facts.filesystem ?? 'unknown filesystem'} (${workDir})`,
    `client: ${client.description}; ${facts.cycles} measured cycles per level after ${facts.warmup} warm-up cycles`,
    `metrics: ${scrapes === null ? 'not scraped' : `GET /metrics every ${scrapes.every_ms} ms: ${scrapes.scrapes} scrapes (largest ${scrapes.largest_bytes} bytes; round trip p50 ${scrapes.scrape_ms.p50} ms, max ${scrapes.scrape_ms.max} ms)`}`,
    `webhooks: ${webhooks === null ? 'none' : `two sinks (one answering 200 at once, one never answering; events: ${options.webhookEvents === null ? 'all' : options.webhookEvents.join(',')}); commit → receipt p50 ${webhooks.p50} ms, p95 ${webhooks.p95} ms; ${webhooks.received}/${webhooks.events} events received`}`,
    `pinned: ${options.pin ? "yes (the ledger's request thread alone on CPU 0; its other threads, the client and the receivers on CPU 1)" : 'no'}`,
    `velocity limit: ${options.maxRequestsPerHour === null ? 'none (requests not counted)' : `max_requests_per_hour ${options.maxRequestsPerHour} (every request counted)`}`,
    `installation budget: ${options.installationBudget === null ? 'none' : `a ${options.installationBudget} budget that never refuses (every request sums the period)`}`,
    `history: ${options.history === 0 ? 'none (a fresh database)' : `${options.history} settled authorizations of other agents, with their settlements, events and delivered deliveries, before the start`}`,
    '',
    ...levels.map((level) => {
      const thread = level.requestThreadCpuPerCycle === null ? '' : `, request thread ${level.requestThreadCpuPerCycle.toFixed(2)}`;
      const server = level.serverCpuPerCycle === null ? 'ledger CPU unknown' : `ledger CPU ${level.serverCpuPerCycle.toFixed(2)} ms/cycle (${(level.serverBusy * 100).toFixed(0)}% of one core${thread})`;
      const rate = `${level.cyclesPerSecond.toFixed(1)} cycles/s (${level.cycles} cycles in ${(level.wallMs / 1000).toFixed(2)} s)`;
      return `concurrency ${level.concurrency}: ${rate}; ${server}; client CPU ${level.clientCpuPerCycle.toFixed(2)} ms/cycle`;
    }),
    '',
    format(header),
    format(widths.map((width) => '-'.repeat(width))),
    ...rows.map(format),
    '',
    `verified: ${verification.settled}/${verification.total} authorizations settled (each read back by id; none left requested, approved or claimed)`,
    `fsync floor: ${probe.writes} x (4 KiB write + fdatasync) in the same directory: p50 ${probe.p50.toFixed(2)} ms, p99 ${probe.p99.toFixed(2)} ms`,
    `ledger stopped: ${stopped === null ? 'never started' : `${stopped.signal ?? `exit ${stopped.code}`}${stopped.forced ? ' (SIGKILL after SIGTERM timed out)' : ' after SIGTERM'}`}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  const result = {
    benchmark: 'ledger-cycles',
    ...facts,
    levels: levels.map((level) => ({
      concurrency: level.concurrency,
      cycles: level.cycles,
      wall_s: round2(level.wallMs / 1000),
      cycles_per_second: round2(level.cyclesPerSecond),
      ledger_cpu_ms_per_cycle: level.serverCpuPerCycle === null ? null : round2(level.serverCpuPerCycle),
      ledger_request_thread_cpu_ms_per_cycle: level.requestThreadCpuPerCycle === null ? null : round2(level.requestThreadCpuPerCycle),
      ledger_cpu_busy: level.serverBusy === null ? null : round2(level.serverBusy),
      client_cpu_ms_per_cycle: round2(level.clientCpuPerCycle),
      latency_ms: Object.fromEntries(Object.entries(level.latency).map(([step, { p50, p99 }]) => [step, { p50: round2(p50), p99: round2(p99) }])),
    })),
    metrics_scrapes: scrapes ?? null,
    webhooks: webhooks === null ? null : { events: webhooks.events, received: webhooks.received, commit_to_receipt_ms: { p50: webhooks.p50, p95: webhooks.p95 } },
    verified_settled: verification.settled,
    verified_total: verification.total,
    fsync_probe_ms: { writes: probe.writes, p50: round2(probe.p50), p99: round2(probe.p99) },
    ledger_exit: stopped === null ? null : { code: stopped.code, signal: stopped.signal, forced: stopped.forced },
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

// --- main ---------------------------------------------------------------------------------------

// --- a long history (--history) ----------------------------------------------------------------

const HISTORY_SQL = `
  INSERT INTO owner (account_id, created_at) VALUES ('acct_bench', 0);
  INSERT INTO agents (agent_id, name, status, created_at)
    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9) SELECT 'agt_history_' || i, 'history-' || i, 'active', 0 FROM n;
  INSERT INTO webhook_sinks (sink_id, url, format, event_types, secret_path, created_at, removed_at, cursor_event_id)
    VALUES ('whk_history', 'http://127.0.0.1:9/history', 'lexec', NULL, '/nonexistent/history.secret', 0, 1, @count);
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @count)
  INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, execution_id, created_at, decided_at, claimed_at, closed_at, expires_at, target_id)
    SELECT 'tok_history_' || i, 'acct_bench', 'agt_history_' || (i % 10), 3000, 6, 'USD', 1, 'settled', 'exe_history_' || i, @start + i, @start + i, @start + i, @start + i, @start + i + 3600000,
      CASE i % 4 WHEN 0 THEN NULL ELSE 'lexec:target:v1:history-' || (i % 4) END FROM n;
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @count)
  INSERT INTO settlements (settlement_id, token_id, receipt_id, execution_id, receipt_shape, amount_units, units_scale, currency, amount_cents, price_model_snapshot, receipt_fingerprint, created_at)
    SELECT 'stl_history_' || i, 'tok_history_' || i, 'rcpt_history_' || i, 'exe_history_' || i, 'precise', 3000, 6, 'USD', 1, '{}', 'history', @start + i FROM n;
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @count)
  INSERT INTO events (event_id, at, type, agent_id, target_id, token_id, amount_units, details)
    SELECT i, @start + i, 'authorization.settled', 'agt_history_' || (i % 10), NULL, 'tok_history_' || i, 3000, '{}' FROM n;
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @count)
  INSERT INTO webhook_deliveries (sink_id, event_id, status, attempts, created_at, next_attempt_at, last_attempt_at, last_http_status, delivered_at)
    SELECT 'whk_history', i, 'delivered', 1, @start + i, NULL, @start + i, 200, @start + i FROM n;
`;

/**
 * Writes `count` settled authorizations (with settlements, events and delivered deliveries) into a
 * new database at `path`, migrated by this build's own migrations: a year and more before now, so
 * no rolling window or calendar period counts them.
 */
async function writeHistory(path, count) {
  const { openDatabase } = await import(pathToFileURL(join(root, 'dist', 'storage', 'open-database.js')).href);
  const { LEDGER_MIGRATIONS } = await import(pathToFileURL(join(root, 'dist', 'ledger', 'store', 'migrations.js')).href);
  const db = openDatabase(path, LEDGER_MIGRATIONS);
  try {
    const start = Date.now() - 400 * 86_400_000 - count;
    db.transaction(() => {
      for (const statement of HISTORY_SQL.split(';').map((text) => text.trim()).filter((text) => text !== '')) {
        const prepared = db.prepare(statement);
        const names = ['count', 'start'].filter((name) => statement.includes(`@${name}`));
        prepared.run(Object.fromEntries(names.map((name) => [name, name === 'count' ? count : start])));
      }
    })();
  } finally {
    db.close();
  }
}

// --- metrics scraper (--scrape-ms) -------------------------------------------------------------

/** Reads GET /metrics with a metrics capability every `everyMs` until stopped; answers how many scrapes, the largest body and how long the scrapes took (round trip, ms). */
async function startScraper(client, adminToken, capability, everyMs) {
  const token = await registerCredential(client, adminToken, capability.generateCapability, capability.capabilityDigest, 'metrics');
  let count = 0;
  let largest = 0;
  const took = [];
  let failure = null;
  let running = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      const started = performance.now();
      const body = await expect(client, 'scrape metrics', 200, 'GET', '/metrics', token).catch((error) => {
        failure ??= error;
        return '';
      });
      took.push(performance.now() - started);
      if (typeof body === 'string' && body.includes('lexec_ledger_')) count += 1;
      largest = Math.max(largest, typeof body === 'string' ? body.length : 0);
    });
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
      if (failure !== null) throw failure;
      took.sort((a, b) => a - b);
      const at = (q) => (took.length === 0 ? null : round2(took[Math.min(took.length - 1, Math.floor(q * took.length))]));
      return { every_ms: everyMs, scrapes: count, largest_bytes: largest, scrape_ms: { p50: at(0.5), max: at(1) } };
    },
  };
}

/**
 * --pin: the ledger's request thread (its main thread: thread id = process id) alone on CPU 0;
 * the ledger's other threads (the webhook delivery thread, V8's and libuv's), this process (the
 * client) and the receivers on CPU 1 — a ledger host whose request thread has a core of its own,
 * as when the clients and the receivers are other machines. Done before each measured level, so
 * threads started since are pinned too. Uses util-linux `taskset`.
 */
function pinThreads(ledgerPid, otherPids) {
  const threads = (pid) => readdirSync(`/proc/${pid}/task`).map(Number);
  const pin = (tid, cpu) => {
    const done = spawnSync('taskset', ['-p', '-c', String(cpu), String(tid)], { encoding: 'utf8' });
    if (done.status !== 0) fail(`--pin: taskset could not pin thread ${tid} to CPU ${cpu} (${(done.stderr || done.error?.message || `exit ${done.status}`).trim()}).`);
  };
  for (const tid of threads(ledgerPid)) pin(tid, tid === ledgerPid ? 0 : 1);
  for (const pid of otherPids) for (const tid of threads(pid)) pin(tid, 1);
}

async function main(options, workDir) {
  const missing = ['dist/credentials/capability.js', 'dist/commands/ledger/serve.js', 'oclif.manifest.json'].filter((name) => !existsSync(join(root, name)));
  if (missing.length > 0) fail(`${missing.join(' and ')} missing in ${root}; run \`npm run build\` first.`);
  const capability = await import(pathToFileURL(join(root, 'dist', 'credentials', 'capability.js')).href);

  const configPath = join(workDir, 'ledger.json');
  const adminPath = join(workDir, 'credentials', 'admin.capability');
  const config = {
    schema_version: 1,
    http: { host: '127.0.0.1', port: 0 },
    database_path: join(workDir, 'ledger.db'),
    admin_capability_path: adminPath,
    contract_level: 'v4.5',
    authorization_ttl_seconds: 3600,
    default_policy: {
      per_authorization_cap_units: BIG_CAP,
      daily_cap_units: BIG_CAP,
      approval_threshold_units: '0',
      units_scale: 6,
      currency: 'USD',
    },
  };
  const tls = options.tls ? await benchTls(root, workDir, ['127.0.0.1']) : null;
  if (tls !== null) config.http.tls = { certificate_file: tls.certificateFile, key_file: tls.keyFile };
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  if (options.history > 0) await writeHistory(config.database_path, options.history);

  const port = await startLedger(configPath);
  const adminToken = readFileSync(adminPath, 'utf8').trim();
  const client = makeClient(options.client, { host: '127.0.0.1', port, ca: tls?.caPem ?? null, describeFailure: ledgerFailure });
  const receivers = options.webhooks ? await startReceivers() : null;
  try {
    const actors = await setUp(client, adminToken, capability, options.maxRequestsPerHour);
    if (options.installationBudget !== null) {
      await expect(client, 'set the installation budget', 200, 'PUT', '/budgets/installation', adminToken, { [`${options.installationBudget}_budget_units`]: BIG_CAP, units_scale: 6, currency: 'USD' });
    }
    if (receivers !== null) await addSinks(client, adminToken, receivers, workDir, options.webhookEvents);
    const scraper = options.scrapeMs === null ? null : await startScraper(client, adminToken, capability, options.scrapeMs);
    const firstEventId = receivers === null ? 0n : BigInt((await eventIds(client, adminToken)).at(-1) ?? '0');
    const ids = [];
    const levels = [];
    for (const concurrency of options.concurrency) {
      if (options.warmup > 0) await runCycles(client, actors, concurrency, options.warmup, ids, ledgerCpuMs, ledgerRequestThreadCpuMs);
      if (options.pin) pinThreads(ledger.child.pid, [process.pid, ...(receivers === null ? [] : [receivers.pid])]);
      levels.push(summarise(concurrency, await runCycles(client, actors, concurrency, options.cycles, ids, ledgerCpuMs, ledgerRequestThreadCpuMs)));
    }
    const scrapes = scraper === null ? null : await scraper.stop();
    const verification = await verify(client, adminToken, actors.agentId, ids);
    if (verification.settled !== ids.length) fail(`verify: ${verification.settled} of ${ids.length} authorizations settled.`);
    const webhooks = receivers === null ? null : await webhookFigures(client, adminToken, receivers, firstEventId, options.webhookEvents);
    client.close();
    const stopped = await stopLedger();
    const probe = fsyncProbe(workDir);
    return { client, levels, verification, probe, stopped, filesystem: filesystemOf(workDir), webhooks, scrapes };
  } finally {
    client.close();
    await receivers?.close();
  }
}

await runBenchmark({ name: 'ledger-cycles', what: 'the ledger', parseArgs: () => parseArgs(process.argv.slice(2)), main, stop: stopLedger, report });
