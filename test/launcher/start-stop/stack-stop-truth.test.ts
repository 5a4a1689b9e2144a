import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableAt } from '../../support/example-profiles.js';
import { BIN } from '../../support/cli.js';
import { destroyStackHome, eventually, jsonResult, lexecIn, makeStackHome, type StackHome } from '../../support/stack-home.js';

/*
 * `stack stop` says what it waits for and how long, and warns, with the count, when executions
 * are still in flight (they are durable: they resume at the next start, and are not charged twice).
 */

let stack: StackHome;
let executionId = '';

beforeAll(async () => {
  // Long enough that the execution is still polling when the stack stops, short enough to finish after the next start.
  stack = await makeStackHome({ edit: (profile) => (tableAt(profile, 'sandbox').complete_after_ms = 12_000) });
  jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
}, 120_000);

afterAll(async () => {
  await destroyStackHome(stack);
}, 120_000);

describe('stack stop', () => {
  it('warns with the count of executions in flight and says what it waits for; --json carries the count', async () => {
    const env = { PATH: process.env.PATH ?? '', HOME: stack.home, LEXEC_HOME: stack.home };
    const run = spawn(process.execPath, [BIN, 'run', 'a slow glacier', '--out', `${stack.home}/out`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let progress = '';
    run.stderr.setEncoding('utf8').on('data', (chunk: string) => (progress += chunk));
    await eventually('the execution to run', () => Promise.resolve(/execution exe_[0-9a-f]{32}: running/.test(progress) ? true : undefined));
    executionId = /execution (exe_[0-9a-f]{32}): running/.exec(progress)?.[1] ?? '';

    const stop = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    run.kill('SIGKILL');
    expect(jsonResult<{ executions_in_flight: number | null; forced: boolean; outcome: string }>(stop)).toMatchObject({ executions_in_flight: 1, forced: false, outcome: 'stopped' });
    // Progress and the warning on stderr, even under --json (stdout holds only the document).
    expect(stop.stderr).toContain('warning: 1 execution is still in flight; it resumes at the next `lexec stack start`');
    expect(stop.stderr).toMatch(/stopping supervisor pid \d+ \(.*executor.*\): waiting up to 40 s, then SIGKILL/);

    const again = jsonResult<{ executions_in_flight: number | null; outcome: string }>(await lexecIn(stack.home, ['stack', 'stop', '--json']));
    expect(again).toMatchObject({ outcome: 'already_stopped', executions_in_flight: null });
  }, 150_000);

  it('the execution resumes at the next start: the sandbox kept its job (its jobs file), so the poll finds it and it ends succeeded, submitted once', async () => {
    expect(executionId).toMatch(/^exe_/);
    jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
    const lines = await eventually(
      'the execution to end',
      async () => {
        const logs = await lexecIn(stack.home, ['stack', 'logs', '--component', 'executor', '--execution-id', executionId, '--json']);
        const events = logs.stdout
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => (JSON.parse(line) as { parsed?: { event?: string; reason?: string } }).parsed);
        return events.some((event) => event?.event === 'execution_succeeded' || event?.event === 'execution_reconciliation') ? events : undefined;
      },
      60_000,
    );
    expect(lines.map((event) => event?.event)).toContain('execution_succeeded');
    expect(lines.map((event) => event?.event)).not.toContain('execution_reconciliation');
    expect(lines.filter((event) => event?.event === 'provider_operation_checkpointed')).toHaveLength(1);
  }, 120_000);
});
