import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESCHEDULE_INTERVAL_ENV } from '../../src/executor/engine/development-reschedule-interval.js';
import { tableAt } from '../support/example-profiles.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { eventually, jsonResult } from '../support/stack-home.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';
import { checkInvariants } from './check-invariants.js';

/*
 * Issue 24 as an operator met it: two profiles made from profiles.example/external-temporal.toml,
 * started by the real `lexec stack start` against one `temporal server start-dev` (same
 * namespace), concurrent `lexec run`s on each. Before, the other stack's worker completed most
 * runs as "done" and they never ended. Now every run ends succeeded, each sandbox received
 * exactly its own submissions, the invariant checker finds nothing on either stack, and a run an
 * operator terminates is started again and counted by `stack status` and `stack doctor`.
 */

const cli = temporalCli();
const RUNS_PER_STACK = 4;
let temporal: DevServer | undefined;
const stacks: RunningStack[] = [];
/** One LEXEC_HOME per stack (two operators' homes), kept past `stack stop` for the checker. */
const homes: string[] = [];

beforeAll(async () => {
  if (cli !== null) temporal = await startDevServer(cli);
}, 120_000);

afterAll(async () => {
  for (const stack of stacks.splice(0)) await stack.stop();
  for (const home of homes.splice(0)) await removeDir(home);
  await temporal?.stop();
}, 120_000);

async function start(profile: string): Promise<RunningStack> {
  const home = await makeTempDir('lexec-shared-temporal-');
  homes.push(home);
  return startRunningStack({
    home,
    profile,
    example: 'external-temporal',
    // The example as shipped, pointed at this dev server; its task_queue left unset.
    edit: (table) => {
      tableAt(table, 'workflow_engine').address = temporal?.url ?? '';
    },
    env: { [RESCHEDULE_INTERVAL_ENV]: '300' },
  });
}

interface RunJson {
  execution: { execution_id: string; state: string };
}

async function run(stack: RunningStack, prompt: string): Promise<RunJson> {
  return jsonResult<RunJson>(await stack.lexec(['run', prompt, '--profile', stack.paths.name, '--out', join(stack.home, 'out', prompt.replaceAll(' ', '-')), '--json'], { timeoutMs: 120_000 }));
}

describe.skipIf(cli === null)('two stacks on one Temporal server', () => {
  it('run every execution to success on their own queues, keep every invariant, and count a run an operator terminated', async () => {
    const [a, b] = await Promise.all([start('first'), start('second')]);
    stacks.push(a, b);

    const runs = await Promise.all(
      [a, b].flatMap((stack, index) => Array.from({ length: RUNS_PER_STACK }, (_, n) => run(stack, `stack ${String(index)} image ${String(n)}`))),
    );
    expect(runs.map((result) => result.execution.state)).toEqual(Array.from({ length: 2 * RUNS_PER_STACK }, () => 'succeeded'));

    // A run terminated from the Temporal side mid-poll (the sandbox answers its status slowly).
    await a.sandbox.setFaults([{ kind: 'latency', ms: 1_500, routes: ['status'], times: 2 }]);
    const before = (await a.sandbox.submissions()).length;
    const pending = run(a, 'terminated mid poll');
    await eventually('the submission reached the sandbox', async () => ((await a.sandbox.submissions()).length > before ? true : undefined), 60_000, 100);
    const connection = await Connection.connect({ address: temporal?.address ?? '' });
    try {
      const workflows = new Client({ connection }).workflow;
      const open = await eventually(
        'the open run',
        async () => {
          for await (const execution of workflows.list({ query: 'ExecutionStatus = "Running"' })) return execution.workflowId;
          return undefined;
        },
        30_000,
        100,
      );
      await workflows.getHandle(open).terminate('operator');
    } finally {
      await connection.close();
    }
    expect((await pending).execution.state).toBe('succeeded');

    const status = jsonResult<{ rescheduled_runs: { total: number; last_24h: number } | null }>(await a.lexec(['stack', 'status', '--profile', 'first', '--json']));
    expect(status.rescheduled_runs).toMatchObject({ total: 1, last_24h: 1 });
    const doctor = jsonResult<{ checks: { id: string; status: string }[] }>(await a.lexec(['stack', 'doctor', '--profile', 'first', '--json']));
    expect(doctor.checks.find((check) => check.id === 'executions.rescheduled_runs')).toMatchObject({ status: 'warn' });
    const quiet = jsonResult<{ rescheduled_runs: { total: number } | null }>(await b.lexec(['stack', 'status', '--profile', 'second', '--json']));
    expect(quiet.rescheduled_runs).toMatchObject({ total: 0 });

    for (const stack of stacks.splice(0)) {
      const { paths } = stack;
      await stack.stop();
      const report = checkInvariants({
        ledgerDatabase: paths.ledgerDatabase,
        executorDatabase: paths.executorDatabase,
        submissionsLog: null,
        sandboxJobsFile: join(paths.stateDir, 'sandbox-jobs.jsonl'),
        artifactRoot: paths.artifactRoot,
      });
      expect(report.violations).toEqual([]);
      // Exactly its own: one submission per execution of this stack, each attempt's request id
      // among this sandbox's jobs (attempt_request_id_submitted), nothing else received.
      const executions = stack === a ? RUNS_PER_STACK + 1 : RUNS_PER_STACK;
      expect(report.counts).toMatchObject({ executions, attempts: executions, submissions: executions, settlements: executions, releases: 0, reconciliations: 0 });
    }
  }, 420_000);
});
