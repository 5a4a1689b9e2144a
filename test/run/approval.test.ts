import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { expectFailure, expectResult, type CliRun } from '../support/cli.js';
import { tableAt } from '../support/example-profiles.js';
import { decodePng } from '../support/png.js';
import { runSessionPerFile, type RunSession } from '../support/run-session.js';

/*
 * `lexec run` when the profile's policy wants a human: the approval threshold is set below the
 * price of one image, so every run needs an approver. The run prints the exact approve command
 * and waits; the test approves (or denies) with that command, through the same handoff, as a
 * person in another terminal would. The sandbox takes 3 s per job, so a run can be interrupted
 * while its execution is under way.
 */

interface RunJson {
  profile: string;
  authorization: { token_id: string; status: string; amount_units: string };
  approve_command: string | null;
  execution: { execution_id: string; state: string } | null;
  spent: { amount_units: string; currency: string; display: string } | null;
  files: { path: string; bytes: number; sha256: string }[];
}

let lexec: RunSession['lexec'];
/** `lexec run …` as a child that keeps running while the test reads its stderr and acts. */
let startRun: RunSession['startRun'];
const ok = (run: CliRun) => expectResult(run) as RunJson;

const APPROVE = /approve it with:\s+(lexec ledger authorizations approve ([0-9a-f-]{36}) --profile sandbox)\n/;

/** Runs a printed `lexec …` command line (words without quoting) through the stack's home. */
async function runPrinted(command: string, ...extra: string[]): Promise<CliRun> {
  const [bin, ...args] = command.split(' ');
  expect(bin).toBe('lexec');
  return lexec([...args, ...extra]);
}

async function authorization(tokenId: string): Promise<{ status: string; settlement: { amount_units: string } | null }> {
  const run = await lexec(['ledger', 'authorizations', 'show', tokenId, '--json']);
  expect(run.exitCode, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { result: { authorization: { status: string; settlement: { amount_units: string } | null } } }).result.authorization;
}

runSessionPerFile(
  (session) => {
    ({ lexec, startRun } = session);
  },
  {
    edit: (profile) => {
      tableAt(profile, 'ledger.default_policy').approval_threshold_units = '1000';
      tableAt(profile, 'sandbox').complete_after_ms = 3000;
    },
  },
);

describe('lexec run under a policy that wants a human approval', () => {
  it('says so, prints the exact approve command and waits; approving with it lets the run finish', async () => {
    const run = startRun(['a tide pool', '--count', '2', '--out', 'approved', '--json']);
    const [, command = ''] = await run.waitFor(APPROVE);
    await run.waitFor(/waiting for the decision/);
    const approved = await runPrinted(command, '--reason', 'fine');
    expect(approved.exitCode, approved.stderr).toBe(0);
    const result = ok(await run.done);
    expect(result.authorization.status).toBe('settled');
    expect(result.spent).toMatchObject({ amount_units: '6000', display: '0.006000 USD' });
    expect(result.files).toHaveLength(2);
    for (const file of result.files) decodePng(await readFile(file.path));
    const done = await run.done;
    expect(done.stderr).toContain('needs a human approval');
    expect(done.stderr).toMatch(/authorization [0-9a-f-]{36}: approved/);
  }, 120_000);

  it('--no-wait returns at once (exit 0) with the authorization id; after approval, --authorization runs it', async () => {
    const waiting = ok(await lexec(['run', 'a paper boat', '--out', 'later', '--no-wait', '--json']));
    expect(waiting).toMatchObject({
      profile: 'sandbox',
      authorization: { status: 'requested', amount_units: '3000' },
      approve_command: `lexec ledger authorizations approve ${waiting.authorization.token_id} --profile sandbox`,
      execution: null,
      spent: null,
      files: [],
    });
    expect((await authorization(waiting.authorization.token_id)).status).toBe('requested');
    const human = await lexec(['run', 'a paper boat', '--out', 'later', '--no-wait']);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/awaits approval; nothing was submitted or spent/);

    expect((await runPrinted(waiting.approve_command ?? '')).exitCode).toBe(0);
    const finished = ok(await lexec(['run', 'a paper boat', '--out', 'later', '--authorization', waiting.authorization.token_id, '--json']));
    expect(finished.authorization).toEqual({ token_id: waiting.authorization.token_id, status: 'settled', amount_units: '3000' });
    expect(finished.files).toHaveLength(1);
  }, 120_000);

  it('a denial ends the run with exit 1 and the approver\'s reason; nothing is spent', async () => {
    const run = startRun(['a storm', '--json']);
    const [, , tokenId = ''] = await run.waitFor(APPROVE);
    const denied = await lexec(['ledger', 'authorizations', 'deny', tokenId, '--reason', 'over budget this week', '--profile', 'sandbox']);
    expect(denied.exitCode, denied.stderr).toBe(0);
    const error = expectFailure(await run.done, 1, 'authorization_denied');
    expect(error.message).toContain('over budget this week');
    expect(error.message).toContain('nothing was spent');
    expect((await authorization(tokenId)).status).toBe('denied');
  }, 120_000);

  it('Ctrl-C while waiting for the approval exits 130 and leaves the authorization requested', async () => {
    const run = startRun(['a comet', '--json']);
    const [, , tokenId = ''] = await run.waitFor(APPROVE);
    await run.waitFor(/waiting for the decision/);
    run.interrupt();
    const error = expectFailure(await run.done, 130, 'run_interrupted');
    expect(error.message).toContain(`Authorization ${tokenId} stays requested`);
    expect(error.next_step).toContain(`--authorization ${tokenId}`);
    expect((await authorization(tokenId)).status).toBe('requested');
  }, 120_000);

  it('Ctrl-C while the execution runs exits 130; the execution finishes in the executor and --authorization saves its images', async () => {
    const waiting = ok(await lexec(['run', 'a glacier', '--out', 'interrupted', '--no-wait', '--json']));
    const tokenId = waiting.authorization.token_id;
    expect((await runPrinted(waiting.approve_command ?? '')).exitCode).toBe(0);
    const run = startRun(['a glacier', '--out', 'interrupted', '--authorization', tokenId, '--json']);
    const [, executionId = ''] = await run.waitFor(/execution (exe_[0-9a-f]{32}): (?:scheduled|running)/);
    run.interrupt();
    const error = expectFailure(await run.done, 130, 'run_interrupted');
    expect(error.message).toContain(`Execution ${executionId} continues in the executor`);

    const resumed = ok(await lexec(['run', 'a glacier', '--out', 'interrupted', '--authorization', tokenId, '--json']));
    expect(resumed.execution).toEqual({ execution_id: executionId, state: 'succeeded' });
    expect(resumed.files).toHaveLength(1);
    expect((await authorization(tokenId)).settlement?.amount_units).toBe('3000');
  }, 120_000);

  it('--timeout gives up waiting (exit 1, run_timeout) and the authorization stays requested', async () => {
    const error = expectFailure(await lexec(['run', 'a slow approver', '--timeout', '2', '--json']), 1, 'run_timeout');
    const tokenId = /Authorization ([0-9a-f-]{36}) stays requested/.exec(error.message)?.[1] ?? '';
    expect((await authorization(tokenId)).status).toBe('requested');
  }, 120_000);
});
