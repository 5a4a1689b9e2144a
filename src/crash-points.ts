import { isAbsolute } from 'node:path';
import { readFileSync, renameSync, writeSync } from 'node:fs';
import type { BuildKind } from './build-info.js';
import { UserError } from './errors.js';

/*
 * Crash points (docs/reliability.md "Crash points"): named places between the durable steps of an
 * execution where a development build kills its own process with SIGKILL when told to, so that the
 * proof suite can stop each step exactly there and prove what a restart makes of it.
 *
 * Told how: LEXEC_DEV_CRASH_FILE names a file holding one point's name. The first process of the
 * stack to reach that point renames the file to `<file>.fired` (atomic: one process wins, and a
 * restarted process finds nothing armed) and SIGKILLs itself. Nothing else reads the variable.
 * A release build ignores it entirely: `createCrashPoints` answers the no-op for any build that is
 * not a development build, and the points then cost one property call each.
 *
 * Each point is "after" one durable step and, with nothing durable in between, "before" the next:
 * the table below says both.
 */

/** Every crash point: where it is, what has happened (after) and what has not (before). */
export const CRASH_POINTS = {
  'admission.before_claim': 'executor admission: before the ledger is asked to claim the authorization (nothing durable yet)',
  'ledger.after_claim_commit': 'ledger: the claim committed, before it answers the executor',
  'admission.after_claim': 'executor admission: the claim answered, before the pending execution is recorded',
  'admission.after_pending': 'executor admission: the pending execution recorded, before its workflow is started',
  'admission.after_workflow_start': 'executor admission: the workflow started, before it is marked scheduled and the caller answered',
  'run.before_attempt': 'submit phase running, before the provider attempt is recorded',
  'run.after_attempt': 'the provider attempt recorded, before any byte of the submission is sent',
  'run.after_submit': 'the submission sent and accepted by the provider, before the checkpoint is committed',
  'run.after_checkpoint': 'the checkpoint (request id, polling origin, deadline) committed, before the first poll',
  'run.after_artifact_write': 'an image written to the artifact store, before its artifact row is recorded',
  'run.after_artifact_record': 'an artifact row recorded, before the next image is written',
  'run.after_delivered': 'the delivered image count recorded, before the receipt is kept',
  'run.after_receipt': 'the precise receipt kept, before the settle is sent to the ledger',
  'ledger.after_settle_commit': 'ledger: the settlement committed, before it answers the executor',
  'run.after_settle_answer': 'the ledger answered the settle, before the settlement id is recorded',
  'run.after_settlement_record': 'the settlement id recorded on the receipt, before the final state',
  'run.after_final_state': 'the final state recorded, before the engine hears the activity ended',
  'run.after_park': 'parked for reconciliation locally, before the ledger record is opened',
  'ledger.after_reconciliation_commit': 'ledger: the reconciliation record committed, before it answers the executor',
  // The release path: an attempt proven never transmitted releases its hold.
  'run.before_release': 'the attempt recorded as not transmitted, before the ledger is asked to release the hold',
  'ledger.after_release_commit': 'ledger: the release committed, before it answers the executor',
  'run.after_release_answer': 'the ledger answered the release, before the final state (failed) is recorded',
  // A human's resolution through the executor (reconciliation.ts), and at the ledger itself.
  'resolution.after_receipt': 'a human settles: the receipt for the images billed kept, before the ledger is asked to settle',
  'resolution.after_settle_answer': 'a human settles: the ledger answered the settle, before the settlement id is recorded',
  'resolution.after_settlement_record': 'a human settles: the settlement id recorded on the receipt, before the resolution',
  'resolution.after_release_answer': 'a human releases: the ledger answered the release, before the resolution',
  'resolution.after_record': 'the resolution recorded (the execution final), before the human is answered',
  'ledger.after_resolve_commit': 'ledger: a human resolved a reconciliation record (its settlement or release committed), before it answers',
  // An operator suspends an agent (docs/ledger.md "Suspending an agent"), and resumes it. The
  // first is inside the suspension's one transaction — the one point that is not after a durable
  // step: killed there, nothing of the suspension may remain.
  'ledger.during_suspend': 'ledger: inside the suspension transaction, the agent marked suspended but its unclaimed authorizations not yet cancelled (nothing committed)',
  'ledger.after_suspend_commit': 'ledger: the suspension (the agent suspended, its unclaimed authorizations cancelled) committed, before it answers the operator',
  'ledger.after_resume_commit': 'ledger: the agent resumed (committed), before it answers the operator',
  // An approver's decision (approve or deny) and its audit event, one transaction.
  'ledger.after_decision_commit': 'ledger: an approver decided a request (approved or denied, with its audit event: committed), before it answers the approver',
  'api.before_artifact_content': 'executor API: an image of a succeeded execution asked for, before any of its bytes is sent (the download a client makes last)',
} as const;

export type CrashPoint = keyof typeof CRASH_POINTS;

/** The environment variable that arms crash points (development builds only). */
export const CRASH_FILE_ENV = 'LEXEC_DEV_CRASH_FILE';

export interface CrashPoints {
  /** Whether this process honours crash points (a development build given LEXEC_DEV_CRASH_FILE). */
  readonly enabled: boolean;
  /** Kills this process with SIGKILL if `point` is the armed one; otherwise returns at once. */
  reach(point: CrashPoint): void;
}

/** What release builds, and every process not told otherwise, get. */
export const NO_CRASH_POINTS: CrashPoints = { enabled: false, reach: () => undefined };

export interface CrashPointOptions {
  readonly buildKind: BuildKind;
  readonly env: NodeJS.ProcessEnv;
  /** How the process dies (default: SIGKILL to itself); tests of this module pass their own. */
  readonly kill?: () => void;
}

/** The crash points of one process: armed only in a development build given LEXEC_DEV_CRASH_FILE. */
export function createCrashPoints(options: CrashPointOptions): CrashPoints {
  const file = options.env[CRASH_FILE_ENV];
  if (options.buildKind !== 'development' || file === undefined || file === '') return NO_CRASH_POINTS;
  if (!isAbsolute(file)) {
    throw new UserError('invalid_environment', `${CRASH_FILE_ENV} must be an absolute path.`, { nextStep: `Unset ${CRASH_FILE_ENV}, or give the full path of the file that names the crash point.` });
  }
  const kill = options.kill ?? (() => process.kill(process.pid, 'SIGKILL'));
  return {
    enabled: true,
    reach(point) {
      let armed: string;
      try {
        armed = readFileSync(file, 'utf8').trim();
      } catch {
        return; // nothing armed
      }
      if (armed !== point) return;
      try {
        renameSync(file, `${file}.fired`);
      } catch {
        return; // another process of the stack took it first
      }
      // Written synchronously: nothing after this line runs, buffered output included. A line
      // that cannot be written (a full or closed pipe) must not stop the kill.
      try {
        writeSync(2, `${JSON.stringify({ level: 50, time: Date.now(), pid: process.pid, event: 'crash_point_fired', point })}\n`);
      } catch {
        // the kill matters, not the line
      }
      kill();
    },
  };
}
