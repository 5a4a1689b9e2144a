import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackgroundRun } from '../support/background-run.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { tableAt } from '../support/example-profiles.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';

/*
 * Issue 26 item 9: an external Temporal server stopped while `lexec run` follows an execution.
 * Before, the run printed nothing for the whole outage. Now it says once that the workflow engine
 * (by its address) is unreachable and that the execution is held and resumes when the engine
 * returns, keeps waiting, says once that the engine is back, and finishes: exit 0, the image saved.
 * Meanwhile `stack status` names the engine's address as what to fix, not a restart of lexec.
 *
 * No timed bound holds the execution mid-run: the sandbox answers its status route 503 (the
 * executor polls again later) until the test clears the fault, after the engine is back.
 */

const cli = temporalCli();
let temporal: DevServer | undefined;
let stack: RunningStack | undefined;
let work = '';

beforeAll(async () => {
  if (cli === null) return;
  work = await makeTempDir('lexec-run-engine-outage-');
  // Its history in a file, so a restart on the same port finds the workflow again.
  temporal = await startDevServer(cli, { dir: work });
  const address = temporal.url;
  stack = await startRunningStack({
    example: 'external-temporal',
    edit: (profile) => {
      tableAt(profile, 'workflow_engine').address = address;
    },
  });
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await temporal?.stop();
  if (work !== '') await removeDir(work);
}, 120_000);

const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern.source, 'g'))?.length ?? 0;

describe.skipIf(cli === null)('lexec run while its external workflow engine is stopped and started again', () => {
  it('says once that the engine is unreachable and the execution held, once that it is back, and then finishes with the image saved', async () => {
    const [server, own] = [temporal as DevServer, stack as RunningStack];
    const unreachable = new RegExp(`the workflow engine \\(grpc://127\\.0\\.0\\.1:${server.port}\\) is unreachable: execution (exe_[0-9a-f]{32}) is held safely and resumes when the engine returns; still waiting \\(up to --timeout\\)`);
    const back = new RegExp(`the workflow engine \\(grpc://127\\.0\\.0\\.1:${server.port}\\) is back; execution (exe_[0-9a-f]{32}) resumes\\.`);
    await own.sandbox.setFaults([{ kind: 'http_error', route: 'status', status: 503 }]);

    const run = startBackgroundRun(['a lighthouse through an engine outage', '--out', 'outage'], { cwd: work, env: { HOME: own.home, ...own.env } });
    const [, executionId = ''] = await run.waitFor(/execution (exe_[0-9a-f]{32}): running \(poll_provider_operation\)/, 120_000);

    await server.stop();
    const [, heldId] = await run.waitFor(unreachable, 120_000);
    expect(heldId).toBe(executionId);

    // `stack status` meanwhile: not usable (exit 7), and it names the engine's address instead of advising a restart of lexec.
    const status = await own.lexec(['stack', 'status']);
    expect(status.exitCode, status.stdout + status.stderr).toBe(7);
    expect(status.stdout).toContain('(workflow_engine_unavailable)');
    expect(status.stdout).toContain(`workflow engine: external Temporal at grpc://127.0.0.1:${server.port}`);
    expect(status.stdout).toContain(`The executor cannot reach its workflow engine, the Temporal cluster at grpc://127.0.0.1:${server.port}: start it or restore the network path to it`);
    expect(status.stdout).toContain('Restarting lexec does not help');
    expect(status.stdout).not.toContain('lexec stack stop');
    expect(status.stdout).toContain('work: 1 execution in flight');

    await server.restart();
    const [, resumedId] = await run.waitFor(back, 120_000);
    expect(resumedId).toBe(executionId);

    await own.sandbox.clearFaults();
    const ended = await run.done;
    expect(ended.exitCode, ended.stderr).toBe(0);
    expect(count(ended.stderr, unreachable)).toBe(1);
    expect(count(ended.stderr, back)).toBe(1);
    // Said in this order: held, back, then the end of the execution.
    expect(ended.stderr.search(unreachable)).toBeLessThan(ended.stderr.search(back));
    expect(ended.stderr.search(back)).toBeLessThan(ended.stderr.indexOf(`execution ${executionId}: succeeded`));
    expect(ended.stdout).toContain('1 file in');
    expect(await readdir(join(work, 'outage'))).toEqual([`${executionId}-0.png`]);
  }, 300_000);
});
