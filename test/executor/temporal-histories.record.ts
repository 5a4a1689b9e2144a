import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../support/cli.js';
import { durableHarness, setFaults } from '../support/durable-stack.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';

/*
 * Records the histories the replay tests (temporal-replay.test.ts) replay: real executions of the
 * real executor on a real Temporal server, written as JSON next to the workflow code version they
 * were recorded with (LEXEC_HISTORY_LABEL, e.g. "v1"). Run on purpose, never by the suite.
 */

const harness = durableHarness('lexec-record-');
const label = process.env.LEXEC_HISTORY_LABEL ?? 'current';
let temporal: DevServer;

beforeAll(async () => {
  const cli = temporalCli();
  if (cli === null) throw new Error('set LEXEC_TEMPORAL_CLI');
  temporal = await startDevServer(cli);
});

afterAll(async () => {
  await temporal.stop();
});

async function save(name: string, workflowId: string): Promise<void> {
  const connection = await Connection.connect({ address: temporal.address });
  const history = await new Client({ connection }).workflow.getHandle(workflowId).fetchHistory();
  await connection.close();
  const path = join(PACKAGE_ROOT, 'test', 'fixtures', 'temporal-histories', `${name}-${label}.json`);
  await writeFile(path, `${JSON.stringify({ workflow_id: workflowId, history: JSON.parse(historyToJSON(history)) as unknown }, null, 2)}\n`);
}

it('records a success: submission, polls on durable timers, two images stored, settled', async () => {
  const s = await harness.stack({ engine: { mode: 'external', url: temporal.url }, sandboxArgs: ['--complete-after-ms', '1200'] });
  const executionId = await s.submit(await s.approvedToken(), 2);
  await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
  await save('succeeded', `lexec-execution-${executionId}`);
});

it('records a reconciliation: the provider completed with an error', async () => {
  const s = await harness.stack({ engine: { mode: 'external', url: temporal.url } });
  await setFaults(s, [{ kind: 'complete_with_error' }]);
  const executionId = await s.submit(await s.approvedToken(), 1);
  await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
  // The workflow ends once the ledger holds the reconciliation record.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  await save('reconciliation', `lexec-execution-${executionId}`);
});

it('records a run whose executor was killed mid-poll and restarted: the activity went to the new worker', async () => {
  const s = await harness.stack({ engine: { mode: 'external', url: temporal.url }, sandboxArgs: ['--complete-after-ms', '4000'] });
  const executionId = await s.submit(await s.approvedToken(), 1);
  await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
  await s.executor.kill('SIGKILL');
  await s.restart();
  const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
  expect(execution.provider_attempts).toHaveLength(1);
  await save('killed-mid-poll', `lexec-execution-${executionId}`);
});
