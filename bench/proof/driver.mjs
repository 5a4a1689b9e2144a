// The randomized proof driver (issue 14 item 4; docs/reliability.md "Randomized runs"): one run =
// one seed = a fresh sandbox stack started by the real `lexec stack start`, concurrent `lexec run`
// executions, and — at offsets the seed chooses — SIGKILLs of the executor, the ledger, the
// sandbox provider and (on Temporal) the executor's managed Temporal child, and provider faults.
// Once the load is done and the stack is at rest, the independent invariant checker
// (test/proof/check-invariants.ts, which shares no code with lexec) reads everything the stack
// wrote. The seed fixes the whole schedule (how many executions, their sizes and start offsets,
// what is killed or faulted and when); what real processes make of it in real time does vary,
// so a violation is reproduced by running its seed again, usually more than once.
//
// What a run records beside its schedule is what it actually caused: each kill's outcome (a pid
// is SIGKILLed only while it is still the process its stack published — the start time in
// /proc/<pid>/stat matches the one published with it — so a reused pid is never killed; a target
// down already is `no_process`), each fault the sandbox took or refused, and when each happened.
// A run that broke a rule keeps its stack home for inspection; a clean one removes it.
//
// Used by bench/proof/run.mjs (by hand, many seeds) and test/proof/randomized.test.ts (CI, a few
// fixed seeds). Needs a build (`npm run build`) and Node.js 24 (the checker is TypeScript, loaded
// with Node's type stripping).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { checkInvariants } from '../../test/proof/check-invariants.ts';
import { freePorts, sandboxStackHome } from '../lib/sandbox-home.mjs';
import { createRunRegistry, killVerified, lexec, publishedProcess, settleHome, stopStack } from './processes.mjs';

/** mulberry32: a small, fast, seedable PRNG (32-bit state); `int(n)` is uniform in [0, n). */
export function prng(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (list) => list[Math.floor(next() * list.length)] };
}

/** Provider faults the schedule may set (the sandbox's control API); each lasts for `times` requests. */
const FAULTS = [
  { kind: 'drop_after_receipt', times: 1 },
  { kind: 'http_error', route: 'submit', status: 503, times: 1 },
  { kind: 'http_error', route: 'status', status: 503, times: 2 },
  { kind: 'complete_with_error', times: 1 },
  { kind: 'fewer_images', omit: 1, times: 1 },
  { kind: 'latency', route: 'status', ms: 400, times: 3 },
];

/**
 * What a seed makes of a run, before anything runs: the executions (image count, start offset)
 * and the chaos events (kill or fault, at an offset from the start of the load).
 */
export function scheduleOf(seed, engine) {
  const random = prng(seed);
  const executions = Array.from({ length: 3 + random.int(4) }, (_, index) => ({ index, images: 1 + random.int(3), at: random.int(3_000) }));
  const targets = engine === 'temporal' ? ['executor', 'ledger', 'sandbox', 'temporal'] : ['executor', 'ledger', 'sandbox'];
  const kills = Array.from({ length: 1 + random.int(3) }, () => ({ kind: 'kill', target: random.pick(targets), at: random.int(6_000) }));
  const faults = Array.from({ length: random.int(3) }, () => ({ kind: 'fault', fault: random.pick(FAULTS), at: random.int(4_000) }));
  const chaos = [...kills, ...faults].sort((a, b) => a.at - b.at);
  return { seed, engine, executions, chaos };
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function envelope(run) {
  try {
    return JSON.parse(run.stdout);
  } catch {
    return null;
  }
}

/** The profile written for a Temporal run: the executor starts and supervises its own Temporal child. */
async function useManagedTemporal(profileDir, temporalCli) {
  const [temporal, temporalUi] = await freePorts(2);
  const file = join(profileDir, 'profile.toml');
  const text = readFileSync(file, 'utf8')
    .replace(/^\[ports\]$/m, `[ports]\ntemporal = ${temporal}\ntemporal_ui = ${temporalUi}`)
    .replace(
      /^\[workflow_engine\]\nmode = "embedded"$/m,
      `[workflow_engine]\nmode = "managed_local"\ntemporal_cli = { path = ${JSON.stringify(temporalCli)}, version = "1.5.1" }\nnamespace = "default"\ntask_queue = "lexec-executions"`,
    );
  writeFileSync(file, text);
}

/**
 * One execution as a diligent agent runs it: `lexec run`; when it ends without an outcome but with
 * an authorization to continue (the command says `--authorization <id>`), the same command again
 * with it; a run that got no authorization at all is started afresh. Gives up after `patienceMs`.
 */
async function agentRun(execution, env, outDir, registry, patienceMs = 120_000) {
  let authorization = null;
  let last = null;
  const errors = [];
  const deadline = Date.now() + patienceMs;
  let attempt = 0;
  for (; Date.now() < deadline; attempt += 1) {
    const args = ['run', `proof ${execution.index}: a lighthouse at dusk`, '--count', String(execution.images), '--out', outDir, '--json', '--timeout', '120'];
    if (authorization !== null) args.push('--authorization', authorization);
    const run = await lexec(args, env, 150_000, registry);
    const document = envelope(run);
    if (document?.ok === true) return { outcome: document.result.execution?.state ?? 'unknown', commands: attempt + 1, errors };
    last = document?.error?.code ?? `exit ${run.code}`;
    if (last === 'execution_in_reconciliation') return { outcome: 'reconciliation', commands: attempt + 1, errors };
    if (last === 'execution_failed') return { outcome: 'failed', commands: attempt + 1, errors };
    errors.push(`${last}: ${String(document?.error?.message ?? "").slice(0, 160)}`);
    const continued = /--authorization (\S+)/.exec(`${document?.error?.next_step ?? ''}`);
    if (continued !== null) authorization = continued[1].replace(/[`.,;]+$/, '');
    await sleep(1_000);
  }
  return { outcome: `gave_up:${last}`, commands: attempt, errors };
}

function nonTerminal(databasePath) {
  const db = new Database(databasePath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT count(*) AS n FROM executions WHERE state NOT IN ('succeeded', 'failed', 'reconciliation')").get().n;
  } finally {
    db.close();
  }
}

/**
 * Causes one scheduled chaos event and answers what it actually did, `at` ms after the load
 * started: a kill of the process the stack published for the target — only while it is still
 * that process (killVerified) — or a fault set at the sandbox, which may refuse it or be down.
 */
async function cause(event, { stateDir, sandboxUrl, at }) {
  if (event.kind === 'kill') {
    const published = publishedProcess(stateDir, event.target);
    // Down already (restarting): nothing published to kill.
    if (published === null) return { kind: 'kill', target: event.target, scheduled_at: event.at, at, outcome: 'no_process', pid: null };
    return { kind: 'kill', target: event.target, scheduled_at: event.at, at, outcome: killVerified(published.pid, published.startTicks), pid: published.pid };
  }
  const answer = await fetch(`${sandboxUrl}/__sandbox/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ faults: [event.fault] }) }).catch(() => null);
  const outcome = answer === null ? 'unreachable' : answer.ok ? 'set' : 'refused';
  return { kind: 'fault', fault: event.fault.kind, scheduled_at: event.at, at, outcome, status: answer?.status ?? null };
}

/** A run's events as one short text: `kill executor +1203ms killed`, `fault latency +3001ms refused (503)`. */
export function describeEvents(events) {
  return events
    .map((event) => `${event.kind} ${event.kind === 'kill' ? event.target : event.fault} +${event.at}ms ${event.outcome}${event.status !== null && event.status !== undefined && event.outcome !== 'set' ? ` (${event.status})` : ''}`)
    .join(', ');
}

/**
 * Runs one seed on one engine under `workDir`; returns what happened — the schedule, the events
 * it actually caused, the outcomes — and the checker's violations. `temporalCli` is required for
 * the Temporal engine. `registry` (processes.mjs) holds the run's stack and commands while they
 * run, so whoever owns it can stop them (a runner interrupted). The stack home is removed after a
 * clean run and kept after a run that broke a rule or gave up on an execution — moved under
 * `keepDir` when given — and `keptHome` says where. Never throws for a violation; throws only
 * when the run itself could not be made (the stack did not start; its home is kept then too).
 */
export async function proofRun({ seed, engine, workDir, temporalCli = null, log = () => undefined, registry = createRunRegistry(), keepDir = null }) {
  const schedule = scheduleOf(seed, engine);
  const started = Date.now();
  const stack = await sandboxStackHome(workDir, `proof-${engine}-${seed}-`);
  if (engine === 'temporal') {
    if (temporalCli === null) throw new Error('the Temporal engine needs the Temporal CLI');
    await useManagedTemporal(stack.profileDir, temporalCli);
  }
  const env = stack.env;
  const stateDir = join(stack.profileDir, 'state');
  const running = { env, stateDir };
  registry.stacks.set(stack.home, running);
  const kills = { executor: 0, ledger: 0, sandbox: 0, temporal: 0 };
  const events = [];
  const outcomes = [];
  let result = null;
  let failure = null;
  try {
    const start = await lexec(['stack', 'start', '--json'], env, 180_000, registry);
    if (start.code !== 0) throw new Error(`stack start failed (seed ${seed}): ${start.stdout.slice(0, 2000)}${start.stderr.slice(-2000)}`);
    const sandboxUrl = `http://127.0.0.1:${stack.ports.sandbox}`;
    const loadStarted = Date.now();
    const load = Promise.all(
      schedule.executions.map(async (execution) => {
        await sleep(execution.at);
        const outDir = join(stack.home, 'out', String(execution.index));
        mkdirSync(outDir, { recursive: true });
        outcomes.push({ ...execution, ...(await agentRun(execution, env, outDir, registry)) });
      }),
    );
    const chaos = (async () => {
      for (const event of schedule.chaos) {
        await sleep(event.at - (Date.now() - loadStarted));
        const caused = await cause(event, { stateDir, sandboxUrl, at: Date.now() - loadStarted });
        events.push(caused);
        if (caused.kind === 'kill' && caused.outcome === 'killed') kills[caused.target] += 1;
        log(`seed ${seed}: ${describeEvents([caused])}${caused.pid === null || caused.pid === undefined ? '' : ` (pid ${caused.pid})`}`);
      }
    })();
    await Promise.all([load, chaos]);

    // At rest: every execution terminal or parked, and the ledger caught up (records are opened
    // and settles retried by the executor after a restart).
    const check = () =>
      checkInvariants({
        ledgerDatabase: join(stateDir, 'ledger.db'),
        executorDatabase: join(stateDir, 'executor.db'),
        // Every submission received (a refused one too), and the jobs they made.
        submissionsLog: join(stateDir, 'sandbox-submissions.jsonl'),
        sandboxJobsFile: join(stateDir, 'sandbox-jobs.jsonl'),
        artifactRoot: join(stateDir, 'artifacts'),
      });
    const databases = existsSync(join(stateDir, 'executor.db')) && existsSync(join(stateDir, 'ledger.db'));
    let report = databases ? check() : null;
    for (const deadline = Date.now() + 90_000; report !== null && (report.violations.length > 0 || nonTerminal(join(stateDir, 'executor.db')) > 0) && Date.now() < deadline; ) {
      await sleep(500);
      report = check();
    }
    result = {
      seed,
      engine,
      schedule,
      events,
      outcomes: outcomes.sort((a, b) => a.index - b.index),
      kills,
      faults: events.filter((event) => event.kind === 'fault' && event.outcome === 'set').length,
      counts: report?.counts ?? null,
      violations: report?.violations ?? [{ rule: 'run', subject: String(seed), message: 'no databases were written' }],
      home: stack.home,
      keptHome: null,
      durationMs: Date.now() - started,
    };
    return result;
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    const stopped = await stopStack(running);
    registry.stacks.delete(stack.home);
    if (!stopped.stopped) log(`seed ${seed}: stack stop failed: ${stopped.output}`);
    if (stopped.killed > 0) log(`seed ${seed}: ${stopped.killed} process(es) left after stack stop, killed`);
    // Kept when the run broke a rule, gave up on an execution, or could not be made.
    const keep = result === null || result.violations.length > 0 || result.outcomes.some((outcome) => outcome.outcome.startsWith('gave_up'));
    const kept = settleHome(stack.home, { keep, keepDir });
    if (result !== null) result.keptHome = kept;
    if (kept !== null) log(`seed ${seed}: its stack home is kept at ${kept}`);
    if (failure instanceof Error && kept !== null) failure.message += ` (its stack home is kept at ${kept})`;
  }
}
