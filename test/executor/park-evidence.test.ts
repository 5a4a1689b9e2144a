import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseExecutorConfig } from '../../src/executor/config/parse-executor-config.js';
import type { CrashPoints } from '../../src/crash-points.js';
import { createArtifactStore } from '../../src/executor/artifact-store.js';
import { executionIdFor, workflowIdFor } from '../../src/executor/domain/execution-states.js';
import { pricingSnapshot } from '../../src/executor/domain/pricing.js';
import { createExecutionRunner } from '../../src/executor/execution-runner.js';
import { createLedgerGateway, type LedgerGateway } from '../../src/executor/ledger-gateway.js';
import { ProviderProtocolError, type FalQueueClient } from '../../src/executor/provider/fal-queue-client.js';
import { createExecutionStore } from '../../src/executor/store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { sandboxConfig } from '../support/config-fixtures.js';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Evidence persisted with the park (executor migration 9): the runner parks an execution and its
 * evidence in one commit, and a process that died before the ledger record was opened reopens it
 * with that evidence — including what only the moment of parking knew. A real executor database,
 * a real ledger over HTTP; "died" is a crash point that throws where a development build SIGKILLs
 * (the stack-level proof is test/proof/park-evidence-crash.test.ts).
 */

let dir = '';
let ledger: TestLedger;
let actors: Actors;
let gateway: LedgerGateway;
beforeEach(async () => {
  dir = await makeTempDir('lexec-park-');
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
  gateway = createLedgerGateway({ endpoint: ledger.url, credential: actors.executor });
});
afterEach(async () => {
  gateway.close();
  await ledger.close();
  await removeDir(dir);
});

class Died extends Error {}
const dieAtPark: CrashPoints = {
  enabled: true,
  reach: (point) => {
    if (point === 'run.after_park') throw new Died(point);
  },
};

/** A checkpointed execution on its own database file, claimed at the ledger for it. */
async function checkpointed(db: Database.Database): Promise<{ tokenId: string; executionId: string }> {
  const created = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
  });
  const tokenId = created.body.authorization.token_id;
  const executionId = executionIdFor(tokenId);
  await gateway.claim(tokenId, executionId);
  const parsed = parseExecutorConfig(sandboxConfig());
  const target = parsed.ok ? parsed.value.execution_targets[0] : undefined;
  if (target === undefined) throw new Error('fixture target');
  const store = createExecutionStore(db);
  await store.createPending({
    executionId,
    workflowId: workflowIdFor(executionId),
    spendAuthTokenId: tokenId,
    accountId: 'acct',
    agentId: actors.agentId,
    targetId: target.target_id,
    request: { input: { prompt: 'a lighthouse' } },
    fingerprint: 'f',
    routeVersion: 2,
    snapshot: pricingSnapshot(target, 'square_hd', 1),
    heldUnits: 900_000n,
    currency: 'USD',
    quotedUnits: 3_000n,
    providerMode: 'sandbox',
    sendSeed: true,
  });
  store.createAttempt('att_park', executionId, 1, 'USD');
  store.checkpoint('att_park', { requestId: 'req-own', operationId: 'fal-ai/flux/requests/req-own', pollingOrigin: 'http://127.0.0.1:1', deadlineAt: Date.now() + 600_000 });
  return { tokenId, executionId };
}

function runner(db: Database.Database, crashPoints?: CrashPoints) {
  // The provider names another job's id in its status answer: a protocol breach, billing ambiguous.
  const provider = { status: () => Promise.reject(new ProviderProtocolError('request_id_mismatch', 'req-other')) } as unknown as FalQueueClient;
  return createExecutionRunner({
    store: createExecutionStore(db),
    provider,
    ledger: gateway,
    artifacts: createArtifactStore(join(dir, 'artifacts')),
    operationDeadlineMs: 600_000,
    ...(crashPoints === undefined ? {} : { crashPoints }),
  });
}

async function recordOf(tokenId: string) {
  const records = await call<{ records: { token_id: string; reason: string; evidence: Record<string, unknown> }[] }>(ledger.url, 'GET', '/reconciliation-records?status=open', {
    token: actors.reconciliation,
  });
  return records.body.records.find((record) => record.token_id === tokenId);
}

describe('evidence persisted with the park', () => {
  it('parks state and evidence together; after a death before the ledger record, the restart opens it with the mismatched request id', async () => {
    const path = join(dir, 'executor.db');
    const first = openDatabase(path, EXECUTOR_MIGRATIONS);
    const { tokenId, executionId } = await checkpointed(first);
    await expect(runner(first, dieAtPark)(executionId, 'poll_provider_operation')).rejects.toBeInstanceOf(Died);
    const parked = createExecutionStore(first).execution(executionId);
    expect(parked).toMatchObject({ state: 'reconciliation', state_reason: 'billing_ambiguous' });
    expect(JSON.parse(parked?.reconciliation_evidence ?? 'null')).toMatchObject({ provider_request_id: 'req-own', mismatched_request_id: 'req-other', outcome_code: 'request_id_mismatch' });
    expect(await recordOf(tokenId)).toBeUndefined();
    first.close();

    // The next process, on the same file.
    const second = openDatabase(path, EXECUTOR_MIGRATIONS);
    try {
      expect(await runner(second)(executionId, 'poll_provider_operation')).toEqual({ kind: 'done' });
      const record = await recordOf(tokenId);
      expect(record).toMatchObject({ reason: 'billing_ambiguous', evidence: { attempt_id: 'att_park', provider_request_id: 'req-own', mismatched_request_id: 'req-other' } });
    } finally {
      second.close();
    }
  });

  it('an execution parked before the evidence was kept (none stored) is reopened from its attempt, as before', async () => {
    const db = openDatabase(join(dir, 'executor.db'), EXECUTOR_MIGRATIONS);
    try {
      const { tokenId, executionId } = await checkpointed(db);
      await expect(runner(db, dieAtPark)(executionId, 'poll_provider_operation')).rejects.toBeInstanceOf(Died);
      db.prepare('UPDATE executions SET reconciliation_evidence = NULL').run();
      expect(await runner(db)(executionId, 'poll_provider_operation')).toEqual({ kind: 'done' });
      const record = await recordOf(tokenId);
      expect(record?.evidence).toMatchObject({ attempt_id: 'att_park', provider_request_id: 'req-own', outcome_code: 'request_id_mismatch' });
      expect(record?.evidence).not.toHaveProperty('mismatched_request_id');
    } finally {
      db.close();
    }
  });
});
