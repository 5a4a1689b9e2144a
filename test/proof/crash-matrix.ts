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
import { eventually, readState } from '../support/stack-home.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';
import { checkInvariants } from './check-invariants.js';
import { drive, ledgerAnswers, ledgerRows, query, submissionLines, tokenOf, type Scenario } from './crash-scenarios.js';
import { recordResumeFigure, resumeFigure } from './resume-figures.js';
import { OPERATOR_POINTS, type OperatorPoint } from './suspension-points.js';
import { executionWorkflows, isClosed, temporalRunStates, type RunState, type TemporalRunStates } from './temporal-run-states.js';

/*
 * The crash-point matrix (issue 14 item 2, issue 24 item 10; docs/reliability.md "Crash points"):
 * for every crash point, on one engine, a real stack started by `lexec stack start` with
 * LEXEC_DEV_CRASH_FILE set drives one execution down the point's path while that point is armed —
 * `lexec run` of two images (with the provider down, for the release path), or a human resolving
 * a parked execution (crash-scenarios.ts). The process that reaches it (the executor or the
 * ledger) SIGKILLs itself there; the supervisor restarts it; `lexec run` rides the restart out (an
 * identical admission is a replay), a human asks again. Each case then asserts the expected
 * disposition (spec §3), how many submissions reached the provider, the rows the ledger holds for
 * the authorization (each written once, whatever was asked again), and the independent invariant
 * checker over everything the stack has written so far.
 */

/** What the ledger holds for the execution's authorization afterwards: each row at most once. */
interface LedgerEnd {
  readonly status: 'settled' | 'released' | 'claimed';
  readonly settlements: 0 | 1;
  /** The release's reason, if released. */
  readonly release: 'not_transmitted' | 'reconciled_no_charge' | null;
  /** The reconciliation record: none, open, or resolved as said. */
  readonly record: null | 'open' | 'settled' | 'released';
}

/** What a kill at the point must come to. */
interface Expected {
  /** Which process the point is in (the one the supervisor restarts). */
  readonly killed: 'executor' | 'ledger';
  /** How the execution is driven to the point (crash-scenarios.ts). */
  readonly scenario: Scenario;
  /** The execution's end as the executor records it. */
  readonly state: 'succeeded' | 'failed' | 'reconciliation';
  readonly reason: string | null;
  /** Submissions the provider received for the execution: never more than one. */
  readonly submissions: 0 | 1;
  /** A provider fault that leads the execution to the point (it is otherwise not on the path). */
  readonly fault?: SandboxFault;
  readonly ledger: LedgerEnd;
  /** A human's resolution: whether the request finally answered was a replay (the resolution was recorded before the kill). */
  readonly resolutionReplayed?: boolean;
  /** A ledger route the executor asks again after the kill, answered as a replay (200, not 201): waited for at rest. */
  readonly replayRoute?: string;
}

const SETTLED: LedgerEnd = { status: 'settled', settlements: 1, release: null, record: null };
const PARKED: LedgerEnd = { status: 'claimed', settlements: 0, release: null, record: 'open' };
const billingAmbiguous: SandboxFault = { kind: 'complete_with_error', times: 1 };
const answerLost: SandboxFault = { kind: 'drop_after_receipt', times: 1 };

const succeeds = (killed: Expected['killed'] = 'executor'): Expected => ({ killed, scenario: 'run', state: 'succeeded', reason: null, submissions: 1, ledger: SETTLED });
const unconfirmed = (submissions: 0 | 1, fault?: SandboxFault): Expected => ({
  killed: 'executor',
  scenario: 'run',
  state: 'reconciliation',
  reason: 'submission_unconfirmed',
  submissions,
  fault,
  ledger: PARKED,
});
/** The provider down: proven never sent, the hold released (asked again after the kill: one release). */
const releasedUnsent = (killed: Expected['killed'] = 'executor'): Expected => ({
  killed,
  scenario: 'provider_down',
  state: 'failed',
  reason: 'not_transmitted',
  submissions: 0,
  ledger: { status: 'released', settlements: 0, release: 'not_transmitted', record: null },
});
/** Parked (billing ambiguous), then a human settles one image through the executor, asking again after the kill. */
const settledByHuman = (killed: Expected['killed'], resolutionReplayed = false): Expected => ({
  killed,
  scenario: 'resolve_settle',
  state: 'succeeded',
  reason: 'reconciled_settled',
  submissions: 1,
  fault: billingAmbiguous,
  ledger: { status: 'settled', settlements: 1, release: null, record: 'settled' },
  resolutionReplayed,
});
/** Parked (the answer lost), then a human releases it through the executor, asking again after the kill. */
const releasedByHuman = (killed: Expected['killed']): Expected => ({
  killed,
  scenario: 'resolve_release',
  state: 'failed',
  reason: 'reconciled_no_charge',
  submissions: 1,
  fault: answerLost,
  ledger: { status: 'released', settlements: 0, release: 'reconciled_no_charge', record: 'released' },
  resolutionReplayed: false,
});

/** The points on an execution's path: every point in src/crash-points.ts but an operator action's (suspension-points.ts). */
type ExecutionPoint = Exclude<CrashPoint, OperatorPoint>;

/**
 * The disposition of a kill at each point on an execution's path; a point on more than one path
 * (the ledger's settle and release serve the runner and a human alike) lists one per path.
 */
export const EXPECTED: Readonly<Record<ExecutionPoint, Expected | readonly Expected[]>> = {
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
  'ledger.after_settle_commit': [succeeds('ledger'), settledByHuman('ledger')],
  'run.after_settle_answer': succeeds(),
  'run.after_settlement_record': succeeds(),
  'run.after_final_state': succeeds(),
  // Parked locally (the provider's answer was lost): the restart opens the ledger record.
  'run.after_park': unconfirmed(1, answerLost),
  // The record committed, its answer lost: the executor asks again and is answered with the same record.
  'ledger.after_reconciliation_commit': {
    killed: 'ledger',
    scenario: 'run',
    state: 'reconciliation',
    reason: 'billing_ambiguous',
    submissions: 1,
    fault: billingAmbiguous,
    ledger: PARKED,
    replayRoute: '/executor/authorizations/:token_id/reconciliation',
  },
  // Never sent: released once, whichever step died (the release asked again is a replay).
  'run.before_release': releasedUnsent(),
  'ledger.after_release_commit': [releasedUnsent('ledger'), releasedByHuman('ledger')],
  'run.after_release_answer': releasedUnsent(),
  // A human's resolution through the executor: the human asks again; the kept receipt is reused,
  // the ledger's settle or release is a replay, the resolution is recorded once.
  'resolution.after_receipt': settledByHuman('executor'),
  'resolution.after_settle_answer': settledByHuman('executor'),
  'resolution.after_settlement_record': settledByHuman('executor'),
  'resolution.after_release_answer': releasedByHuman('executor'),
  'resolution.after_record': settledByHuman('executor', true),
  // A human resolved at the ledger itself; asked again, the ledger answers the same resolution.
  // The executor is not told: its execution stays in reconciliation (docs/executions.md).
  'ledger.after_resolve_commit': {
    killed: 'ledger',
    scenario: 'resolve_at_ledger',
    state: 'reconciliation',
    reason: 'billing_ambiguous',
    submissions: 1,
    fault: billingAmbiguous,
    ledger: { status: 'released', settlements: 0, release: 'reconciled_no_charge', record: 'released' },
    resolutionReplayed: true,
  },
  // The execution succeeded; the executor dies as `lexec run` downloads its first image: the
  // download is asked again once the restarted executor answers.
  'api.before_artifact_content': succeeds(),
};

/** Every case of the matrix: a point and one of its paths. */
export function matrixCases(): { name: string; point: CrashPoint; expected: Expected }[] {
  return (Object.keys(EXPECTED) as ExecutionPoint[]).flatMap((point) => {
    const paths = [EXPECTED[point]].flat();
    return paths.map((expected) => ({ name: paths.length > 1 ? `${point} (${expected.scenario})` : point, point, expected }));
  });
}

/**
 * Crashes of one component a stack takes before it is restarted: the supervisor's backoff doubles
 * per crash of a component (0.5, 1, 2 s; each component has its own streak), so a case never
 * waits more than 2 s for its restart. Counted per component from the supervisor's own restart
 * count, not per case: a ledger kill does not bring the executor's next backoff closer, and a
 * stack restart (stop and start, seconds more than any backoff) is taken only when due.
 */
const CRASHES_PER_COMPONENT = 3;

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
  /** The engine's word on each case's workflow run (Temporal only). */
  let runStates: TemporalRunStates | undefined;
  let stack: RunningStack | undefined;
  let armFile = '';

  const running = () => {
    if (stack === undefined) throw new Error('no stack');
    return stack;
  };

  describe.skipIf(!runs)(`crash points on the ${engine} engine (real stack, SIGKILL at each point, supervisor restart)`, () => {
    beforeAll(async () => {
      if (cli !== null) {
        temporal = await startDevServer(cli);
        runStates = temporalRunStates(temporal.address);
      }
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
      await runStates?.close();
      await temporal?.stop();
      await rm(armFile, { force: true });
      await rm(`${armFile}.fired`, { force: true });
    }, 120_000);

    it('every crash point has an expected disposition (those of operator actions: agent-suspension.test.ts, audit-crash.test.ts)', () => {
      expect([...Object.keys(EXPECTED), ...OPERATOR_POINTS].sort()).toEqual(Object.keys(CRASH_POINTS).sort());
    });

    it.each(matrixCases())('killed at $name', async ({ name, point, expected }) => {
      const s = running();
      let restartsBefore = (await readState(s.paths)).components[expected.killed]?.restarts ?? 0;
      if (restartsBefore >= CRASHES_PER_COMPONENT) {
        await s.restart();
        restartsBefore = (await readState(s.paths)).components[expected.killed]?.restarts ?? 0;
      }
      const submittedBefore = await submissionLines(s);
      const repliesBefore = expected.replayRoute === undefined ? 0 : await ledgerAnswers(s, expected.replayRoute, 200);
      await rm(armFile, { force: true });
      await rm(`${armFile}.fired`, { force: true });

      const driven = await drive({
        stack: s,
        scenario: expected.scenario,
        point,
        fault: expected.fault,
        arm: () => writeFile(armFile, `${point}\n`),
        fired: () => existsSync(`${armFile}.fired`),
      });

      // The point was reached, by the process expected, and the supervisor brought it back. A
      // point after the park (the ledger's record, opened by the parked run) may be reached only
      // after `lexec run` was told of the park, so it is waited for rather than looked at once.
      await eventually('the point was reached', () => Promise.resolve(existsSync(`${armFile}.fired`) ? true : undefined), 60_000);
      expect(existsSync(armFile), 'the point was never reached').toBe(false);
      expect((await readFile(`${armFile}.fired`, 'utf8')).trim()).toBe(point);
      await eventually('the killed process restarted', async () => ((await readState(s.paths)).components[expected.killed]?.restarts === restartsBefore + 1 ? true : undefined), 60_000);

      // What `lexec run` (or the human) was told.
      const { run } = driven;
      if (expected.scenario === 'run' || expected.scenario === 'provider_down') {
        if (expected.state === 'succeeded') {
          expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
          const result = expectResult(run) as RunResult;
          expect(result.execution?.state).toBe('succeeded');
          expect(result.authorization.status).toBe('settled');
          expect(result.files).toHaveLength(2);
        } else {
          const failure = expectFailure(run, 1, expected.state === 'failed' ? 'execution_failed' : 'execution_in_reconciliation');
          expect(failure.message).toContain(expected.reason);
        }
      }
      if (expected.resolutionReplayed !== undefined) expect(driven.resolution?.replayed).toBe(expected.resolutionReplayed);
      expect((await submissionLines(s)) - submittedBefore).toBe(expected.submissions);

      // At rest: the independent checker over everything this stack has written so far is quiet
      // (`lexec run` reports a parked execution as soon as the executor parked it, while the
      // ledger record is opened by the restarted activity), on Temporal the execution's workflow
      // run has closed — a case never passes while its run could still act — and a replay the
      // executor owes the ledger has been asked.
      const check = () =>
        checkInvariants({
          ledgerDatabase: s.paths.ledgerDatabase,
          executorDatabase: s.paths.executorDatabase,
          submissionsLog: join(s.paths.stateDir, 'sandbox-submissions.jsonl'),
          sandboxJobsFile: join(s.paths.stateDir, 'sandbox-jobs.jsonl'),
          artifactRoot: s.paths.artifactRoot,
        });
      const workflows = executionWorkflows(s.paths.executorDatabase, [driven.executionId]);
      let report = check();
      let runState: RunState | undefined;
      const atRest = async () => {
        report = check();
        if (report.violations.length > 0) return false;
        if (runStates === undefined) return true;
        [runState] = await runStates.of(workflows.map((workflow) => workflow.workflowId));
        return runState !== undefined && isClosed(runState);
      };
      for (const deadline = Date.now() + 60_000; !(await atRest()) && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(report.violations).toEqual([]);
      // Every lexec run ends COMPLETED (the runner said done), whatever the execution's end.
      if (runStates !== undefined) expect(runState, `the workflow run of ${driven.executionId}`).toMatchObject({ status: 'COMPLETED' });
      const route = expected.replayRoute;
      if (route !== undefined) await eventually(`the replay on ${route}`, async () => ((await ledgerAnswers(s, route, 200)) > repliesBefore ? true : undefined), 60_000);

      // How the execution ended, and the ledger wrote each row once: the kill and the request
      // asked again left one claim, one settlement or release, one record.
      const [execution] = query<{ state: string; state_reason: string | null }>(s.paths.executorDatabase, 'SELECT state, state_reason FROM executions WHERE execution_id = ?', driven.executionId);
      expect(execution).toEqual({ state: expected.state, state_reason: expected.reason });
      const rows = ledgerRows(s, tokenOf(s, driven.executionId));
      expect({
        status: rows.status,
        claimedBy: rows.claimedBy,
        settlements: rows.settlements,
        releases: rows.releases,
        records: rows.records.map((record) => (record.status === 'open' ? 'open' : record.resolution)),
      }).toEqual({
        status: expected.ledger.status,
        claimedBy: driven.executionId,
        settlements: expected.ledger.settlements,
        releases: expected.ledger.release === null ? [] : [expected.ledger.release],
        records: expected.ledger.record === null ? [] : [expected.ledger.record],
      });

      // How long it took to resume after the restart: printed and recorded, never asserted.
      const figure = await resumeFigure({ caseName: name, engine, killed: expected.killed, point, paths: s.paths, executionId: driven.executionId, closedAtMs: runState?.closedAtMs ?? null });
      if (figure !== null) console.error(recordResumeFigure(figure));
    }, 300_000);
  });
}
