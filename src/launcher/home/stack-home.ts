import { METRICS_CAPABILITY_FILE } from '../../executor/managed-credentials.js';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { UsageError } from '../../errors.js';

/**
 * Where the launcher keeps everything: `$LEXEC_HOME` (absolute) or `~/.lexec`. Layout
 * (docs/stack.md "File layout"):
 *
 *   <home>/selected-profile            the saved selection (one line: a profile name)
 *   <home>/profiles/<name>/profile.toml operator-owned source
 *   <home>/profiles/<name>/generations/<id>/{executor.json,ledger.json,manifest.json}
 *   <home>/profiles/<name>/active       the active generation id
 *   <home>/profiles/<name>/state/…      databases, artifacts, credentials, handoff, locks
 *   <home>/profiles/<name>/logs/…       one bounded rotating log per component
 *
 * Every profile has its own directory, so a sandbox and a live profile never share state.
 */
export function lexecHome(env: NodeJS.ProcessEnv): string {
  const configured = env.LEXEC_HOME;
  if (configured === undefined || configured === '') return join(homedir(), '.lexec');
  if (!isAbsolute(configured)) {
    throw new UsageError('lexec_home_not_absolute', 'LEXEC_HOME must be an absolute path; got a relative one.', {
      nextStep: 'Set LEXEC_HOME to a full path (for example "$HOME/.lexec"), or unset it to use ~/.lexec.',
    });
  }
  return configured;
}

/** The conventional default profile: used when none is selected, created on the first start. */
export const DEFAULT_PROFILE = 'sandbox';

const PROFILE_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/** Checks a profile name: it becomes a directory name, so it is kept to a safe alphabet. */
export function profileName(raw: string): string {
  if (!PROFILE_NAME.test(raw)) {
    throw new UsageError('profile_name_invalid', 'A profile name must be 1-40 characters: lower-case letters, digits, "-" and "_", starting with a letter or digit.', {
      nextStep: 'List the profiles with `lexec stack profiles`, then pass one of them (for example --profile sandbox).',
    });
  }
  return raw;
}

/** Every path of one profile; derived, never operator input. */
export interface ProfilePaths {
  readonly name: string;
  readonly dir: string;
  readonly source: string;
  readonly generationsDir: string;
  readonly activeFile: string;
  readonly stateDir: string;
  readonly executorDatabase: string;
  readonly ledgerDatabase: string;
  readonly artifactRoot: string;
  readonly catalogPath: string;
  readonly temporalDataDir: string;
  /** 0700; every credential file in it is 0600. */
  readonly credentialsDir: string;
  readonly ledgerAdminCapability: string;
  /** The executor's managed credential state (`credentials.state_dir`). */
  readonly executorCredentialsDir: string;
  readonly agentCapability: string;
  readonly approverCapability: string;
  /** The active handoff (spec §5.6): endpoints plus credential file paths, 0600. */
  /** The Prometheus scraper's capability (`GET /metrics` at the ledger and the executor; docs/metrics.md). */
  readonly metricsCapability: string;
  readonly handoffFile: string;
  /** An executor host's enrolment at its remote ledger (0600; docs/deployment.md "Enrolment"): ids, never a capability. */
  readonly enrolmentFile: string;
  /** Held by a mutating launcher command (start, stop, render, activate, rollback) while it runs. */
  readonly commandLock: string;
  /** Held by the profile's supervisor for as long as it runs; its pid says whether the stack runs. */
  readonly supervisorLock: string;
  /** The supervisor's published view of its children (pids, ports, restarts). */
  readonly supervisorState: string;
  readonly logsDir: string;
}

export function profilePaths(home: string, name: string): ProfilePaths {
  const dir = join(home, 'profiles', profileName(name));
  const stateDir = join(dir, 'state');
  const credentialsDir = join(stateDir, 'credentials');
  return {
    name,
    dir,
    source: join(dir, 'profile.toml'),
    generationsDir: join(dir, 'generations'),
    activeFile: join(dir, 'active'),
    stateDir,
    executorDatabase: join(stateDir, 'executor.db'),
    ledgerDatabase: join(stateDir, 'ledger.db'),
    artifactRoot: join(stateDir, 'artifacts'),
    catalogPath: join(stateDir, 'provider-catalog.json'),
    temporalDataDir: join(stateDir, 'temporal'),
    credentialsDir,
    ledgerAdminCapability: join(credentialsDir, 'admin.capability'),
    executorCredentialsDir: join(credentialsDir, 'executor'),
    agentCapability: join(credentialsDir, 'agent.capability'),
    approverCapability: join(credentialsDir, 'approver.capability'),
    // One capability at both servers; the executor reads it from its managed state (executor/managed-credentials.ts).
    metricsCapability: join(credentialsDir, 'executor', METRICS_CAPABILITY_FILE),
    handoffFile: join(stateDir, 'handoff.json'),
    enrolmentFile: join(stateDir, 'enrolment.json'),
    commandLock: join(stateDir, 'launcher.lock'),
    supervisorLock: join(stateDir, 'supervisor.lock'),
    supervisorState: join(stateDir, 'supervisor.json'),
    logsDir: join(dir, 'logs'),
  };
}

export function profilesDir(home: string): string {
  return join(home, 'profiles');
}

export function selectionFile(home: string): string {
  return join(home, 'selected-profile');
}
