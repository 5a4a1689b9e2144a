import { mkdir, readFile } from 'node:fs/promises';
import { ExitCode, UserError } from '../../errors.js';
import { acquireProcessLock, processAlive } from '../../storage/process-lock.js';
import type { ProfilePaths } from './stack-home.js';

/*
 * Two locks per profile (docs/stack.md "Locks"). The launcher lock is held by a mutating launcher
 * command (start, stop, render, activate, rollback) for as long as it runs: a second one exits 5.
 * The supervisor lock is held by the profile's supervisor for as long as the stack runs: its pid
 * is how every command tells whether the stack runs. Both hold the owner's pid, so a lock left by
 * a killed process is recognised (its pid is gone) and taken over.
 */

async function lockOwner(path: string): Promise<number | null> {
  const pid = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
  return Number.isInteger(pid) && pid > 0 && processAlive(pid) ? pid : null;
}

/** Takes the launcher lock of a profile, or fails with exit 5 naming the holder's pid. */
export async function acquireLauncherLock(paths: ProfilePaths): Promise<() => Promise<void>> {
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  return acquireProcessLock(paths.commandLock, () => profileLocked(paths));
}

function profileLocked(paths: ProfilePaths): UserError {
  return new UserError('profile_locked', `Another launcher command is working on profile "${paths.name}" (lock ${paths.commandLock}).`, {
    nextStep: 'Wait for it to finish, then run the command again. A lock left by a killed launcher is recovered automatically.',
    exitCode: ExitCode.profileLocked,
  });
}

/** Takes the supervisor lock; a second supervisor for the same profile is refused. */
export async function acquireSupervisorLock(paths: ProfilePaths): Promise<() => Promise<void>> {
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  return acquireProcessLock(
    paths.supervisorLock,
    () =>
      new UserError('supervisor_running', `A supervisor already runs profile "${paths.name}".`, {
        nextStep: `Use \`lexec stack status --profile ${paths.name}\`, or \`lexec stack stop --profile ${paths.name}\` first.`,
      }),
  );
}

/** The pid of the profile's running supervisor, or null when the stack is not running. */
export async function runningSupervisorPid(paths: ProfilePaths): Promise<number | null> {
  return lockOwner(paths.supervisorLock);
}

/** Refuses an action that must not happen under a running stack (activate, rollback). */
export async function assertStackStopped(paths: ProfilePaths, action: string): Promise<void> {
  const pid = await runningSupervisorPid(paths);
  if (pid !== null) {
    throw new UserError('stack_running', `Profile "${paths.name}" is running (supervisor pid ${pid}); ${action} needs a stopped stack.`, {
      nextStep: `Run \`lexec stack stop --profile ${paths.name}\` first (there is no restart), then ${action} and \`lexec stack start\`.`,
    });
  }
}
