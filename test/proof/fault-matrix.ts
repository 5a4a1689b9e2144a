import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { durableEngines, durableHarness, openRecords, setFaults, until, type EngineChoice, type Execution, type Stack, type StackOptions } from '../support/durable-stack.js';
import { checkInvariants } from './check-invariants.js';
import { executionWorkflows, temporalRunStates, unsettledRuns, wronglyClosed } from './temporal-run-states.js';

/*
 * The fault matrix (issue 14 item 3): one test per fault at the provider or the ledger, each with
 * its expected disposition, on the embedded engine and on a real Temporal server, and every run
 * then checked by the independent invariant checker (check-invariants.ts). Real processes: a
 * ledger, a sandbox provider (with its submissions log) and `executor serve`.
 */

// Imported by the two test files, so these hooks belong to whichever file runs.
const harness = durableHarness('lexec-faults-');

const terminal = (execution: Execution) => ['succeeded', 'failed', 'reconciliation'].includes(execution.state);

/** A stack whose sandbox keeps a submissions log, for the checker. */
function faultStack(engine: EngineChoice, options: StackOptions = {}): Promise<Stack> {
  const log = join(harness.dir(), 'submissions.jsonl');
  const args = options.sandboxArgs ?? ['--complete-after-ms', '200'];
  return harness.stack({ engine, ...options, sandboxArgs: [...args, '--submissions-log', log] });
}

/**
 * On Temporal (the executor's configuration names the engine) the stack is at rest only once
 * every execution's workflow run has closed — a case never passes while a run could still act —
 * and each must have closed COMPLETED.
 */
async function expectRunsClosed(s: Stack, executorDatabase: string): Promise<void> {
  const { workflow_engine: engine } = JSON.parse(await readFile(s.configPath, 'utf8')) as { workflow_engine: { mode: string; address?: string; namespace?: string } };
  if (engine.mode !== 'external' || engine.address === undefined) return;
  const runs = temporalRunStates(engine.address, engine.namespace);
  try {
    const executions = executionWorkflows(executorDatabase);
    let open = await unsettledRuns(runs, executions);
    for (const deadline = Date.now() + 60_000; open.length > 0 && Date.now() < deadline; open = await unsettledRuns(runs, executions)) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(open, 'workflow runs still open').toEqual([]);
    expect(wronglyClosed(await runs.of(executions.map((execution) => execution.workflowId)), executions)).toEqual([]);
  } finally {
    await runs.close();
  }
}

/** At rest, the independent checker over the stack's files: no violation of any money rule. */
async function expectInvariants(s: Stack): Promise<void> {
  const dir = harness.dir();
  const executorDatabase = join(dir, 'executor', 'executor.db');
  await expectRunsClosed(s, executorDatabase);
  const report = checkInvariants({
    ledgerDatabase: join(dir, 'ledger', 'state', 'ledger.db'),
    executorDatabase,
    submissionsLog: join(dir, 'submissions.jsonl'),
    artifactRoot: join(dir, 'executor', 'artifacts'),
  });
  expect(report.violations).toEqual([]);
  expect(report.counts.executions).toBeGreaterThan(0);
}

interface Disposition {
  readonly state: string;
  readonly reason?: string | null;
  /** The authorization's status at the ledger afterwards. */
  readonly authorization: string;
  readonly submissions: number;
  readonly record?: string;
}

async function expectDisposition(s: Stack, tokenId: string, executionId: string, expected: Disposition, timeoutMs?: number): Promise<Execution> {
  const execution = await s.waitFor(executionId, 'a terminal state', terminal, timeoutMs);
  expect({ state: execution.state, reason: execution.state_reason }).toEqual({ state: expected.state, reason: expected.reason ?? null });
  expect((await s.authorization(tokenId)).status).toBe(expected.authorization);
  // The executor parks locally first, then opens the ledger's record: wait for that record, not for the local state alone.
  if (expected.record !== undefined) {
    const reasons = await until('the ledger reconciliation record', async () => {
      const open = await openRecords(s);
      return open.length > 0 ? open.map((record) => record.reason) : undefined;
    });
    expect(reasons).toEqual([expected.record]);
  }
  // Nothing is submitted again afterwards.
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await s.sandbox.submissions()).toHaveLength(expected.submissions);
  await expectInvariants(s);
  return execution;
}

/**
 * The fault matrix on one engine (fault-matrix.embedded.test.ts, fault-matrix.temporal.test.ts: two
 * files, so the two engines run side by side). Without the Temporal CLI the Temporal file skips
 * with one line naming what it needs.
 */
export function faultMatrix(only: 'embedded' | 'Temporal'): void {
  const engines = durableEngines(only);
  if (engines.length === 0) {
    describe.skip('the fault matrix on the Temporal engine needs the Temporal CLI (LEXEC_TEMPORAL_CLI, or ../shared/tools/temporal-cli-bin)', () => {
      it.skip('skipped', () => undefined);
    });
    return;
  }
  describe.each(engines)('faults at the provider on the %s engine', (_name, engine) => {
    it('connection refused: proven not transmitted, the hold released', async () => {
      const s = await faultStack(engine());
      await s.sandbox.stop('SIGKILL');
      const tokenId = await s.approvedToken();
      const executionId = await s.submit(tokenId, 1);
      const execution = await s.waitFor(executionId, 'a terminal state', terminal);
      expect({ state: execution.state, reason: execution.state_reason }).toEqual({ state: 'failed', reason: 'not_transmitted' });
      expect((await s.authorization(tokenId)).status).toBe('released');
      await expectInvariants(s);
    }, 120_000);

    it('the provider received the submission and the answer was lost: submission unconfirmed, never sent again', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'drop_after_receipt', times: 1 }]);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'submission_unconfirmed', authorization: 'claimed', submissions: 1, record: 'submission_unconfirmed' });
    }, 120_000);

    it('a 5xx to the submission: it may have been received, so submission unconfirmed', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'http_error', route: 'submit', status: 503, times: 1 }]);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'submission_unconfirmed', authorization: 'claimed', submissions: 1, record: 'submission_unconfirmed' });
    }, 120_000);

    it('a 422 to the submission: the provider read it, so it was transmitted — submission unconfirmed, never sent again', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'unprocessable', times: 1 }]);
      const tokenId = await s.approvedToken();
      const execution = await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'submission_unconfirmed', authorization: 'claimed', submissions: 1, record: 'submission_unconfirmed' });
      expect(execution.provider_attempts).toMatchObject([{ state: 'ambiguous', checkpointed: false }]);
    }, 120_000);

    it('no answer within the provider request timeout after the provider received the submission: submission unconfirmed, never sent again', async () => {
      const s = await faultStack(engine(), { requestTimeoutSeconds: 2 });
      await setFaults(s, [{ kind: 'hang_submit', times: 1 }]);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'submission_unconfirmed', authorization: 'claimed', submissions: 1, record: 'submission_unconfirmed' });
      const [record] = await openRecords(s);
      expect(record?.evidence.outcome_code).toBe('timeout');
    }, 120_000);

    it('COMPLETED with an error: billing ambiguous', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'complete_with_error', times: 1 }]);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'billing_ambiguous', authorization: 'claimed', submissions: 1, record: 'billing_ambiguous' });
    }, 120_000);

    it('a foreign polling host: never polled, submission unconfirmed', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'foreign_host', field: 'status_url' }]);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'submission_unconfirmed', authorization: 'claimed', submissions: 1, record: 'submission_unconfirmed' });
    }, 120_000);

    it('a foreign media host: never fetched, billing ambiguous', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'foreign_host', field: 'image_url' }]);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'billing_ambiguous', authorization: 'claimed', submissions: 1, record: 'billing_ambiguous' });
    }, 120_000);

    it('a result for another request id (x-fal-request-id): billing ambiguous, never stored or billed as this one', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'mismatched_request_id', route: 'result' }]);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'billing_ambiguous', authorization: 'claimed', submissions: 1, record: 'billing_ambiguous' });
    }, 120_000);

    it('fewer images than asked: succeeded, settled for the images delivered', async () => {
      const s = await faultStack(engine());
      await setFaults(s, [{ kind: 'fewer_images', omit: 1, times: 1 }]);
      const tokenId = await s.approvedToken();
      const execution = await expectDisposition(s, tokenId, await s.submit(tokenId, 3), { state: 'succeeded', authorization: 'settled', submissions: 1 });
      expect(execution.artifact_count).toBe(2);
      expect((await s.authorization(tokenId)).settlement?.amount_units).toBe('6000');
    }, 120_000);
  });

  describe.each(engines)('faults at the ledger on the %s engine', (_name, engine) => {
    it('the ledger settles but its answer is lost: the executor asks again and ends succeeded with one settlement', async () => {
      let relay: Awaited<ReturnType<typeof harness.ledgerRelay>> | undefined;
      const s = await faultStack(engine(), {
        relay: async (ledgerUrl) => {
          relay = await harness.ledgerRelay(ledgerUrl);
          return relay.url;
        },
      });
      relay?.loseAnswers(/\/settle$/, 1);
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'succeeded', authorization: 'settled', submissions: 1 }, 60_000);
      expect(relay?.lostCount()).toBe(1);
    }, 120_000);

    it('the ledger down for 40 s while the execution settles: it settles once the ledger is back, once', async () => {
      let relay: Awaited<ReturnType<typeof harness.ledgerRelay>> | undefined;
      const s = await faultStack(engine(), {
        sandboxArgs: ['--complete-after-ms', '1000'],
        relay: async (ledgerUrl) => {
          relay = await harness.ledgerRelay(ledgerUrl);
          return relay.url;
        },
      });
      const tokenId = await s.approvedToken();
      const executionId = await s.submit(tokenId, 1);
      // Submitted (the claim is behind it); the ledger goes away before the job completes.
      await s.waitFor(executionId, 'the submission checkpointed', (e) => e.provider_attempts.some((attempt) => attempt.checkpointed) || terminal(e));
      relay?.down(40_000);
      await expectDisposition(s, tokenId, executionId, { state: 'succeeded', authorization: 'settled', submissions: 1 }, 90_000);
      expect(relay?.refusedCount()).toBeGreaterThan(0);
    }, 240_000);

    it('an older ledger refuses the precise receipt: receipt kept, reconciliation, no provider retry', async () => {
      const s = await faultStack(engine(), { contractLevel: 'v4.4' });
      const tokenId = await s.approvedToken();
      await expectDisposition(s, tokenId, await s.submit(tokenId, 1), { state: 'reconciliation', reason: 'receipt_rejected', authorization: 'claimed', submissions: 1, record: 'receipt_rejected' });
    }, 120_000);
  });
}
