import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackgroundRun } from '../support/background-run.js';
import { expectResult, makeTempDir, removeDir } from '../support/cli.js';
import { tableAt } from '../support/example-profiles.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';

/*
 * A stack stopped under a running `lexec run` (issue 26 item 7): the run does not say the
 * execution "continues in the executor" — nothing runs — but that the stack was stopped, that the
 * execution is kept and goes on when the stack starts again, and the exact command that follows
 * it then. Which it does: after a start, the same command with --authorization saves the images.
 */

let stack: RunningStack;
let work: string;

beforeAll(async () => {
  work = await makeTempDir('lexec-run-stopped-');
  stack = await startRunningStack({
    edit: (profile) => {
      // Long enough for the stop to land while the provider works on the job.
      tableAt(profile, 'sandbox').complete_after_ms = 8_000;
    },
  });
}, 180_000);

afterAll(async () => {
  await stack.stop();
  await removeDir(work);
}, 120_000);

function startRun(args: readonly string[]) {
  return startBackgroundRun(args, { cwd: work, env: { HOME: stack.home, ...stack.env } });
}

describe('lexec run on a stack stopped under it', () => {
  it('says the stack was stopped and the execution is kept, with the command that follows it after a start; that command then saves the images', async () => {
    const run = startRun(['a lighthouse, stopped mid-run', '--out', 'stopped', '--json']);
    const [, tokenId = '', executionId = ''] = await run.waitFor(/authorization ([0-9a-f-]{36}):[\s\S]*execution (exe_[0-9a-f]{32}): running/);
    expect((await stack.lexec(['stack', 'stop', '--json'])).exitCode).toBe(0);

    const ended = await run.done;
    expect(ended.exitCode).toBe(1);
    const error = (JSON.parse(ended.stdout) as { error: { code: string; message: string; next_step: string } }).error;
    expect(error.message).toContain(`The stack of profile "sandbox" was stopped while execution ${executionId} ran: the execution is kept (authorization ${tokenId} stays claimed for it)`);
    expect(error.message).not.toContain('continues in the executor');
    expect(error.next_step).toContain('Start it (`lexec stack start --profile sandbox`)');
    expect(error.next_step).toContain(`--authorization ${tokenId}`);

    expect((await stack.lexec(['stack', 'start', '--json'], { timeoutMs: 120_000 })).exitCode).toBe(0);
    const resumed = await stack.lexec(['run', 'a lighthouse, stopped mid-run', '--out', 'stopped', '--authorization', tokenId, '--json'], { cwd: work, timeoutMs: 120_000 });
    const result = expectResult(resumed) as { execution: { execution_id: string; state: string }; files: unknown[] };
    expect(result.execution).toEqual({ execution_id: executionId, state: 'succeeded' });
    expect(result.files).toHaveLength(1);
  });
});
