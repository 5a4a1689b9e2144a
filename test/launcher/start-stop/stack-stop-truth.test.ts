import { spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableAt } from '../../support/example-profiles.js';
import { BIN } from '../../support/cli.js';
import { startBackgroundRun } from '../../support/background-run.js';
import { destroyStackHome, eventually, jsonResult, lexecIn, makeStackHome, readState, type StackHome } from '../../support/stack-home.js';

/*
 * What to check before a stop, and a stop that tells the truth (issue 26 items 9 and 10):
 * `stack status` counts the executions in flight and the approvals pending; `stack stop` warns
 * with both counts and says what happens to them; `stack stop --wait` lets the work in flight
 * finish first (a connected `lexec run` still saves its images); and a stop that had to kill a
 * hung executor says so (`forced`, `killed`), not "stopped".
 */

let stack: StackHome;
let executionId = '';
const env = () => ({ PATH: process.env.PATH ?? '', HOME: stack.home, LEXEC_HOME: stack.home });

interface StatusJson {
  executions_in_flight: number | null;
  approvals_pending: number | null;
  usable: boolean;
}

interface StopJson {
  outcome: string;
  forced: boolean;
  killed: string[];
  executions_in_flight: number | null;
  approvals_pending: number | null;
  drain: { outcome: string; finished: number; remaining: number; waited_ms: number } | null;
}

beforeAll(async () => {
  // Long enough that the execution is still polling when the stack stops, short enough to finish after the next start.
  stack = await makeStackHome({ edit: (profile) => (tableAt(profile, 'sandbox').complete_after_ms = 12_000) });
  jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
}, 120_000);

afterAll(async () => {
  await destroyStackHome(stack);
}, 120_000);

describe('stack stop', () => {
  it('status counts the work in flight and the approvals pending; stop warns with both and says what happens to them', async () => {
    const run = spawn(process.execPath, [BIN, 'run', 'a slow glacier', '--out', `${stack.home}/out`], { env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
    let progress = '';
    run.stderr.setEncoding('utf8').on('data', (chunk: string) => (progress += chunk));
    await eventually('the execution to run', () => Promise.resolve(/execution exe_[0-9a-f]{32}: running/.test(progress) ? true : undefined));
    executionId = /execution (exe_[0-9a-f]{32}): running/.exec(progress)?.[1] ?? '';
    // Above the example's approval threshold (1 USD): it waits for an approver.
    jsonResult(await lexecIn(stack.home, ['ledger', 'authorizations', 'request', '--amount-units', '2000000', '--purpose', 'waits for a human', '--json']));

    const status = await lexecIn(stack.home, ['stack', 'status']);
    expect(status.stdout).toContain('work: 1 execution in flight, 1 approval pending (`lexec ledger authorizations list --status requested`, or the console)');
    expect(jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json']))).toMatchObject({ executions_in_flight: 1, approvals_pending: 1, usable: true });

    const stop = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    run.kill('SIGKILL');
    expect(jsonResult<StopJson>(stop)).toMatchObject({ executions_in_flight: 1, approvals_pending: 1, forced: false, killed: [], drain: null, outcome: 'stopped' });
    // Progress and the warnings on stderr, even under --json (stdout holds only the document).
    expect(stop.stderr).toContain('warning: 1 execution is still in flight; it stops where it is and resumes at the next `lexec stack start` (nothing is submitted or charged twice;');
    expect(stop.stderr).toContain('`lexec stack stop --wait` lets them finish first.');
    expect(stop.stderr).toContain('warning: 1 authorization waits for an approver; it stays requested in the ledger (until it expires) and can be decided after the next `lexec stack start`');
    expect(stop.stderr).toMatch(/stopping supervisor pid \d+ \(.*executor.*\): waiting up to 40 s, then SIGKILL/);

    // Read from the databases, so a stopped stack still shows what waits in it.
    expect(jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json']))).toMatchObject({ executions_in_flight: 1, approvals_pending: 1, usable: false });
    const again = jsonResult<StopJson>(await lexecIn(stack.home, ['stack', 'stop', '--json']));
    expect(again).toMatchObject({ outcome: 'already_stopped', executions_in_flight: null });
  }, 150_000);

  it('--wait lets the work in flight finish first: the resumed execution and a connected run end before the stop, and the run saves its images', async () => {
    expect(executionId).toMatch(/^exe_/);
    jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
    const out = join(stack.home, 'out-wait');
    const run = startBackgroundRun(['a second slow glacier', '--out', out, '--json'], { cwd: stack.home, env: { HOME: stack.home, LEXEC_HOME: stack.home } });
    await run.waitFor(/execution exe_[0-9a-f]{32}: (scheduled|running)/);

    // Ctrl-C during the wait calls the stop off: nothing stopped, the handoff back, exit 130.
    const calledOff = spawn(process.execPath, [BIN, 'stack', 'stop', '--wait'], { env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    calledOff.stderr.setEncoding('utf8').on('data', (chunk: string) => (said += chunk));
    const exited = new Promise<number | null>((resolve) => calledOff.once('close', resolve));
    await eventually('the stop to wait', () => Promise.resolve(/waiting up to 10 min for \d execution/.test(said) ? true : undefined));
    calledOff.kill('SIGINT');
    expect(await exited, said).toBe(130);
    expect(said).toContain('nothing was stopped, and clients can find the stack again');
    expect(jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json']))).toMatchObject({ usable: true });

    const stop = await lexecIn(stack.home, ['stack', 'stop', '--wait', '--json']);
    const result = jsonResult<StopJson>(stop);
    expect(result).toMatchObject({ outcome: 'stopped', forced: false, drain: { outcome: 'drained', remaining: 0 } });
    expect(result.drain?.finished).toBeGreaterThanOrEqual(1);
    expect(stop.stderr).toMatch(/execution(s are| is) still in flight: waiting for (it|them) to finish before stopping/);
    expect(stop.stderr).toContain('no execution in flight any more');

    // The connected run followed its execution to the end and saved its image while the stop waited.
    const finished = await run.done;
    expect(finished.exitCode, finished.stderr).toBe(0);
    const saved = (JSON.parse(finished.stdout) as { result: { files: { path: string }[] } }).result.files;
    expect(saved).toHaveLength(1);
    await access(saved[0]?.path ?? '');
    expect(jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json']))).toMatchObject({ executions_in_flight: 0 });

    // The execution the first stop interrupted resumed and ended succeeded, submitted once.
    const logs = await lexecIn(stack.home, ['stack', 'logs', '--component', 'executor', '--execution-id', executionId, '--json']);
    const events = logs.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => (JSON.parse(line) as { parsed?: { event?: string } }).parsed?.event);
    expect(events).toContain('execution_succeeded');
    expect(events).not.toContain('execution_reconciliation');
    expect(events.filter((event) => event === 'provider_operation_checkpointed')).toHaveLength(1);
  }, 180_000);

  it('a hung executor is killed, and the stop says so: forced, which component, a warning; the supervisor logs it as a warning', async () => {
    jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
    const executorPid = (await readState(stack.paths)).components.executor?.pid ?? 0;
    expect(executorPid).toBeGreaterThan(0);
    // Stopped by the kernel: it cannot act on SIGTERM, as a process stuck in a loop would not.
    process.kill(executorPid, 'SIGSTOP');
    const stop = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    const result = jsonResult<StopJson>(stop);
    expect(result).toMatchObject({ outcome: 'stopped', forced: true, killed: ['executor'] });
    expect(stop.stderr).toContain(`warning: the executor (pid ${executorPid}) did not stop within its bound after SIGTERM and was killed (SIGKILL)`);
    const human = await lexecIn(stack.home, ['stack', 'logs', '--component', 'supervisor', '--json']);
    const killed = human.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level?: string; parsed?: { event?: string; component?: string; level?: number } })
      .filter((line) => line.parsed?.event === 'child_killed');
    expect(killed).toHaveLength(1);
    expect(killed[0]?.parsed?.component).toBe('executor');
    expect(killed[0]?.parsed?.level).toBeGreaterThanOrEqual(40);
  }, 150_000);
});
