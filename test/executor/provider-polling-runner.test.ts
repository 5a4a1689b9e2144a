import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseExecutorConfig } from '../../src/executor/config/parse-executor-config.js';
import { createArtifactStore } from '../../src/executor/artifact-store.js';
import { pricingSnapshot } from '../../src/executor/domain/pricing.js';
import { executionIdFor, workflowIdFor } from '../../src/executor/domain/execution-states.js';
import { createExecutionRunner } from '../../src/executor/execution-runner.js';
import type { LedgerGateway } from '../../src/executor/ledger-gateway.js';
import { ProviderUnavailable, type FalQueueClient } from '../../src/executor/provider/fal-queue-client.js';
import { createExecutionStore, type ExecutionStore } from '../../src/executor/store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { sandboxConfig } from '../support/config-fixtures.js';

/*
 * The runner's provider polling (issue 15 item 3) on a real execution store: the wait it asks the
 * engine for follows the job's age, the provider's queue position and Retry-After, and never
 * passes the operation's original deadline. A stand-in provider answers the status (the real
 * client's parsing is tested in fal-queue-client.test.ts); the clock is the test's.
 */

let dir = '';
let db: Database.Database;
let store: ExecutionStore;
beforeEach(async () => {
  dir = await makeTempDir('lexec-polling-');
  db = openDatabase(join(dir, 'executor.db'), EXECUTOR_MIGRATIONS);
  store = createExecutionStore(db);
});
afterEach(async () => {
  db.close();
  await removeDir(dir);
});

/** A checkpointed execution, its deadline `deadlineInMs` after the checkpoint; returns its id and when it was checkpointed. */
async function checkpointed(deadlineInMs = 600_000): Promise<{ executionId: string; at: number }> {
  const parsed = parseExecutorConfig(sandboxConfig());
  if (!parsed.ok) throw new Error('fixture config');
  const target = parsed.value.execution_targets[0];
  if (target === undefined) throw new Error('fixture target');
  const executionId = executionIdFor('token-polling');
  const snapshot = pricingSnapshot(target, 'square_hd', 1);
  await store.createPending({
    executionId,
    workflowId: workflowIdFor(executionId),
    spendAuthTokenId: 'token-polling',
    accountId: 'acct',
    agentId: 'agent',
    targetId: target.target_id,
    request: { input: { prompt: 'a lighthouse' } },
    fingerprint: 'f',
    routeVersion: 2,
    snapshot,
    heldUnits: 10_000n,
    currency: 'USD',
    quotedUnits: 3_000n,
    providerMode: 'sandbox',
    sendSeed: true,
  });
  store.createAttempt('att_polling', executionId, 1, 'USD');
  const now = Date.now();
  store.checkpoint('att_polling', { requestId: 'req-1', operationId: 'fal-ai/flux/requests/req-1', pollingOrigin: 'http://127.0.0.1:1', deadlineAt: now + deadlineInMs });
  // The store stamps the checkpoint with its own clock: the test's clock starts from that.
  const at = Number(store.latestAttempt(executionId)?.submit_settled_at);
  if (Math.abs(at - now) > 1_000) throw new Error('checkpoint time not stamped');
  return { executionId, at: now };
}

function runnerAt(at: () => number, status: FalQueueClient['status']) {
  const provider = { status } as unknown as FalQueueClient;
  return createExecutionRunner({
    store,
    provider,
    ledger: {} as LedgerGateway,
    artifacts: createArtifactStore(join(dir, 'artifacts')),
    now: at,
    operationDeadlineMs: 600_000,
    polling: { initialMs: 100, maxMs: 5_000 },
  });
}

describe('the runner polls the provider as the job goes', () => {
  it('soon after the submission, then less often as the job ages', async () => {
    const { executionId, at } = await checkpointed();
    const submittedAt = Number(store.latestAttempt(executionId)?.submit_settled_at ?? at);
    let clock = submittedAt + 50;
    const run = runnerAt(() => clock, () => Promise.resolve({ status: 'IN_PROGRESS', failed: false, queuePosition: null }));
    expect(await run(executionId, 'poll_provider_operation')).toEqual({ kind: 'later', delayMs: 100 });
    clock = submittedAt + 8_000;
    expect(await run(executionId, 'poll_provider_operation')).toEqual({ kind: 'later', delayMs: 2_000 });
    clock = submittedAt + 300_000;
    expect(await run(executionId, 'poll_provider_operation')).toEqual({ kind: 'later', delayMs: 5_000 });
  });

  it('honours the queue position and a Retry-After', async () => {
    const { executionId } = await checkpointed();
    const clock = Number(store.latestAttempt(executionId)?.submit_settled_at) + 50;
    const queued = runnerAt(() => clock, () => Promise.resolve({ status: 'IN_QUEUE', failed: false, queuePosition: 14 }));
    expect(await queued(executionId, 'poll_provider_operation')).toEqual({ kind: 'later', delayMs: 1_500 });
    const throttled = runnerAt(() => clock, () => Promise.reject(new ProviderUnavailable('HTTP 429', 7_000)));
    expect(await throttled(executionId, 'poll_provider_operation')).toEqual({ kind: 'later', delayMs: 7_000 });
  });

  it('never waits past the original deadline, and at the deadline parks the execution', async () => {
    const { executionId, at } = await checkpointed(10_000);
    let clock = at + 9_900;
    const run = runnerAt(() => clock, () => Promise.resolve({ status: 'IN_PROGRESS', failed: false, queuePosition: null }));
    expect(await run(executionId, 'poll_provider_operation')).toEqual({ kind: 'later', delayMs: 100 });
    clock = at + 10_000;
    const parked = runnerAt(() => clock, () => Promise.reject(new Error('must not be asked after the deadline')));
    // The ledger record cannot be opened here (no ledger); the local state is what is proven.
    await parked(executionId, 'poll_provider_operation').catch(() => undefined);
    expect(store.execution(executionId)).toMatchObject({ state: 'reconciliation', state_reason: 'deadline_expired' });
  });
});
