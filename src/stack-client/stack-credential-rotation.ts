import { unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { capabilityDigest, generateCapability, MAX_ROTATION_GRACE_SECONDS } from '../credentials/capability.js';
import { promotePrivateFile, readPrivateFile, readPrivateFileIfPresent, writePrivateFile } from '../credentials/private-file.js';
import { errorCode, UsageError, UserError } from '../errors.js';
import { managedCredentialPaths, LEDGER_CREDENTIAL_ID } from '../executor/managed-credentials.js';
import { createLedgerClient } from '../ledger/client/ledger-client.js';
import { answerMayBeLost } from '../ledger/client/ledger-client-errors.js';
import { activeStack, type ActiveStack } from './locate-stack.js';
import { stackLedgerTrust } from './connect-ledger.js';
import { acquireLauncherLock } from '../launcher/home/stack-locks.js';
import { writeHandoff } from '../launcher/handoff/handoff.js';

/*
 * `lexec stack credentials rotate` (docs/credentials.md "Rotating a stack's own credentials"): the
 * stack's own capabilities replaced while it runs. For each role, in an order that never locks the
 * launcher out:
 *
 * 1. the new capability is written to `<file>.next` (0600) before anything changes at a server;
 * 2. the server replaces the old credential with it in one transaction (the old one keeps working
 *    for the grace: clients that hold it in memory finish what they do, and re-read the file on a
 *    401 — src/ledger/client/ledger-client.ts `reloadToken`);
 * 3. `<file>.next` is renamed over the file (atomic): every reader sees the old or the new one.
 *
 * A rotation interrupted between 2 and 3 is finished by the next run, which finds `<file>.next`
 * accepted by the ledger and puts it in place (an unaccepted one is removed: it was never
 * registered). New ids are the ones the stack's own start derives from a capability's digest, so
 * the next `stack start` finds every rotated credential registered (`unchanged`), and
 * `bootstrap-managed` stays idempotent (the ledger answers the executor credential's first id with
 * its line's current credential). The admin capability goes last: every other role is rotated with
 * the admin capability as it was when the command began, or as the previous run left it.
 */

export const STACK_CREDENTIAL_ROLES = ['agent', 'approver', 'executor', 'caller', 'reconciliation', 'metrics', 'admin'] as const;
export type StackCredentialRole = (typeof STACK_CREDENTIAL_ROLES)[number];

/** How long the old capabilities keep working unless told otherwise: long enough for any client mid-request. */
export const DEFAULT_STACK_ROTATION_GRACE_SECONDS = 60;

export interface RotatedRole {
  readonly role: StackCredentialRole;
  readonly credential_id: string;
  readonly replaced_credential_id: string;
  /** Until when the old capability is still accepted (the grace); null when refused at once. */
  readonly old_accepted_until: string | null;
  /** `finished`: an interrupted earlier rotation of this role was put in place instead. */
  readonly outcome: 'rotated' | 'finished';
  readonly credential_file: string;
}

export interface RotateStackCredentialsRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profileFlag: string | undefined;
  /** The roles to rotate; empty: all of them. */
  readonly roles: readonly StackCredentialRole[];
  readonly graceSeconds: number;
  /** Rotates the executor's own caller or reconciliation capability (at the executor). */
  readonly rotateAtExecutor?: ExecutorRotation;
  /** The executor's steps for the metrics capability it shares with the ledger; null: the stack runs no executor. */
  readonly metricsAtExecutor?: (stack: ActiveStack) => Promise<SharedExecutorSteps | null>;
}

/** A managed executor's part in rotating a capability it shares with the ledger (src/executor/credentials/rotate-executor-credential.ts). */
export interface SharedExecutorSteps {
  register(token: string): Promise<string>;
  withdraw(credentialId: string): Promise<void>;
  endPrevious(previousToken: string, graceSeconds: number): Promise<unknown>;
}

export type ExecutorRotation = (
  stack: ActiveStack,
  role: 'caller' | 'reconciliation',
  graceSeconds: number,
) => Promise<Omit<RotatedRole, 'role'>>;

export interface RotateStackCredentialsResult {
  readonly profile: string;
  readonly grace_seconds: number;
  readonly rotated: readonly RotatedRole[];
}

type LedgerRole = Exclude<StackCredentialRole, 'caller' | 'reconciliation'>;


function ledgerRoleFile(stack: ActiveStack, role: LedgerRole): string {
  const { paths } = stack;
  if (role === 'admin') return paths.ledgerAdminCapability;
  if (role === 'agent') return paths.agentCapability;
  if (role === 'approver') return paths.approverCapability;
  if (role === 'metrics') return paths.metricsCapability;
  return managedCredentialPaths(paths.executorCredentialsDir).ledger;
}

/** The id the stack's own start would register this capability under (stack-local-credentials.ts, bootstrap-managed). */
function derivedId(role: LedgerRole, digestHex: string): string {
  const short = digestHex.slice(0, 16);
  if (role === 'admin') return `admin-${short}`;
  if (role === 'executor') return `${LEDGER_CREDENTIAL_ID}-${short}`;
  return `lexec-local-${role}-${short}`;
}

/** `<file>.next`: where a new capability waits until its server accepts it. */
export const nextFileOf = (file: string) => join(dirname(file), `${basename(file)}.next`);

/**
 * Rotates a role the ledger accepts. `shared`: the executor accepts the same capability too (the
 * metrics capability): the new one is registered there before the ledger rotates (withdrawn if
 * the ledger refuses), and the previous one ended there once the file holds the new — so the
 * scraper's file is accepted by both servers at every step.
 */
async function rotateLedgerRole(stack: ActiveStack, role: LedgerRole, graceSeconds: number, shared: SharedExecutorSteps | null = null): Promise<RotatedRole> {
  const url = stack.handoff.ledger.endpoint;
  const file = ledgerRoleFile(stack, role);
  const next = nextFileOf(file);
  const trust = await stackLedgerTrust(stack);
  const admin = createLedgerClient({ url, token: await readPrivateFile(stack.paths.ledgerAdminCapability, 'ledger admin capability'), ...trust });

  // An earlier run stopped between the ledger's rotation and the rename: finish it.
  const waiting = await readPrivateFileIfPresent(next, 'rotated capability');
  if (waiting !== null) {
    const accepted = await createLedgerClient({ url, token: waiting, ...trust })
      .selfCredential()
      .catch(() => null);
    if (accepted !== null && accepted.rotated_from !== null) {
      const previous = shared === null ? null : await readPrivateFile(file, `${role} capability`);
      await shared?.register(waiting);
      await promotePrivateFile(next, file);
      if (shared !== null && previous !== null) await shared.endPrevious(previous, graceSeconds);
      return { role, credential_id: accepted.credential_id, replaced_credential_id: accepted.rotated_from, old_accepted_until: null, outcome: 'finished', credential_file: file };
    }
    await unlink(next);
  }

  const current = await readPrivateFile(file, `${role} capability`);
  const old = await createLedgerClient({ url, token: current, ...trust })
    .selfCredential()
    .catch((error: unknown) => {
      if (error instanceof UserError && error.code === 'ledger_unauthorized') {
        throw new UserError('stack_credential_refused', `The ledger refuses the stack's own ${role} capability (${file}), so it cannot be rotated with it.`, {
          nextStep: 'It was revoked: `lexec ledger credentials list` shows it; the stack needs a restart with a new one (move the file away, then `lexec stack start`).',
        });
      }
      throw error;
    });
  const token = generateCapability(role);
  const digest = capabilityDigest(token).toString('hex');
  await writePrivateFile(next, `${token}\n`);
  const sharedId = shared === null ? null : await shared.register(token);
  let rotation;
  try {
    rotation = await admin.rotateCredential(old.credential_id, { newCredentialId: derivedId(role, digest), digestSha256: digest, graceSeconds });
  } catch (error) {
    // A refusal changed nothing: the new capability is useless. A lost answer may have rotated: keep it for the next run.
    if (!answerMayBeLost(error)) {
      await unlink(next).catch(() => undefined);
      if (sharedId !== null) await shared?.withdraw(sharedId).catch(() => undefined);
    }
    throw error;
  }
  await promotePrivateFile(next, file);
  await shared?.endPrevious(current, graceSeconds);
  return {
    role,
    credential_id: rotation.credential.credential_id,
    replaced_credential_id: rotation.replaced.credential_id,
    old_accepted_until: rotation.replaced.expires_at,
    outcome: 'rotated',
    credential_file: file,
  };
}

/**
 * Rotates the running stack's own capabilities (all roles, or the ones asked), under the profile's
 * launcher lock, then rewrites the handoff (same files, new time): clients find the new
 * capabilities where they found the old ones.
 */
export async function rotateStackCredentials(request: RotateStackCredentialsRequest): Promise<RotateStackCredentialsResult> {
  if (!Number.isInteger(request.graceSeconds) || request.graceSeconds < 0 || request.graceSeconds > MAX_ROTATION_GRACE_SECONDS) {
    throw new UsageError('invalid_flag_value', `--grace-seconds must be a whole number from 0 to ${MAX_ROTATION_GRACE_SECONDS}.`, { nextStep: 'Run the command with --help to see its flags.' });
  }
  const stack = await activeStack(request.env, request.profileFlag);
  const release = await acquireLauncherLock(stack.paths);
  try {
    // Under the lock, the stack as it is now (a stop or restart may have come first).
    const current = await activeStack(request.env, request.profileFlag);
    const asked = request.roles.length === 0 ? STACK_CREDENTIAL_ROLES : STACK_CREDENTIAL_ROLES.filter((role) => request.roles.includes(role));
    const rotated: RotatedRole[] = [];
    for (const role of asked) {
      if (role === 'caller' || role === 'reconciliation') {
        if (request.rotateAtExecutor === undefined) throw new Error('no executor rotation given');
        rotated.push({ role, ...(await request.rotateAtExecutor(current, role, request.graceSeconds)) });
      } else if (role === 'metrics') {
        rotated.push(await rotateLedgerRole(current, role, request.graceSeconds, (await request.metricsAtExecutor?.(current)) ?? null));
      } else {
        rotated.push(await rotateLedgerRole(current, role, request.graceSeconds));
      }
    }
    await writeHandoff(current.paths, { ...current.handoff, written_at: new Date().toISOString() }).catch((error: unknown) => {
      if (errorCode(error) !== 'ENOENT') throw error;
    });
    return { profile: current.paths.name, grace_seconds: request.graceSeconds, rotated };
  } finally {
    await release();
  }
}
