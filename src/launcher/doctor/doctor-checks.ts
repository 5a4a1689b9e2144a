import type { SecretReference } from '../../config/schema-parts.js';
import { describeMissingVersion, pinWaysOut, versionSourceNote, type TemporalCliObservation } from '../../executor/engine/temporal/temporal-cli-observation.js';
import { describeBusyPort, type PortProbe } from '../../process/port-probe.js';
import type { StackComponent } from '../generations/render-generation.js';
import type { StatePermissions } from './state-permissions.js';
import type { FieldIssue } from '../../errors.js';
import { rewriteHandoffStep } from '../handoff/handoff-step.js';
import type { SupervisorPhase } from '../supervisor/supervisor-state.js';
import { failed, passed, skipped, warned, type DoctorCheck, type DoctorCheckId, type Lineage } from './doctor-report.js';

/*
 * The doctor's rules, as pure functions of what was observed (doctor-observations.ts gathers the
 * observations; services/stack-doctor.ts wires the two). Each returns one check of the report.
 */

const short = (commit: string): string => (commit === 'unknown' ? commit : commit.slice(0, 12));

export interface LineageInput {
  readonly binary: Lineage;
  /** From the active generation's manifest; null without an active generation. */
  readonly generation: Lineage | null;
  readonly pinnedLedgerProductVersion: string | null;
  readonly developmentAllowance: boolean | null;
}

const RERENDER = 'Stop the stack, render with this binary (`lexec stack render`), activate the new generation, start.';

/**
 * Spec §9: every component is this one binary — one contract version, one product version (the
 * executor pins the ledger's), one known commit; a release build renders the allowance off.
 */
export function lineageChecks(input: LineageInput): DoctorCheck[] {
  const { binary, generation } = input;
  const checks: DoctorCheck[] = [];

  if (generation === null) {
    checks.push(skipped('lineage.contract', 'no active generation to compare with this binary'));
  } else {
    const mismatches = [
      generation.contract_version !== binary.contract_version ? `contract ${generation.contract_version} (binary ${binary.contract_version})` : null,
      generation.product_version !== binary.product_version ? `product ${generation.product_version} (binary ${binary.product_version})` : null,
      input.pinnedLedgerProductVersion !== null && input.pinnedLedgerProductVersion !== binary.product_version
        ? `executor.json pins ledger ${input.pinnedLedgerProductVersion} (binary ${binary.product_version})`
        : null,
    ].filter((text) => text !== null);
    checks.push(
      mismatches.length === 0
        ? passed('lineage.contract', `one contract ${binary.contract_version} and product ${binary.product_version} for ledger, executor and launcher`)
        : failed('lineage.contract', `the active generation belongs to another lexec release: ${mismatches.join('; ')}`, `${RERENDER} Or run the lexec release that rendered it.`),
    );
  }

  if (binary.commit === 'unknown') {
    checks.push(
      failed('lineage.commit', 'this lexec build does not know its source commit (unstamped build)', 'Build lexec from its git checkout (`npm run build`, or `npm run build:release` for a release).'),
    );
  } else if (generation !== null && generation.commit !== binary.commit) {
    const summary = `the active generation was rendered by commit ${short(generation.commit)}, this binary is ${short(binary.commit)}`;
    // A development build runs under the development allowance; a release build gets the production check.
    checks.push(binary.build_kind === 'release' ? failed('lineage.commit', summary, RERENDER) : warned('lineage.commit', `${summary} (development build)`, RERENDER));
  } else {
    checks.push(passed('lineage.commit', `one source commit ${short(binary.commit)}`));
  }

  if (binary.build_kind === 'release') {
    if (input.developmentAllowance === true) {
      checks.push(
        failed('lineage.development_allowance', 'release build, but the active executor.json has the development allowance on', `${RERENDER} A release build never renders the allowance.`),
      );
    } else if (input.developmentAllowance === false) {
      checks.push(passed('lineage.development_allowance', 'release build; the development allowance is off'));
    } else {
      checks.push(skipped('lineage.development_allowance', 'release build; no active generation yet'));
    }
  } else {
    checks.push(
      warned(
        'lineage.development_allowance',
        `development build (commit ${short(binary.commit)}): production lineage checks are relaxed by the development allowance`,
        'For real money use a release build (`npm run build:release` from a clean checkout), then render and activate.',
      ),
    );
  }
  return checks;
}

/** What holds a port of a stack: a supervised component, or a managed Temporal server's gRPC and UI ports. */
export type PortOwner = StackComponent | 'temporal' | 'temporal_ui';

export interface PortInput {
  readonly component: PortOwner;
  /** null: the generation has no such component (a live profile has no sandbox). */
  readonly port: number | null;
  readonly probe: PortProbe | null;
  readonly running: boolean;
  /** For a busy port of a running stack: is the holder one of the stack's own processes? */
  readonly ownership: 'stack' | 'foreign' | 'unknown';
  /** The component's pid as the supervisor published it, when known. */
  readonly expectedPid: number | null;
}

const portCheckId = (component: PortOwner): DoctorCheckId => `ports.${component}.free`;

/**
 * A stopped stack needs its ports free (and names whoever holds one); a running stack's ports
 * are expected to be held by its own components.
 */
export function portCheck(input: PortInput): DoctorCheck {
  const id = portCheckId(input.component);
  if (input.port === null || input.probe === null) {
    return skipped(id, input.component.startsWith('temporal') ? 'no managed Temporal server in this generation' : `no ${input.component} in this generation`);
  }
  const { probe, component } = input;
  const changePort = `Stop that process, or change ports.${component} in profile.toml, then render and activate.`;
  if (!input.running) {
    return probe.free ? passed(id, `port ${probe.port} (${component}) is free`) : failed(id, `${describeBusyPort(probe)}; the ${component} needs it`, changePort);
  }
  if (probe.free) {
    return warned(id, `the stack runs but nothing listens on port ${probe.port} (${component})`, 'See `lexec stack status` and `lexec stack logs --component ' + component + '`.');
  }
  if (input.ownership === 'stack') return passed(id, `port ${probe.port} is held by this stack's ${component}${probe.holder === null ? '' : ` (pid ${probe.holder.pid})`}`);
  if (input.ownership === 'foreign') {
    const expected = input.expectedPid === null ? '' : ` (the ${component} is pid ${input.expectedPid})`;
    return failed(id, `${describeBusyPort(probe)}, not by this stack${expected}`, changePort);
  }
  return passed(id, `port ${probe.port} is in use while the stack runs (its holder cannot be seen from here)`);
}

export interface DiskInput {
  readonly path: string;
  /** Bytes available to this user on the filesystem of `path`; null when it cannot be measured. */
  readonly availableBytes: bigint | null;
}

export const DISK_WARN_BELOW = 1024n ** 3n;
export const DISK_FAIL_BELOW = 100n * 1024n ** 2n;

/** "79.4 GiB" or "512 MiB", computed in bigint (statfs sizes can pass 2^53). */
function bytes(value: bigint): string {
  const tenthsOfGiB = (value * 10n) / 1024n ** 3n;
  return value >= 1024n ** 3n ? `${tenthsOfGiB / 10n}.${tenthsOfGiB % 10n} GiB` : `${value / 1024n ** 2n} MiB`;
}

export type HandoffObservation =
  | { readonly kind: 'missing' }
  | { readonly kind: 'damaged'; readonly issues: readonly FieldIssue[] }
  | { readonly kind: 'present'; readonly profile: string; readonly supervisorPid: number; readonly writtenAt: string };

export type HandoffInput =
  | { readonly profile: string; readonly file: string; readonly supervisorPid: null }
  | { readonly profile: string; readonly file: string; readonly supervisorPid: number; readonly phase: SupervisorPhase | null; readonly found: HandoffObservation };

/**
 * The active handoff (docs/run.md "Handoff"): a running stack without one cannot be found by any
 * client, so it fails; a stack still starting publishes it once ready, so that only warns.
 */
export function stackHandoffCheck(input: HandoffInput): DoctorCheck {
  if (input.supervisorPid === null) return skipped('stack.handoff', 'the stack is stopped: no handoff is expected (clients are told to start it)');
  const { found, profile, file, supervisorPid } = input;
  if (found.kind === 'present' && found.profile === profile && found.supervisorPid === supervisorPid) {
    return passed('stack.handoff', `${file} names the running supervisor pid ${supervisorPid} (written ${found.writtenAt})`);
  }
  if (found.kind === 'missing' && input.phase !== 'running') {
    return warned('stack.handoff', `no handoff yet: the stack is still starting (supervisor pid ${supervisorPid}, phase ${input.phase ?? 'starting'}); it is written once every component is ready`, rewriteHandoffStep(profile));
  }
  const what =
    found.kind === 'missing'
      ? `${file} is missing`
      : found.kind === 'damaged'
        ? `${file} is damaged`
        : found.profile !== profile
          ? `${file} names profile "${found.profile}"`
          : `${file} was written by supervisor pid ${found.supervisorPid}, not the running pid ${supervisorPid}`;
  const issues = found.kind === 'damaged' ? found.issues : [];
  return failed('stack.handoff', `the stack runs but ${what}: \`lexec run\`, the ledger verbs and \`lexec agent mcp\` cannot find it`, rewriteHandoffStep(profile), issues);
}

/** Databases, artifacts and logs grow in the profile directory: warn below 1 GiB, fail below 100 MiB. */
export function diskSpaceCheck({ path, availableBytes }: DiskInput): DoctorCheck {
  if (availableBytes === null) return skipped('disk.space', `free space of ${path} cannot be measured`);
  const summary = `${bytes(availableBytes)} available on the filesystem of ${path}`;
  const fix = 'Free space on that filesystem (old artifacts, logs), or move LEXEC_HOME to a larger one.';
  if (availableBytes < DISK_FAIL_BELOW) return failed('disk.space', `${summary} (below ${bytes(DISK_FAIL_BELOW)})`, fix);
  if (availableBytes < DISK_WARN_BELOW) return warned('disk.space', `${summary} (below ${bytes(DISK_WARN_BELOW)})`, fix);
  return passed('disk.space', summary);
}

/** Executions parked for a human (billing ambiguous): a warning until resolved, never a failure. */
export function awaitingHumanCheck(count: number | null): DoctorCheck {
  if (count === null) return skipped('executions.awaiting_human', 'no executor database yet (or it cannot be read)');
  if (count === 0) return passed('executions.awaiting_human', 'no execution awaits a human');
  return warned(
    'executions.awaiting_human',
    `${count} execution${count === 1 ? '' : 's'} await${count === 1 ? 's' : ''} a human: billing was ambiguous, the charge is held until resolved`,
    'Review them with `lexec executor reconciliation list`, then settle or release each with `lexec executor reconciliation resolve`.',
  );
}

/** Workflow runs the executor started again (docs/executions.md "Rescheduling closed runs"): a warning while recent. */
export function rescheduledRunsCheck(runs: { readonly total: number; readonly last_24h: number; readonly last_at: string | null } | null): DoctorCheck {
  if (runs === null) return skipped('executions.rescheduled_runs', 'no executor database yet (or it cannot be read)');
  const summary = `${runs.total} workflow run${runs.total === 1 ? '' : 's'} started again after the engine closed ${runs.total === 1 ? 'it' : 'them'} under a live execution`;
  if (runs.last_24h === 0) return passed('executions.rescheduled_runs', runs.total === 0 ? 'no workflow run had to be started again' : `${summary}; none in the last 24 h`);
  return warned(
    'executions.rescheduled_runs',
    `${summary}; ${runs.last_24h} in the last 24 h (last ${runs.last_at ?? '?'})`,
    'Someone or something closes this executor\'s runs: an operator terminating them in the Temporal UI or CLI, or another installation\'s worker on this task queue (its executor then reports `task_queue_shared`). `lexec stack logs --component executor | grep workflow_rescheduled` shows which and how they were closed.',
  );
}

export interface PrivateEntryProblem {
  readonly path: string;
  readonly type: 'file' | 'directory' | 'other';
  /** Permission bits, e.g. 0o644. */
  readonly mode: number;
  readonly problem: 'readable_by_others' | 'not_owned' | 'symbolic_link' | 'not_regular' | 'not_readable';
}

export interface CredentialStateInput {
  readonly dir: string;
  readonly exists: boolean;
  readonly files: number;
  readonly problems: readonly PrivateEntryProblem[];
}

const octal = (mode: number): string => `0${(mode & 0o777).toString(8).padStart(3, '0')}`;

/** Credential state: a 0700 directory owned by this user; every file in it 0600, owned, regular. */
export function credentialPermissionsCheck(input: CredentialStateInput): DoctorCheck {
  if (!input.exists) return skipped('credentials.permissions', `no credential state yet (${input.dir} is created by the first \`lexec stack start\`)`);
  if (input.problems.length === 0) {
    return passed('credentials.permissions', `${input.dir} is private: directories 0700, ${input.files} file${input.files === 1 ? '' : 's'} 0600, owned by this user`);
  }
  const described = input.problems.map((entry) => `${entry.path} (${entry.problem === 'readable_by_others' ? octal(entry.mode) : entry.problem.replaceAll('_', ' ')})`);
  const dirs = input.problems.filter((entry) => entry.problem === 'readable_by_others' && entry.type === 'directory').map((entry) => entry.path);
  const files = input.problems.filter((entry) => entry.problem === 'readable_by_others' && entry.type === 'file').map((entry) => entry.path);
  const other = input.problems.filter((entry) => entry.problem !== 'readable_by_others');
  const steps = [
    dirs.length > 0 ? `chmod 700 ${dirs.join(' ')}` : null,
    files.length > 0 ? `chmod 600 ${files.join(' ')}` : null,
    other.length > 0 ? `make ${other.map((entry) => entry.path).join(', ')} regular files and directories owned by this user` : null,
  ].filter((step) => step !== null);
  return failed(
    'credentials.permissions',
    `credential state is not private: ${described.join(', ')}`,
    `Check that nobody else read these credentials (rotate them if in doubt), then: ${steps.join('; ')}.`,
  );
}

/** Listed by path in a summary; the rest are counted (a stack's artifacts can be thousands of files). */
const MAX_LISTED_ENTRIES = 10;

export interface StatePermissionsInput extends StatePermissions {
  /** How many entries `--fix-permissions` tightened just now; null when not asked. */
  readonly fixed: number | null;
}

/**
 * The profile's state — databases and their journals, artifacts, catalog, sandbox journals,
 * handoff, Temporal data, logs — has no group or other bits and is this user's. Fails when
 * others can reach it (a directory open to them, an entry of another user's); only warns for
 * files open to them — readable or even writable — inside directories that are private: nobody
 * else can reach those now. That is how an older release left its databases and catalog (0644,
 * or 0664 under the common umask 002), and `stack start` runs the doctor: an upgraded profile
 * must start (its services tighten those files themselves) rather than be refused.
 */
export function statePermissionsCheck(input: StatePermissionsInput): DoctorCheck {
  const id = 'state.permissions';
  if (input.roots.length === 0) return skipped(id, 'no state yet (created by the first `lexec stack start`)');
  const now = input.fixed !== null && input.fixed > 0 ? `; ${input.fixed} entr${input.fixed === 1 ? 'y' : 'ies'} tightened now` : '';
  const { problems } = input;
  if (problems.length === 0) {
    return passed(
      id,
      `state is private: ${input.directories} director${input.directories === 1 ? 'y' : 'ies'} and ${input.files} file${input.files === 1 ? '' : 's'}, no group or other bits, owned by this user${now}`,
    );
  }
  const described = problems.slice(0, MAX_LISTED_ENTRIES).map((entry) => `${entry.path} (${entry.problem === 'not_owned' ? 'not owned by this user' : octal(entry.mode)})`);
  if (problems.length > MAX_LISTED_ENTRIES) described.push(`and ${problems.length - MAX_LISTED_ENTRIES} more`);
  const open = problems.filter((entry) => entry.problem === 'open_to_others');
  const notOwned = problems.filter((entry) => entry.problem === 'not_owned');
  const steps = [
    open.length > 0 ? '`lexec stack doctor --fix-permissions` (it removes the group and other bits of lexec\'s own state, as `chmod go-rwx` would)' : null,
    notOwned.length > 0 ? `make ${notOwned.map((entry) => entry.path).join(', ')} this user's again (chown): lexec changes no other user's files` : null,
  ].filter((step) => step !== null);
  const fix = `Check that nobody else read them (prompts, images, spend records), then: ${steps.join('; ')}.`;
  const reachable = problems.some((entry) => entry.problem === 'not_owned' || entry.type === 'directory');
  const count = `${problems.length} state entr${problems.length === 1 ? 'y is' : 'ies are'}`;
  return reachable
    ? failed(id, `${count} open to others or not this user's: ${described.join(', ')}${now}`, fix)
    : warned(id, `${count} open to others, inside private directories (nobody else can reach them now): ${described.join(', ')}${now}`, fix);
}

export type TemporalInput =
  | { readonly mode: 'embedded' | 'external' | null }
  | { readonly mode: 'managed_local'; readonly path: string; readonly pinned: string; readonly observed: TemporalCliObservation };

/** managed_local needs the pinned Temporal CLI at its absolute path; other modes need none. */
export function temporalCliCheck(input: TemporalInput): DoctorCheck {
  if (input.mode !== 'managed_local') {
    return skipped('temporal.cli', input.mode === null ? 'no workflow engine settings to check' : `workflow engine ${input.mode}: no Temporal CLI is started`);
  }
  const waysOut = (reported: string | null) => pinWaysOut({ path: input.path, pinned: input.pinned, reported, where: ' in profile.toml', then: 'render and activate' });
  const fix = waysOut(null);
  const { observed } = input;
  switch (observed.state) {
    case 'missing':
      return failed('temporal.cli', `the Temporal CLI ${input.path} does not exist`, fix);
    case 'not_a_file':
      return failed('temporal.cli', `the Temporal CLI ${input.path} is not a regular file`, fix);
    case 'not_executable':
      return failed('temporal.cli', `the Temporal CLI ${input.path} is not executable by this user`, `chmod +x ${input.path}, or ${fix.charAt(0).toLowerCase()}${fix.slice(1)}`);
    case 'failed':
      return failed('temporal.cli', `\`${input.path} --version\` failed (${observed.reason})`, fix);
    case 'ran':
      if (observed.version === input.pinned) {
        return passed('temporal.cli', `Temporal CLI ${input.path} reports the pinned version ${input.pinned}${versionSourceNote(observed)}`);
      }
      return failed(
        'temporal.cli',
        observed.version === null
          ? `${describeMissingVersion(input.path, observed)} (pinned ${input.pinned})`
          : `the Temporal CLI ${input.path} reports version ${observed.version}, the profile pins ${input.pinned}${versionSourceNote(observed)}`,
        waysOut(observed.version),
      );
  }
}

export type SecretFileState = 'present' | 'missing' | 'symbolic_link' | 'not_regular' | 'not_owned' | 'readable_by_others';

export type LiveCredentialInput =
  | { readonly kind: 'sandbox' | null }
  | { readonly kind: 'live'; readonly reference: SecretReference; readonly fileState: SecretFileState | null };

/**
 * A live profile's provider key reference: a private file that exists, or a keychain item (which
 * this release cannot read). The file's content is never read: presence and privacy only.
 */
export function liveCredentialCheck(input: LiveCredentialInput): DoctorCheck {
  if (input.kind !== 'live') return skipped('live.credential', input.kind === null ? 'no provider settings to check' : 'sandbox profile: no provider credential');
  const { reference } = input;
  if (reference.store === 'keychain') {
    return warned(
      'live.credential',
      'the provider credential is referenced in the OS keychain, which this release cannot read',
      'Reference it as credential = { store = "file", path = "<absolute path>" } with a 0600 file in profile.toml [live], then render and activate.',
    );
  }
  const path = reference.path;
  switch (input.fileState) {
    case 'present':
      return passed('live.credential', `the provider credential file ${path} exists and is private (its content is not read)`);
    case 'readable_by_others':
      return failed('live.credential', `the provider credential file ${path} is readable by group or others`, `Check nobody read it (rotate the key if in doubt), then chmod 600 ${path}.`);
    case 'missing':
    case null:
      return failed('live.credential', `the provider credential file ${path} does not exist`, `Write the provider key into ${path} (mode 0600), or point [live].credential at the right file.`);
    default:
      return failed('live.credential', `the provider credential file ${path} is ${input.fileState.replaceAll('_', ' ')}`, `Make ${path} a regular file owned by this user with mode 0600.`);
  }
}

export type ExternalEngineInput =
  | { readonly mode: 'embedded' | 'managed_local' | null }
  | { readonly mode: 'external'; readonly address: string; readonly reachable: boolean };

/**
 * An external engine is the operator's to run and may be started after lexec, so an address
 * nobody answers on is a warning, not a failure. A TCP connection only: the doctor sends nothing.
 */
export function externalEngineCheck(input: ExternalEngineInput): DoctorCheck {
  if (input.mode !== 'external') return skipped('temporal.external', input.mode === null ? 'no workflow engine settings to check' : `workflow engine ${input.mode}: no external engine`);
  if (input.reachable) return passed('temporal.external', `the external Temporal frontend ${input.address} accepts connections`);
  return warned(
    'temporal.external',
    `nothing accepts connections at the external Temporal frontend ${input.address}`,
    'Start the Temporal cluster, or set workflow_engine.address in profile.toml to where its frontend listens; until it answers the executor stays not ready.',
  );
}
