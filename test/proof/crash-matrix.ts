import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV, CRASH_POINTS, type CrashPoint } from '../../src/crash-points.js';
import { expectFailure, expectResult } from '../support/cli.js';
import type { TomlTable } from '../support/example-profiles.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import type { SandboxFault } from '../support/sandbox-process.js';
import { readState } from '../support/stack-home.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';
import { checkInvariants } from './check-invariants.js';

/*
 * The crash-point matrix (issue 14 item 2; docs/reliability.md "Crash points"): for every crash
 * point, on one engine, a real stack started by `lexec stack start` with LEXEC_DEV_CRASH_FILE set
 * runs `lexec run` of two images while that point is armed. The process that reaches it (the
 * executor or the ledger) SIGKILLs itself there; the supervisor restarts it; `lexec run` rides the
 * restart out (an identical admission is a replay) and reports how the execution ended. Each case
 * then asserts the expected disposition (spec §3), how many submissions reached the provider, and
 * the independent invariant checker over everything the stack has written so far.
 */

/** What a kill at the point must come to. */
interface Expected {
  /** Which process the point is in (the one the supervisor restarts). */
  readonly killed: 'executor' | 'ledger';
  readonly state: 'succeeded' | 'reconciliation';
  readonly reason?: 'submission_unconfirmed';
  /** Submissions the provider received for the execution: never more than one. */
  readonly submissions: 0 | 1;
  /** A provider fault that leads the execution to the point (it is otherwise not on the path). */
  readonly fault?: SandboxFault;
}

const succeeds = (killed: Expected['killed'] = 'executor'): Expected => ({ killed, state: 'succeeded', submissions: 1 });
const unconfirmed = (submissions: 0 | 1, fault?: SandboxFault): Expected => ({ killed: 'executor', state: 'reconciliation', reason: 'submission_unconfirmed', submissions, fault });

/** The disposition of a kill at each point (every point in src/crash-points.ts has one). */
export const EXPECTED: Readonly<Record<CrashPoint, Expected>> = {
  // Nothing or only the claim is durable: the identical request is replayed and runs once.
  'admission.before_claim': succeeds(),
  'ledger.after_claim_commit': succeeds('ledger'),
  'admission.after_claim': succeeds(),
  'admission.after_pending': succeeds(),
  'admission.after_workflow_start': succeeds(),
  'run.before_attempt': succeeds(),
  // The attempt is recorded: whether any byte left cannot be known, so never a second submission.
  'run.after_attempt': unconfirmed(0),
  'run.after_submit': unconfirmed(1),
  // Checkpointed: the same operation is polled to the end.
  'run.after_checkpoint': succeeds(),
  'run.after_artifact_write': succeeds(),
  'run.after_artifact_record': succeeds(),
  'run.after_delivered': succeeds(),
  'run.after_receipt': succeeds(),
  // The ledger settled but its answer never arrived: the settle is asked again and answered as a replay.
  'ledger.after_settle_commit': succeeds('ledger'),
  'run.after_settle_answer': succeeds(),
  'run.after_settlement_record': succeeds(),
  'run.after_final_state': succeeds(),
  // Parked locally (the provider's answer was lost): the restart opens the ledger record.
  'run.after_park': unconfirmed(1, { kind: 'drop_after_receipt', times: 1 }),
};

/** Crashes of one component a stack takes before it is restarted (the supervisor's backoff doubles per crash). */
const CRASHES_PER_STACK = 3;

interface RunResult {
  authorization: { token_id: string; status: string };
  execution: { execution_id: string; state: string } | null;
  files: unknown[];
}

/** Registers the matrix for one engine: `embedded`, or `temporal` (skipped without the Temporal CLI). */
export function crashMatrix(engine: 'embedded' | 'temporal'): void {
  const cli = engine === 'temporal' ? temporalCli() : null;
  const runs = engine === 'embedded' || cli !== null;
  let temporal: DevServer | undefined;
  let stack: RunningStack | undefined;
  let armFile = '';
  let crashes = 0;

  const running = () => {
    if (stack === undefined) throw new Error('no stack');
    return stack;
  };

  describe.skipIf(!runs)(`crash points on the ${engine} engine (real stack, SIGKILL at each point, supervisor restart)`, () => {
    beforeAll(async () => {
      if (cli !== null) temporal = await startDevServer(cli);
      const edit = (profile: TomlTable) => {
        if (temporal !== undefined) {
          profile.workflow_engine = { mode: 'external', address: temporal.url, namespace: 'default', task_queue: `lexec-crash-${String(process.pid)}`, ui_url: temporal.uiUrl };
        }
      };
      // The arm file lives outside the stack's home; its name is fixed before the stack starts.
      armFile = join(tmpdir(), `lexec-crash-${engine}-${String(process.pid)}`);
      stack = await startRunningStack({ edit, env: { [CRASH_FILE_ENV]: armFile } });
    }, 180_000);

    afterAll(async () => {
      await stack?.stop();
      await temporal?.stop();
      await rm(armFile, { force: true });
      await rm(`${armFile}.fired`, { force: true });
    }, 120_000);

    it('every crash point has an expected disposition', () => {
      expect(Object.keys(EXPECTED).sort()).toEqual(Object.keys(CRASH_POINTS).sort());
    });

    it.each(Object.keys(CRASH_POINTS) as CrashPoint[])('killed at %s', async (point) => {
      const expected = EXPECTED[point];
      let s = running();
      if (crashes >= CRASHES_PER_STACK) {
        await s.restart();
        crashes = 0;
      }
      s = running();
      const restartsBefore = (await readState(s.paths)).components[expected.killed]?.restarts ?? 0;
      const submittedBefore = (await s.sandbox.submissions()).length;
      if (expected.fault !== undefined) await s.sandbox.setFaults([expected.fault]);
      await rm(`${armFile}.fired`, { force: true });
      await writeFile(armFile, `${point}\n`);

      const out = join(s.home, 'out', point);
      const run = await s.lexec(['run', `a lighthouse, killed at ${point}`, '--count', '2', '--out', out, '--json'], { timeoutMs: 120_000 });
      await s.sandbox.clearFaults();

      // The point was reached, by the process expected, and the supervisor brought it back.
      expect(existsSync(armFile), 'the point was never reached').toBe(false);
      expect((await readFile(`${armFile}.fired`, 'utf8')).trim()).toBe(point);
      crashes += 1;
      expect((await readState(s.paths)).components[expected.killed]?.restarts).toBe(restartsBefore + 1);

      if (expected.state === 'succeeded') {
        expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
        const result = expectResult(run) as RunResult;
        expect(result.execution?.state).toBe('succeeded');
        expect(result.authorization.status).toBe('settled');
        expect(result.files).toHaveLength(2);
      } else {
        const failure = expectFailure(run, 1, 'execution_in_reconciliation');
        expect(failure.message).toContain(expected.reason);
      }
      expect((await s.sandbox.submissions()).length - submittedBefore).toBe(expected.submissions);

      // The independent checker over everything this stack has written so far, once the stack
      // has come to rest: `lexec run` reports a parked execution as soon as the executor parked
      // it, while the ledger record is opened by the restarted activity (on Temporal, once the
      // engine has given up on the killed worker's heartbeat, 5-10 s later).
      const check = () =>
        checkInvariants({
          ledgerDatabase: s.paths.ledgerDatabase,
          executorDatabase: s.paths.executorDatabase,
          submissionsLog: join(s.paths.stateDir, 'sandbox-submissions.jsonl'),
          sandboxJobsFile: join(s.paths.stateDir, 'sandbox-jobs.jsonl'),
          artifactRoot: s.paths.artifactRoot,
        });
      let report = check();
      for (const deadline = Date.now() + 60_000; report.violations.length > 0 && Date.now() < deadline; report = check()) {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(report.violations).toEqual([]);
    }, 180_000);
  });
}
