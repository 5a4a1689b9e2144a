import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/domain/canonical-json.js';
import type { PriceModelSnapshot } from '../../src/domain/price-model-snapshot.js';
import { serializeJson } from '../../src/http/json-server.js';
import { executionIdFor, workflowIdFor } from '../../src/executor/domain/execution-states.js';
import { createExecutionAnswers } from '../../src/executor/execution-answers.js';
import { executionDetail } from '../../src/executor/execution-view.js';
import { createExecutionRevisions } from '../../src/executor/store/execution-revisions.js';
import { createExecutionStore, type ExecutionStore } from '../../src/executor/store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { executionRequest } from '../support/executor.js';

let dir: string;
let db: Database.Database;
let store: ExecutionStore;

beforeEach(async () => {
  dir = await makeTempDir('lexec-answers-');
  db = openDatabase(join(dir, 'executor.db'), EXECUTOR_MIGRATIONS);
  store = createExecutionStore(db);
});

afterEach(async () => {
  db.close();
  await removeDir(dir);
});

const snapshot: PriceModelSnapshot = {
  snapshot_version: 1,
  target_id: 'lexec:target:v1:flux-schnell',
  provider: 'fal',
  model: 'fal-ai/flux/schnell',
  image_size: 'square_hd',
  image_count: 2,
  currency: 'USD',
  unit: 'image',
  pricing_version: '2026-11-01',
  unit_price: { numerator: 3n, denominator: 1000n },
  rounding: 'ceil_micro_units',
};

const tokenFor = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** A pending execution created the way admission creates one; returns its id. */
function admitted(n: number): string {
  const tokenId = tokenFor(n);
  const executionId = executionIdFor(tokenId);
  const request = executionRequest(tokenId);
  store.createPending({
    executionId,
    workflowId: workflowIdFor(executionId),
    spendAuthTokenId: tokenId,
    accountId: 'acct_test',
    agentId: 'agt_test',
    targetId: 'lexec:target:v1:flux-schnell',
    request,
    fingerprint: fingerprint(request),
    routeVersion: 2,
    snapshot,
    heldUnits: 10_000n,
    currency: 'USD',
    quotedUnits: 6_000n,
    providerMode: 'sandbox',
  });
  return executionId;
}

/** What the answer must be: the execution detail built fresh from the database. */
const fresh = (executionId: string) => serializeJson({ execution: executionDetail(store, executionId) });
const parsed = (text: string | undefined) => JSON.parse(text ?? 'null') as { execution: Record<string, unknown> };

describe('execution revisions in the store', () => {
  it('every write an answer depends on moves the revision of its execution, and of no other', () => {
    const other = admitted(2);
    const id = executionIdFor(tokenFor(1));
    const created = store.revision(id);
    expect(admitted(1)).toBe(id);
    expect(store.revision(id)).not.toBe(created);
    const attemptId = 'att_1';
    const artifact = {
      artifact_id: 'art_00000000-0000-4000-8000-000000000001',
      execution_id: id,
      ordinal: 0n,
      media_type: 'image/png',
      size_bytes: 1n,
      sha256: 'ab',
      storage_key: 'k',
      width: null,
      height: null,
    };
    const receipt = { receipt_id: 'rcpt_1', execution_id: id, amount_units: 6_000n, currency: 'USD', provider_request_id: 'req_1', price_model_snapshot: '{}' };
    const checkpoint = { requestId: 'req_1', operationId: 'op_1', pollingOrigin: 'http://127.0.0.1:1', deadlineAt: 1 };
    // Object order is the order the writes run in.
    const writes: Record<string, () => void> = {
      markScheduled() { store.markScheduled(id); },
      setRunning() { store.setRunning(id, 'submit_provider'); },
      createAttempt() { store.createAttempt(attemptId, id, 1, 'USD'); },
      checkpoint() { store.checkpoint(attemptId, checkpoint); },
      setDelivered() { store.setDelivered(attemptId, 2); },
      insertArtifact() { store.insertArtifact(artifact); },
      insertPreciseReceipt() { store.insertPreciseReceipt(receipt); },
      markReceiptSettled() { store.markReceiptSettled('rcpt_1', 'stl_1'); },
      setAttemptOutcome() { store.setAttemptOutcome(attemptId, 'completed', null); },
      setFinal() { store.setFinal(id, 'reconciliation', 'billing_ambiguous'); },
      recordResolution() { store.recordResolution(id, { kind: 'settled', imagesBilled: 2, amountUnits: 6_000n, note: 'checked' }); },
    };
    // A store method added later must be classified here: a write must move the revision.
    const reads = ['admission', 'execution', 'revision', 'providerAttempts', 'receipt', 'artifacts', 'artifactCount', 'artifact', 'latestAttempt'];
    reads.push('underReconciliation', 'liveCommittedUnits', 'resolution', 'nonTerminal');
    expect(Object.keys(store).filter((method) => !reads.includes(method)).sort()).toEqual(['createPending', ...Object.keys(writes)].sort());
    for (const [name, write] of Object.entries(writes)) {
      const before = store.revision(id);
      const otherBefore = store.revision(other);
      write();
      expect({ name, moved: store.revision(id) !== before }).toEqual({ name, moved: true });
      expect({ name, otherMoved: store.revision(other) !== otherBefore }).toEqual({ name, otherMoved: false });
    }
  });

  it('a commit by another connection moves every execution', () => {
    const id = admitted(1);
    const before = store.revision(id);
    const outsider = new Database(join(dir, 'executor.db'));
    try {
      outsider.prepare("UPDATE executions SET state_reason = 'edited' WHERE execution_id = ?").run(id);
    } finally {
      outsider.close();
    }
    expect(store.revision(id)).not.toBe(before);
  });

  it('keeps a bounded number of revisions; a forgotten execution moves on, and never back to an earlier revision', () => {
    const revisions = createExecutionRevisions(2);
    revisions.bump('a');
    const seen = [revisions.current('a')];
    for (const id of ['b', 'c', 'd', 'e']) {
      revisions.bump(id);
      seen.push(revisions.current('a'));
    }
    for (let index = 1; index < seen.length; index += 1) expect(seen[index]).toBeGreaterThanOrEqual(seen[index - 1] as number);
    expect(seen.at(-1)).toBeGreaterThan(seen[0] as number);
    // After a write, an execution's revision is above every revision handed out before it.
    const before = Math.max(revisions.current('a'), revisions.current('d'), revisions.current('e'));
    revisions.bump('a');
    expect(revisions.current('a')).toBeGreaterThan(before);
  });
});

describe('execution answers', () => {
  it('serves the same text as a freshly built detail, and the new state after every change — never a stale one', () => {
    const answers = createExecutionAnswers(store);
    const id = admitted(1);
    const checkpoint = { requestId: 'req_1', operationId: 'op_1', pollingOrigin: 'http://127.0.0.1:1', deadlineAt: 1 };
    const steps: Record<string, () => void> = {
      markScheduled() { store.markScheduled(id); },
      setRunning() { store.setRunning(id, 'submit_provider'); },
      createAttempt() { store.createAttempt('att_1', id, 1, 'USD'); },
      checkpoint() { store.checkpoint('att_1', checkpoint); },
      setAttemptOutcome() { store.setAttemptOutcome('att_1', 'completed', null); },
      setFinal() { store.setFinal(id, 'succeeded', null); },
    };
    expect(answers.text(id)).toBe(fresh(id));
    for (const [name, step] of Object.entries(steps)) {
      const before = answers.text(id);
      expect(answers.text(id)).toBe(before);
      step();
      const after = answers.text(id);
      expect({ name, current: after === fresh(id), changed: after !== before }).toEqual({ name, current: true, changed: true });
    }
    expect(parsed(answers.text(id)).execution).toMatchObject({ state: 'succeeded', provider_attempts: [{ attempt_id: 'att_1', state: 'completed', checkpointed: true }] });
  });

  it('answers what another connection committed', () => {
    const answers = createExecutionAnswers(store);
    const id = admitted(1);
    expect(parsed(answers.text(id)).execution.state_reason).toBeNull();
    const outsider = new Database(join(dir, 'executor.db'));
    try {
      outsider.prepare("UPDATE executions SET state_reason = 'edited' WHERE execution_id = ?").run(id);
    } finally {
      outsider.close();
    }
    expect(parsed(answers.text(id)).execution.state_reason).toBe('edited');
    expect(answers.text(id)).toBe(fresh(id));
  });

  it('keeps at most its capacity of answers, least recently used first out', () => {
    let built = 0;
    const counting: ExecutionStore = {
      ...store,
      execution: (executionId: string) => {
        built += 1;
        return store.execution(executionId);
      },
    };
    const answers = createExecutionAnswers(counting, 2);
    const [a, b, c] = [admitted(1), admitted(2), admitted(3)];
    answers.text(a);
    answers.text(b);
    answers.text(a);
    expect(built).toBe(2);
    answers.text(c); // evicts b, the least recently used
    answers.text(a);
    expect(built).toBe(3);
    answers.text(b);
    expect(built).toBe(4);
  });

  it('has no answer for an execution that does not exist', () => {
    expect(createExecutionAnswers(store).text(executionIdFor('00000000-0000-4000-8000-000000000099'))).toBeUndefined();
  });
});
