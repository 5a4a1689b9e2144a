import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { executionRequest } from '../support/executor.js';
import { call } from '../support/ledger.js';
import { durableEngines, durableHarness, killDuringSubmission, openRecords, setFaults, until, type Execution, type Stack } from '../support/durable-stack.js';

/*
 * Durable execution between real processes (issue 5; on Temporal, issue 11): a real ledger, a
 * real sandbox provider and a real executor. Recovery dispositions are proven by SIGKILLing the
 * executor at the point in question and starting it again on the same state — on the embedded
 * engine and, where the Temporal CLI is available, on a real Temporal server (external mode:
 * one dev server for the file, a task queue of its own per stack). The runner is the same; only
 * the engine that schedules and retries it differs.
 */

const harness = durableHarness();
const stack = harness.stack;
const engines = durableEngines();

describe('end to end', () => {
  it('an authorization and a POST become stored PNG artifacts, a settlement of exactly the priced amount, and one submission', async () => {
    const s = await stack();
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 2);
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.artifact_count).toBe(2);
    // 2 images x 3/1000 USD = 0.006 USD = 6000 micro-units.
    expect(execution.receipt).toMatchObject({ exact_amount: '6000', scale: 6, receipt_shape: 'precise' });
    expect(execution.receipt?.ledger_settlement_id).toMatch(/^stl_/);
    // The completed provider attempt records the same exact amount, scale and currency (spec §2).
    expect(execution.provider_attempts).toMatchObject([{ state: 'completed', exact_amount: '6000', scale: 6, currency: 'USD' }]);
    expect(execution.recommended_action.code).toBe('none');

    const listing = await call<{ artifacts: { content_path: string; sha256: string; media_type: string; width: string }[] }>(
      s.executor.url(),
      'GET',
      `/v1/executions/${executionId}/artifacts`,
      { token: s.caller },
    );
    expect(listing.body.artifacts).toHaveLength(2);
    for (const artifact of listing.body.artifacts) {
      const response = await fetch(`${s.executor.url()}${artifact.content_path}`, { headers: { authorization: `Bearer ${s.caller}` } });
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(artifact.sha256);
      expect(bytes.readUInt32BE(16)).toBe(1024);
    }
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '6000' } });
    expect((await s.sandbox.submissions()).filter((record) => record.request_id !== null)).toHaveLength(1);

    // What the engine persisted: the stable workflow id, the execution id and the phase — no
    // credential, body, URL or path.
    const db = new Database(join(harness.dir(), 'executor', 'executor.db'), { readonly: true });
    const runs = db.prepare('SELECT * FROM workflow_runs').all() as Record<string, unknown>[];
    db.close();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ workflow_id: `lexec-execution-${executionId}`, execution_id: executionId, phase: 'settle', status: 'completed' });
    const persisted = JSON.stringify(runs);
    for (const forbidden of [s.caller, 'http', '/', 'lexec_', 'lighthouse', harness.dir()]) expect(persisted).not.toContain(forbidden);
  }, 120_000);
});

/**
 * The ledger's open reconciliation records once there are `count`: the executor parks an execution
 * locally first (its state shows `reconciliation` from then on) and opens the ledger's record right
 * after — after a restart, once its engine runs the step again.
 */
const openRecordsOnce = (s: Stack, count = 1) => until(`${String(count)} open reconciliation record(s) at the ledger`, async () => {
  const open = await openRecords(s);
  return open.length >= count ? open : undefined;
});

describe.each(engines)('recovery dispositions on the %s engine (SIGKILL and restart)', (name, engine) => {
  const stackOn = (options: Parameters<typeof stack>[0] = {}) => stack({ engine: engine(), ...options });
  it('submit may have succeeded, checkpoint not committed: reconciliation, no resubmit, no release', async () => {
    const s = await stackOn();
    const { tokenId, executionId } = await killDuringSubmission(s);
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution.state_reason).toBe('submission_unconfirmed');
    expect(execution.provider_attempts).toMatchObject([{ state: 'ambiguous', checkpointed: false }]);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    const records = await openRecordsOnce(s);
    expect(records.map((record) => [record.token_id, record.reason])).toEqual([[tokenId, 'submission_unconfirmed']]);
    // Never answered: no request id, but the window the provider can have received it in, from
    // the attempt's record to the restart that found it interrupted.
    const [submission] = await s.sandbox.submissions();
    const window = records[0]?.evidence.submit_window as { from: string; until: string };
    expect(Date.parse(window.from)).toBeLessThanOrEqual(Date.parse(submission?.received_at ?? ''));
    expect(Date.parse(window.until)).toBeGreaterThanOrEqual(Date.parse(submission?.received_at ?? ''));
    // And the request's own correlation value: the seed it carried, which the provider kept.
    expect(records[0]?.evidence.correlation).toEqual({ field: 'seed', value: submission?.seed, sent: true });
    expect(submission?.seed).toEqual(expect.any(Number));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await s.sandbox.submissions()).toHaveLength(1);
  }, 120_000);

  it.runIf(name === 'embedded')('a power failure lost the unsynced engine hand-off: the pending execution is scheduled again at start and runs once', async () => {
    // Four submissions that are never answered hold the engine's four worker slots, so a fifth
    // admitted execution stays queued.
    const s = await stackOn();
    await setFaults(s, [{ kind: 'hang_submit', times: 4 }]);
    for (let index = 0; index < 4; index += 1) await s.submit(await s.approvedToken(), 1);
    await until('four submissions held', async () => ((await s.sandbox.submissions()).length === 4 ? true : undefined));
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    expect((await s.execution(executionId)).state).toBe('scheduled');
    await s.executor.kill('SIGKILL');

    // What survives a power failure when the hand-off and `scheduled` commits (which do not wait
    // for their own fsync) are lost: the durable pending execution, without its workflow run.
    const db = new Database(join(harness.dir(), 'executor', 'executor.db'));
    db.prepare('DELETE FROM workflow_runs WHERE execution_id = ?').run(executionId);
    db.prepare("UPDATE executions SET state = 'pending' WHERE execution_id = ?").run(executionId);
    db.close();

    await s.sandbox.clearFaults();
    await s.restart();
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.provider_attempts).toHaveLength(1);
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
    expect(await s.sandbox.submissions()).toHaveLength(5);
  }, 120_000);

  it('checkpoint committed: polling of the same operation resumes, one submission, one settlement', async () => {
    const s = await stackOn({ sandboxArgs: ['--complete-after-ms', '3000'] });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
    await s.executor.kill('SIGKILL');
    await s.restart();
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.provider_attempts).toHaveLength(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
  }, 120_000);

  it('original deadline expired: not refreshed, reconciliation, no re-inspection advice, no replacement operation', async () => {
    const s = await stackOn({ deadlineSeconds: 2 });
    await setFaults(s, [{ kind: 'never_complete' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
    await s.executor.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await s.restart();
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution.state_reason).toBe('deadline_expired');
    expect(execution.recommended_action.code).toBe('contact_provider_support');
    expect(execution.provider_attempts).toMatchObject([{ state: 'deadline_expired' }]);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 120_000);

  it('billing ambiguous: evidence kept, reconciliation, nothing repeated after a restart', async () => {
    const s = await stackOn();
    await setFaults(s, [{ kind: 'complete_with_error' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    await s.executor.kill('SIGKILL');
    await s.restart();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const execution = await s.execution(executionId);
    expect(execution).toMatchObject({ state: 'reconciliation', state_reason: 'billing_ambiguous', provider_attempts: [{ state: 'provider_failed' }] });
    const records = await openRecordsOnce(s);
    expect(records).toHaveLength(1);
    expect(records[0]?.evidence).toMatchObject({ outcome_code: 'completed_with_error' });
    expect(JSON.stringify(records[0]?.evidence)).not.toMatch(/https?:\/\//);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 120_000);

  it('an older ledger rejects the precise receipt: receipt kept, reconciliation, no provider retry, precision intact', async () => {
    const s = await stackOn({ contractLevel: 'v4.4' });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    await s.executor.kill('SIGKILL');
    await s.restart();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const execution = await s.execution(executionId);
    expect(execution).toMatchObject({ state: 'reconciliation', state_reason: 'receipt_rejected', recommended_action: { code: 'upgrade_ledger_then_reconcile' } });
    expect(execution.receipt).toMatchObject({ exact_amount: '3000', scale: 6, receipt_shape: 'precise', ledger_settlement_id: null });
    expect(execution.artifact_count).toBe(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    expect((await openRecordsOnce(s)).map((record) => record.reason)).toEqual(['receipt_rejected']);
  }, 120_000);

  it('failure proven to precede transmission: killed before the release reached the ledger, released after the restart', async () => {
    let relay: Awaited<ReturnType<typeof harness.ledgerRelay>> | undefined;
    const s = await stackOn({
      relay: async (ledgerUrl) => {
        relay = await harness.ledgerRelay(ledgerUrl);
        return relay.url;
      },
    });
    if (relay === undefined) throw new Error('no relay');
    const gate = relay;
    await s.sandbox.stop('SIGKILL');
    gate.hold(/\/release$/);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    // The submission failed before any connection; the release is on its way and held.
    await until('release held', () => Promise.resolve(gate.heldCount() > 0 ? true : undefined));
    expect((await s.execution(executionId)).provider_attempts).toMatchObject([{ state: 'not_transmitted' }]);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    await s.executor.kill('SIGKILL');
    gate.hold(null);
    await s.restart();
    const execution = await s.waitFor(executionId, 'failure', (e) => e.state === 'failed');
    expect(execution).toMatchObject({ state_reason: 'not_transmitted', provider_attempts: [{ state: 'not_transmitted' }] });
    expect((await s.authorization(tokenId)).status).toBe('released');
  }, 120_000);
});

describe('the executor reconciliation route', () => {
  const resolve = (s: Stack, executionId: string, body: unknown, token = s.resolver) =>
    call<{ replayed: boolean; resolution: Record<string, unknown>; execution: Execution; error?: Record<string, unknown> }>(
      s.executor.url(),
      'POST',
      `/v1/reconciliation/executions/${executionId}/resolve`,
      { token, body },
    );

  it('lists executions under reconciliation with evidence and settles one with the provider evidence, recorded', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'complete_with_error' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 2);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');

    expect((await call(s.executor.url(), 'GET', '/v1/reconciliation/executions', { token: s.caller })).status).toBe(401);
    const listed = await call<{ executions: { execution_id: string; evidence: { outcome_code: string }[] }[] }>(
      s.executor.url(),
      'GET',
      '/v1/reconciliation/executions',
      { token: s.resolver },
    );
    expect(listed.body.executions.map((execution) => [execution.execution_id, execution.evidence[0]?.outcome_code])).toEqual([[executionId, 'completed_with_error']]);
    expect((await resolve(s, executionId, { resolution: 'settle', note: 'provider invoice' })).body).toEqual({
      error: { code: 'invalid_request', reason_code: 'images_billed_required', fields: ['images_billed'] },
    });
    // A note is kept and shown to people: one holding a capability is refused, nothing resolved.
    const secretNote = await resolve(s, executionId, { resolution: 'settle', images_billed: 2, note: `invoice ${generateCapability('reconciliation')}` });
    expect(secretNote).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['note'] } } });
    expect((await s.authorization(tokenId)).status).toBe('claimed');

    const settled = await resolve(s, executionId, { resolution: 'settle', images_billed: 1, note: 'provider invoice INV-1 shows one image' });
    expect(settled.status).toBe(200);
    expect(settled.body).toMatchObject({
      replayed: false,
      resolution: { resolution: 'settled', images_billed: 1, amount_units: '3000', note: 'provider invoice INV-1 shows one image' },
      execution: { state: 'succeeded', state_reason: 'reconciled_settled', receipt: { exact_amount: '3000', receipt_shape: 'precise' } },
    });
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
    expect(await openRecords(s)).toEqual([]);
    expect((await resolve(s, executionId, { resolution: 'settle', images_billed: 1, note: 'again' })).body).toMatchObject({ replayed: true });
    expect((await resolve(s, executionId, { resolution: 'release', note: 'changed my mind' })).body).toEqual({ error: { code: 'conflict', reason_code: 'already_resolved' } });
    expect(await s.sandbox.submissions()).toHaveLength(1);
  }, 120_000);

  it('releases when the provider proves no charge', async () => {
    const s = await stack();
    const { tokenId, executionId } = await killDuringSubmission(s);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    const released = await resolve(s, executionId, { resolution: 'release', note: 'provider support: request never queued' });
    expect(released.body).toMatchObject({ resolution: { resolution: 'released' }, execution: { state: 'failed', state_reason: 'reconciled_no_charge' } });
    expect((await s.authorization(tokenId)).status).toBe('released');
    expect(await openRecords(s)).toEqual([]);
  }, 120_000);

  it('an older ledger still refuses the kept precise receipt: nothing is resolved until the upgrade', async () => {
    const s = await stack({ contractLevel: 'v4.4' });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    const refused = await resolve(s, executionId, { resolution: 'settle', note: 'try settling' });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'conflict', reason_code: 'ledger_precise_receipt_unsupported' } } });
    expect((await s.execution(executionId)).state).toBe('reconciliation');
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 120_000);

  it('a kept receipt fixes the images billed: another count is refused, and the resolution records the receipt\'s', async () => {
    const s = await stack({ contractLevel: 'v4.4' });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 2);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation' && e.receipt !== null);
    // The installation is upgraded: the same ledger database under a ledger that takes the precise receipt.
    await s.upgradeLedger();
    const contradicting = await resolve(s, executionId, { resolution: 'settle', images_billed: 1, note: 'one image' });
    expect(contradicting).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'images_billed_differs_from_kept_receipt', fields: ['images_billed'] } } });
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    const settled = await resolve(s, executionId, { resolution: 'settle', note: 'the kept receipt: two images' });
    expect(settled.body).toMatchObject({ resolution: { resolution: 'settled', images_billed: 2, amount_units: '6000' }, execution: { state: 'succeeded' } });
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '6000' } });
  }, 120_000);
});

describe('provider hosts, answers and the disabled mode', () => {
  it('an acceptance whose status URL is on a foreign host is never polled: the submission is ambiguous', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'foreign_host', field: 'status_url' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution).toMatchObject({ state_reason: 'submission_unconfirmed', provider_attempts: [{ state: 'ambiguous', checkpointed: false }] });
    const submissions = await s.sandbox.submissions();
    expect(submissions).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    // The refused acceptance's request id is kept: the operator finds the job at the provider by it.
    const requestId = submissions[0]?.request_id;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(execution.provider_attempts).toMatchObject([{ request_id: requestId }]);
    const [record] = await openRecordsOnce(s);
    expect(record?.evidence).toMatchObject({ provider_request_id: requestId, outcome_code: 'polling host not allowed' });
    const window = record?.evidence.submit_window as { from: string; until: string };
    const received = Date.parse(submissions[0]?.received_at ?? '');
    expect(Date.parse(window.from)).toBeLessThanOrEqual(received);
    expect(Date.parse(window.until)).toBeGreaterThanOrEqual(received);
  }, 120_000);

  it('a status answer for another request id makes billing ambiguous', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'mismatched_request_id', route: 'status' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution.state_reason).toBe('billing_ambiguous');
    const submissions = await s.sandbox.submissions();
    expect(submissions).toHaveLength(1);
    // Both ids are evidence: the job's own, and the other one the provider's answer named.
    const [record] = await openRecordsOnce(s);
    expect(record?.evidence).toMatchObject({ provider_request_id: submissions[0]?.request_id, mismatched_request_id: expect.any(String) as unknown });
    expect(record?.evidence.mismatched_request_id).not.toBe(submissions[0]?.request_id);
  }, 120_000);

  it('fewer images than asked are stored and billed as delivered', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'fewer_images', omit: 1 }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 2);
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.artifact_count).toBe(1);
    expect(execution.receipt?.exact_amount).toBe('3000');
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
  }, 120_000);

  it('{"mode":"disabled"} admits nothing and sends nothing', async () => {
    const s = await stack({ providersDisabled: true });
    const tokenId = await s.approvedToken();
    const answer = await call(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body: executionRequest(tokenId) });
    expect(answer.body).toEqual({ error: { code: 'invalid_request', reason_code: 'target_not_selectable', fields: ['target_id'] } });
    const targets = await call<{ targets: unknown[] }>(s.executor.url(), 'GET', '/v2/execution-targets', { token: s.caller });
    expect(targets.body.targets).toEqual([]);
    expect(await s.sandbox.submissions()).toHaveLength(0);
    expect((await s.authorization(tokenId)).status).toBe('approved');
  }, 120_000);
});
