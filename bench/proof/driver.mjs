// The randomized proof driver (issue 14 item 4, issue 24 items 11-12; docs/reliability.md
// "Randomized runs"): one run = one seed = fresh sandbox stacks started by the real `lexec stack
// start`, concurrent `lexec run` executions, and — at offsets the seed chooses — SIGKILLs of the
// executor, the ledger, the sandbox provider and (on Temporal) the Temporal server, provider
// faults, and (mode `terminations`) workflow runs terminated as an operator would. The seed also
// chooses the mode (schedule.mjs): one stack; or, on Temporal, two stacks with external engines on
// one dev server the driver runs; or one stack whose runs are terminated mid-run. Once the load is
// done and every stack is at rest — the checker quiet, every execution terminal or parked, and on
// Temporal every execution's workflow run closed — the independent invariant checker
// (test/proof/check-invariants.ts, which shares no code with lexec) reads everything each stack
// wrote, and every run must have closed COMPLETED. The seed fixes the whole schedule; what real
// processes make of it in real time does vary, so a violation is reproduced by running its seed
// again, usually more than once.
//
// What a run records beside its schedule is what it actually caused: each kill's outcome (a pid
// is SIGKILLed only while it is still the process its stack published — the start time in
// /proc/<pid>/stat matches the one published with it — so a reused pid is never killed; a target
// down already is `no_process`), each fault the sandbox took or refused, each termination, and
// when each happened. A run that broke a rule keeps its directory for inspection; a clean one
// removes it.
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
import { describeEvents, scheduleOf, STACK_NAMES } from './schedule.mjs';
import { runsAtRest, startDevServer, terminateScheduled } from './temporal.mjs';

export { describeEvents, MODES, prng, scheduleOf } from './schedule.mjs';

/** The closed-run sweep's interval in a `terminations` run (development builds only; 30 s otherwise). */
const RESCHEDULE_INTERVAL_MS = 500;

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function envelope(run) {
  try {
    return JSON.parse(run.stdout);
  } catch {
    return null;
  }
}

/** Edits the profile a stack home holds. */
function editProfile(profileDir, edit) {
  const file = join(profileDir, 'profile.toml');
  writeFileSync(file, edit(readFileSync(file, 'utf8')));
}

/** The profile of a `single` Temporal run: the executor starts and supervises its own Temporal child. Answers its port. */
async function useManagedTemporal(profileDir, temporalCli) {
  const [temporal, temporalUi] = await freePorts(2);
  editProfile(profileDir, (text) =>
    text
      .replace(/^\[ports\]$/m, `[ports]\ntemporal = ${temporal}\ntemporal_ui = ${temporalUi}`)
      .replace(
        /^\[workflow_engine\]\nmode = "embedded"$/m,
        `[workflow_engine]\nmode = "managed_local"\ntemporal_cli = { path = ${JSON.stringify(temporalCli)}, version = "1.5.1" }\nnamespace = "default"\ntask_queue = "lexec-executions"`,
      ),
  );
  return temporal;
}

/** The profile of a `two_executors` run: an external engine at the driver's dev server, the task queue left to the executor (its installation's own). */
function useExternalTemporal(profileDir, server) {
  editProfile(profileDir, (text) =>
    text.replace(/^\[workflow_engine\]\nmode = "embedded"$/m, `[workflow_engine]\nmode = "external"\naddress = "grpc://${server.address}"\nnamespace = "default"\nui_url = "${server.uiUrl}"`),
  );
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

/** Runs the executor started again after its run closed (the closed-run sweep's record), or 0. */
function rescheduledRuns(databasePath) {
  let db;
  try {
    db = new Database(databasePath, { readonly: true, fileMustExist: true });
    return db.prepare('SELECT count(*) AS n FROM workflow_reschedules').get().n;
  } catch {
    return 0;
  } finally {
    db?.close();
  }
}

/**
 * Causes one scheduled chaos event and answers what it actually did, `at` ms after the load
 * started (`clock()`): a kill of the process a stack published for the target — only while it is
 * still that process (killVerified) — or of the dev server two stacks share (started again by the
 * driver a second later: `restarts`); a fault set at a stack's sandbox, which may refuse it or be
 * down; or the termination of a scheduled execution's workflow run.
 */
async function cause(event, { stacks, run, clock, restarts }) {
  const stack = stacks[event.stack];
  const named = stacks.length > 1 ? { stack: STACK_NAMES[event.stack] } : {};
  const base = { kind: event.kind, scheduled_at: event.at };
  if (event.kind === 'kill' && event.target === 'temporal' && run.server !== null) {
    const pid = run.server.pid();
    const at = clock();
    const killed = await run.server.kill();
    if (killed) restarts.push(sleep(1_000).then(() => run.server.start()));
    return { ...base, target: 'temporal', at, outcome: killed ? 'killed' : 'no_process', pid };
  }
  if (event.kind === 'kill') {
    const published = publishedProcess(stack.stateDir, event.target);
    const at = clock();
    // Down already (restarting): nothing published to kill.
    if (published === null) return { ...base, target: event.target, ...named, at, outcome: 'no_process', pid: null };
    return { ...base, target: event.target, ...named, at, outcome: killVerified(published.pid, published.startTicks), pid: published.pid };
  }
  if (event.kind === 'terminate') {
    const terminated = await terminateScheduled({ address: run.address, executorDatabase: join(stack.stateDir, 'executor.db'), index: event.execution, clock });
    return { ...base, execution: event.execution, at: terminated.at, outcome: terminated.outcome, workflow_id: terminated.workflowId };
  }
  const at = clock();
  const answer = await fetch(`${stack.sandboxUrl}/__sandbox/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ faults: [event.fault] }) }).catch(() => null);
  const outcome = answer === null ? 'unreachable' : answer.ok ? 'set' : 'refused';
  return { ...base, fault: event.fault.kind, ...named, at, outcome, status: answer?.status ?? null };
}

/** Adds up the checker's counts over a run's stacks. */
function addCounts(reports) {
  const total = {};
  for (const report of reports) for (const [name, value] of Object.entries(report.counts)) total[name] = (total[name] ?? 0) + value;
  return total;
}

/**
 * Waits for a run's stacks to come to rest (up to 90 s): on each, the checker quiet and every
 * execution terminal or parked; on Temporal, every execution's workflow run closed. Answers each
 * stack's report and the violations of rest itself: a run still open, or one closed in a wrong
 * state (a run the driver terminated after its work was done may stay TERMINATED).
 */
async function atRest(stacks, run, terminated) {
  const executorDatabases = stacks.map((stack) => join(stack.stateDir, 'executor.db'));
  const check = () =>
    stacks.map((stack) =>
      checkInvariants({
        ledgerDatabase: join(stack.stateDir, 'ledger.db'),
        executorDatabase: join(stack.stateDir, 'executor.db'),
        // Every submission received (a refused one too), and the jobs they made.
        submissionsLog: join(stack.stateDir, 'sandbox-submissions.jsonl'),
        sandboxJobsFile: join(stack.stateDir, 'sandbox-jobs.jsonl'),
        artifactRoot: join(stack.stateDir, 'artifacts'),
      }),
    );
  const runs = run.address === null ? null : runsAtRest(run.address);
  try {
    let reports = check();
    let open = [];
    const quiet = async () => {
      reports = check();
      if (reports.some((report) => report.violations.length > 0) || executorDatabases.some((database) => nonTerminal(database) > 0)) return false;
      open = runs === null ? [] : await runs.open(executorDatabases);
      return open.length === 0;
    };
    for (const deadline = Date.now() + 90_000; !(await quiet()) && Date.now() < deadline; ) await sleep(500);
    const wrong = runs === null ? [] : await runs.wronglyClosed(executorDatabases, terminated);
    const restless = [
      ...open.map((state) => ({ rule: 'workflow_run_open', subject: state.workflowId, message: `its run is ${state.status} after the stack came to rest` })),
      ...wrong.map((state) => ({ rule: 'workflow_run_not_completed', subject: state.workflowId, message: `its run closed ${state.status}` })),
    ];
    return { reports, restless };
  } finally {
    await runs?.close();
  }
}

/**
 * Runs one seed on one engine under `workDir`; returns what happened — the mode, the schedule,
 * the events it actually caused, the outcomes — and the checker's violations (and those of rest on
 * Temporal). `temporalCli` is required for the Temporal engine. `registry` (processes.mjs) holds
 * the run's stacks, dev server and commands while they run, so whoever owns it can stop them (a
 * runner interrupted). The run's directory (its first stack's home, holding a second stack's home
 * and the dev server's files in a two-stack run) is removed after a clean run and kept after one
 * that broke a rule or gave up on an execution — moved under `keepDir` when given — and `keptHome`
 * says where. Never throws for a violation; throws only when the run itself could not be made
 * (a stack did not start; its directory is kept then too).
 */
export async function proofRun({ seed, engine, workDir, temporalCli = null, log = () => undefined, registry = createRunRegistry(), keepDir = null }) {
  const schedule = scheduleOf(seed, engine);
  const started = Date.now();
  if (engine === 'temporal' && temporalCli === null) throw new Error('the Temporal engine needs the Temporal CLI');
  const first = await sandboxStackHome(workDir, `proof-${engine}-${seed}-`);
  const homes = schedule.mode === 'two_executors' ? [first, await sandboxStackHome(first.home, 'stack-b-')] : [first];
  const stacks = homes.map((home, index) => ({
    name: STACK_NAMES[index],
    home: home.home,
    env: { ...home.env },
    profileDir: home.profileDir,
    stateDir: join(home.profileDir, 'state'),
    sandboxUrl: `http://127.0.0.1:${home.ports.sandbox}`,
  }));
  const run = { server: null, address: null };
  const kills = { executor: 0, ledger: 0, sandbox: 0, temporal: 0 };
  const terminated = new Set();
  let events = [];
  const outcomes = [];
  let result = null;
  let failure = null;
  try {
    if (schedule.mode === 'two_executors') {
      const [port, uiPort, httpPort, metricsPort] = await freePorts(4);
      const dir = join(first.home, 'temporal-server');
      mkdirSync(dir, { recursive: true });
      run.server = await startDevServer({ cli: temporalCli, dir, port, uiPort, httpPort, metricsPort });
      registry.servers.add(run.server);
      run.address = run.server.address;
      for (const stack of stacks) useExternalTemporal(stack.profileDir, run.server);
    } else if (engine === 'temporal') {
      run.address = `127.0.0.1:${await useManagedTemporal(first.profileDir, temporalCli)}`;
    }
    if (schedule.mode === 'terminations') {
      // The closed-run sweep every 500 ms instead of 30 s (a development build's switch), and jobs
      // that take 1.5 s at the provider, so that a termination lands while the run polls.
      stacks[0].env.LEXEC_DEV_RESCHEDULE_INTERVAL_MS = String(RESCHEDULE_INTERVAL_MS);
      editProfile(first.profileDir, (text) => text.replace(/^complete_after_ms = \d+/m, 'complete_after_ms = 1500'));
    }
    for (const stack of stacks) registry.stacks.set(stack.home, { env: stack.env, stateDir: stack.stateDir });
    const starts = await Promise.all(stacks.map((stack) => lexec(['stack', 'start', '--json'], stack.env, 180_000, registry, { finishOnStop: true })));
    starts.forEach((start, index) => {
      if (start.code !== 0) throw new Error(`stack ${stacks[index].name} start failed (seed ${seed}): ${start.stdout.slice(0, 2000)}${start.stderr.slice(-2000)}`);
    });
    const loadStarted = Date.now();
    const clock = () => Date.now() - loadStarted;
    const load = Promise.all(
      schedule.executions.map(async (execution) => {
        const stack = stacks[execution.stack];
        await sleep(execution.at);
        if (registry.stopping) return;
        const outDir = join(stack.home, 'out', String(execution.index));
        mkdirSync(outDir, { recursive: true });
        outcomes.push({ ...execution, ...(await agentRun(execution, stack.env, outDir, registry)) });
      }),
    );
    const restarts = [];
    const chaos = (async () => {
      const caused = [];
      for (const event of schedule.chaos) {
        await sleep(Math.max(0, event.at - clock()));
        if (registry.stopping) break;
        // Not awaited: a termination waits for its execution's run, which must not hold up the next event.
        caused.push(
          cause(event, { stacks, run, clock, restarts }).then((done) => {
            log(`seed ${seed}: ${describeEvents([done])}${done.pid === null || done.pid === undefined ? '' : ` (pid ${done.pid})`}`);
            return done;
          }),
        );
      }
      events = await Promise.all(caused);
    })();
    await Promise.all([load, chaos]);
    for (const event of events) {
      if (event.kind === 'kill' && event.outcome === 'killed') kills[event.target] += 1;
      if (event.kind === 'terminate' && event.outcome === 'terminated') terminated.add(event.workflow_id);
    }
    // The shared dev server back (its executors reconnect by themselves).
    await Promise.all(restarts.map((restart) => restart.catch((error) => log(`seed ${seed}: the dev server did not start again: ${error.message}`))));

    const written = stacks.every((stack) => existsSync(join(stack.stateDir, 'executor.db')) && existsSync(join(stack.stateDir, 'ledger.db')));
    const rest = written ? await atRest(stacks, run, terminated) : null;
    const violations =
      rest === null
        ? [{ rule: 'run', subject: String(seed), message: 'no databases were written' }]
        : [...rest.reports.flatMap((report, index) => report.violations.map((violation) => (stacks.length > 1 ? { ...violation, stack: stacks[index].name } : violation))), ...rest.restless];
    result = {
      seed,
      engine,
      mode: schedule.mode,
      schedule,
      events,
      outcomes: outcomes.sort((a, b) => a.index - b.index),
      kills,
      faults: events.filter((event) => event.kind === 'fault' && event.outcome === 'set').length,
      terminations: events.filter((event) => event.kind === 'terminate' && event.outcome === 'terminated').length,
      rescheduled: stacks.reduce((total, stack) => total + rescheduledRuns(join(stack.stateDir, 'executor.db')), 0),
      counts: rest === null ? null : addCounts(rest.reports),
      violations,
      home: first.home,
      keptHome: null,
      durationMs: Date.now() - started,
    };
    return result;
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    for (const stack of stacks) {
      // Interrupted: the runner's stopAll stops every stack (and waits for a stop begun here).
      if (registry.stopping) break;
      const stopped = await stopStack(stack, registry);
      registry.stacks.delete(stack.home);
      if (!stopped.stopped) log(`seed ${seed}: stack ${stack.name} stop failed: ${stopped.output}`);
      if (stopped.killed > 0) log(`seed ${seed}: ${stopped.killed} process(es) left after stack ${stack.name} stop, killed`);
    }
    if (run.server !== null) {
      await run.server.stop();
      registry.servers.delete(run.server);
    }
    // Kept when the run broke a rule, gave up on an execution, or could not be made — unless it
    // was interrupted (its stacks stopped under it: nothing to inspect).
    const keep = !registry.stopping && (result === null || result.violations.length > 0 || result.outcomes.some((outcome) => outcome.outcome.startsWith('gave_up')));
    const kept = settleHome(first.home, { keep, keepDir });
    if (result !== null) result.keptHome = kept;
    if (kept !== null) log(`seed ${seed}: its stack home is kept at ${kept}`);
    if (failure instanceof Error && kept !== null) failure.message += ` (its stack home is kept at ${kept})`;
  }
}
