import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, expectResult, type CliRun } from '../support/cli.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';

/*
 * An execution whose billing is ambiguous is parked for a human; the operator sees it in `stack
 * status`, lists it with its evidence and resolves it from the CLI — `lexec executor
 * reconciliation list | resolve` — with the reconciliation capability the stack's handoff names.
 */

let stack: RunningStack;
const runs: CliRun[] = [];

async function lexec(args: readonly string[]): Promise<CliRun> {
  const run = await stack.lexec(args, { timeoutMs: 120_000 });
  runs.push(run);
  return run;
}

/** A run the sandbox completes with an error: billing ambiguous, parked; returns its execution id. */
async function parkedExecution(): Promise<string> {
  await stack.sandbox.setFaults([{ kind: 'complete_with_error', times: 1 }]);
  const failure = expectFailure(await lexec(['run', 'a mirage', '--out', `${stack.home}/out`, '--json']), 1, 'execution_in_reconciliation');
  const id = /Execution (exe_[0-9a-f]{32})/.exec(failure.message)?.[1];
  if (id === undefined) throw new Error(`no execution id in ${failure.message}`);
  return id;
}

beforeAll(async () => {
  stack = await startRunningStack();
}, 180_000);

afterAll(async () => {
  const secret = await stack.capability('reconciliation');
  await stack.stop();
  for (const run of runs) expect(run.stdout + run.stderr).not.toContain(secret);
}, 120_000);

describe('lexec executor reconciliation', () => {
  it('status counts the parked executions; list shows them with evidence; release and settle resolve them once', async () => {
    const released = await parkedExecution();
    const settled = await parkedExecution();

    expect(expectResult(await lexec(['stack', 'status', '--json']))).toMatchObject({ awaiting_human: 2 });
    expect((await lexec(['stack', 'status'])).stdout).toContain('2 executions await a human (billing ambiguous): `lexec executor reconciliation list`');
    const doctor = JSON.parse((await lexec(['stack', 'doctor', '--json'])).stdout) as { result: { checks: { id: string; status: string; summary: string; fix: string | null }[] } };
    expect(doctor.result.checks.find((check) => check.id === 'executions.awaiting_human')).toMatchObject({
      status: 'warn',
      summary: expect.stringContaining('2 executions await a human') as unknown,
      fix: expect.stringContaining('lexec executor reconciliation list') as unknown,
    });

    const listed = expectResult(await lexec(['executor', 'reconciliation', 'list', '--json'])) as { executions: { execution_id: string; evidence: unknown[] }[] };
    expect(listed.executions.map((execution) => execution.execution_id).sort()).toEqual([released, settled].sort());
    for (const execution of listed.executions) {
      expect(execution.evidence.length).toBeGreaterThan(0);
      // Each attempt names its provider request and when the provider can have received it.
      expect(execution.evidence[0]).toMatchObject({
        provider_request_id: expect.any(String) as unknown,
        submit_window: { from: expect.any(String) as unknown, until: expect.any(String) as unknown },
        correlation: { field: 'seed', value: expect.any(Number) as unknown, sent: true },
      });
    }
    const human = (await lexec(['executor', 'reconciliation', 'list'])).stdout;
    expect(human).toContain(`${released}  billing_ambiguous`);
    expect(human).toMatch(/submitted between \d{4}-\d\d-\d\dT\S+ and \d{4}-\d\d-\d\dT\S+/);
    expect(human).toMatch(/the request's seed is \d+ \(in its input and result at the provider\)/);

    expectFailure(await lexec(['executor', 'reconciliation', 'resolve', released, '--settle', '--release', '--note', 'x', '--json']), 2, 'usage_error');
    expectFailure(await lexec(['executor', 'reconciliation', 'resolve', released, '--release', '--images-billed', '1', '--note', 'x', '--json']), 2, 'usage_error');

    const release = expectResult(await lexec(['executor', 'reconciliation', 'resolve', released, '--release', '--note', 'provider confirmed no charge', '--json']));
    expect(release).toMatchObject({ replayed: false, resolution: { resolution: 'released' }, execution: { execution_id: released, state: 'failed' } });
    const again = expectResult(await lexec(['executor', 'reconciliation', 'resolve', released, '--release', '--note', 'provider confirmed no charge', '--json']));
    expect(again).toMatchObject({ replayed: true });
    expectFailure(await lexec(['executor', 'reconciliation', 'resolve', released, '--settle', '--images-billed', '1', '--note', 'changed my mind', '--json']), 1, 'executor_conflict');

    const settle = await lexec(['executor', 'reconciliation', 'resolve', settled, '--settle', '--images-billed', '1', '--note', 'dashboard shows 1 image billed']);
    expect(settle.exitCode, settle.stderr).toBe(0);
    expect(settle.stdout).toContain(`execution ${settled} settled for 0.003000 USD`);

    expect(expectResult(await lexec(['stack', 'status', '--json']))).toMatchObject({ awaiting_human: 0 });
    const after = JSON.parse((await lexec(['stack', 'doctor', '--json'])).stdout) as { result: { checks: { id: string; status: string }[] } };
    expect(after.result.checks.find((check) => check.id === 'executions.awaiting_human')?.status).toBe('pass');
    expect(expectResult(await lexec(['executor', 'reconciliation', 'list', '--json']))).toMatchObject({ executions: [] });
  }, 120_000);
});
