import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { durableEngines, durableHarness, openRecords, setFaults, until, type Stack } from '../support/durable-stack.js';
import type { SandboxFault } from '../support/sandbox-process.js';

/*
 * Evidence persisted with the park (issue 24 item 4; docs/reliability.md "Crash points"): for each
 * kind of evidence only the moment of parking knows — a request id the provider's status answer
 * or result named instead of the job's own, and the receipt id and ledger code of a receipt the
 * ledger rejected — the executor (a real `executor serve`, development build, LEXEC_DEV_CRASH_FILE
 * set) parks the execution and SIGKILLs itself at `run.after_park`, before the ledger record is
 * opened. Started again on the same state, it opens the record, and the record carries that
 * evidence. The ledger runs at contract level v4.4, which rejects the precise receipt.
 */

const harness = durableHarness('lexec-park-evidence-');

interface Case {
  readonly name: string;
  readonly fault: SandboxFault | null;
  readonly reason: string;
  /** What the record's evidence must hold beyond the attempt's own fields. */
  readonly check: (evidence: Record<string, unknown>) => void;
}

const mismatched = (evidence: Record<string, unknown>) => {
  expect(evidence.mismatched_request_id).toEqual(expect.stringMatching(/^[A-Za-z0-9-]+$/));
  expect(evidence.mismatched_request_id).not.toBe(evidence.provider_request_id);
};

const CASES: readonly Case[] = [
  { name: 'a mismatched request id from a status poll', fault: { kind: 'mismatched_request_id', route: 'status', times: 1 }, reason: 'billing_ambiguous', check: mismatched },
  { name: 'a mismatched request id from a result', fault: { kind: 'mismatched_request_id', route: 'result', times: 1 }, reason: 'billing_ambiguous', check: mismatched },
  {
    name: 'a receipt the ledger rejected, with its receipt id and ledger code',
    fault: null,
    reason: 'receipt_rejected',
    check: (evidence) => {
      expect(evidence.receipt_id).toEqual(expect.stringMatching(/^rcpt_/));
      expect(evidence.ledger_code).toBe('precise_receipt_unsupported');
    },
  },
];

describe.each(durableEngines())('evidence persisted with the park, killed at run.after_park (%s engine)', (_name, engine) => {
  it.each(CASES.map((entry) => [entry.name, entry] as const))('%s: the ledger record opened after the restart carries it', async (_title, entry) => {
    const armFile = join(harness.dir(), 'crash-point');
    const s: Stack = await harness.stack({ contractLevel: 'v4.4', engine: engine(), executorEnv: { [CRASH_FILE_ENV]: armFile } });
    if (entry.fault !== null) await setFaults(s, [entry.fault]);
    await writeFile(armFile, 'run.after_park\n');
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);

    // Parked locally, then killed before the ledger heard of it.
    await until('the executor killed at run.after_park', () => Promise.resolve(existsSync(`${armFile}.fired`) ? true : undefined), 60_000);
    expect((await readFile(`${armFile}.fired`, 'utf8')).trim()).toBe('run.after_park');
    await s.executor.kill();
    expect((await openRecords(s)).filter((record) => record.token_id === tokenId)).toEqual([]);

    await s.restart();
    const record = await until('the ledger record opened by the restarted executor', async () => (await openRecords(s)).find((record) => record.token_id === tokenId), 90_000);
    expect(record.reason).toBe(entry.reason);
    expect(typeof record.evidence.provider_request_id).toBe('string');
    expect(String(record.evidence.attempt_id)).toMatch(/^att_/);
    entry.check(record.evidence);
    const execution = await s.execution(executionId);
    expect(execution).toMatchObject({ state: 'reconciliation', state_reason: entry.reason });
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 180_000);
});
