import { readBuildInfo, type BuildInfo } from '../../build-info.js';
import { UserError } from '../../errors.js';
import type { ExecutorConfig } from '../../executor/config/executor-config-schema.js';
import { parseExecutorConfig } from '../../executor/config/parse-executor-config.js';
import { readTemporalCliVersion } from '../../executor/engine/temporal/temporal-cli-version.js';
import {
  credentialPermissionsCheck,
  awaitingHumanCheck,
  rescheduledRunsCheck,
  stackHandoffCheck,
  diskSpaceCheck,
  externalEngineCheck,
  lineageChecks,
  liveCredentialCheck,
  portCheck,
  statePermissionsCheck,
  temporalCliCheck,
  type PortOwner,
} from './doctor-checks.js';
import {
  availableDiskBytes,
  descendsFrom,
  inspectPrivateTree,
  inspectSecretFile,
  lockFilePid,
  publishedComponentPids,
} from './doctor-observations.js';
import {
  DOCTOR_REPORT_VERSION,
  failed,
  inReportOrder,
  overallStatus,
  passed,
  skipped,
  warned,
  type DoctorCheck,
  type DoctorReport,
} from './doctor-report.js';
import { inspectActiveGeneration, type ActiveGeneration } from './doctor-generation.js';
import { inspectStatePermissions, stateScope, tightenStatePermissions, type PermissionFix } from './state-permissions.js';
import { probeTcp } from '../../process/loopback-probe.js';
import { probePort } from '../../process/port-probe.js';
import { resolveProfileName } from '../profiles/profile-store.js';
import { renderInMemory } from '../generations/render-in-memory.js';
import { readHandoff } from '../handoff/handoff.js';
import { compareGenerations, listenHostOf, STACK_COMPONENTS, type GenerationManifest, type RenderedGeneration } from '../generations/render-generation.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../home/stack-home.js';
import { runningSupervisorPid } from '../home/stack-locks.js';
import { liveTemporalChild, readStateLeniently } from '../supervisor/stack-processes.js';
import { generationCatalog } from '../catalog/stack-catalog.js';
import { existingProfilePaths, type ProfileRequest } from '../profiles/existing-profile.js';
import { countExecutions, countRescheduledRuns } from '../status/executor-database.js';
import { readEnrolmentState } from '../enrolment/enrolment-state.js';
import { checkRemoteLedgerStanding } from '../enrolment/remote-ledger.js';
import { managedCredentialPaths } from '../../executor/managed-credentials.js';

/*
 * `lexec stack doctor` (spec §8 Operations 7): read-only. It reads the profile, the active
 * generation and the profile's state, probes ports by trying to bind them, and may run the local
 * Temporal CLI's `--version`; it writes no file, takes no lock and calls no provider. The one
 * exception is asked for by name: `--fix-permissions` removes group and other bits from the
 * profile's own state (state-permissions.ts) before the checks run.
 * `runDoctor` is the service `stack start` calls; `doctorStack` resolves the profile for the command.
 */

export interface DoctorOptions {
  readonly home: string;
  readonly paths: ProfilePaths;
  /** This binary's lineage; injectable so a release build's rules can be proven from a development build. */
  readonly build?: BuildInfo;
  /** Tighten the state entries open to others first (`--fix-permissions`); default: change nothing. */
  readonly fixPermissions?: boolean;
}

/** What the stack would run now: the active generation, else the profile rendered in memory. */
interface Subject {
  readonly manifest: GenerationManifest;
  /** Null on a ledger host (no executor). */
  readonly config: ExecutorConfig | null;
}

async function inspectProfile(home: string, paths: ProfilePaths, build: BuildInfo): Promise<{ check: DoctorCheck; rendered: RenderedGeneration | null }> {
  // Rendering is pure: nothing is written, but the executor's own rules run on the result.
  const render = await renderInMemory({ home, paths, build, now: new Date() });
  if (!render.ok) return { check: failed('profile.valid', render.problem.message, render.problem.next_step, render.problem.issues), rendered: null };
  return { check: passed('profile.valid', `${paths.source} parses and renders (${render.rendered.manifest.kind} profile)`), rendered: render.rendered };
}

function currentCheck(rendered: RenderedGeneration | null, active: ActiveGeneration): DoctorCheck {
  if (rendered === null) return skipped('generation.current', 'the profile does not render, so it cannot be compared with the active generation');
  if (active.manifest === null) return skipped('generation.current', `no readable active generation to compare with (the profile renders to ${rendered.id})`);
  if (rendered.id === active.manifest.generation_id) return passed('generation.current', `the profile renders to the active generation ${rendered.id}`);
  const change = compareGenerations(active.manifest, rendered.manifest);
  return warned(
    'generation.current',
    `the profile (or this binary) now renders generation ${rendered.id}, not the active ${active.manifest.generation_id}: changed files ${change.changed_files.join(', ') || 'none'}; components affected ${change.affected_components.join(', ') || 'none'}`,
    `Render and activate to apply: \`lexec stack render\`, review, \`lexec stack stop\`, \`lexec stack activate --generation ${rendered.id}\`, \`lexec stack start\`.`,
  );
}

async function stackStateCheck(paths: ProfilePaths, supervisorPid: number | null, active: ActiveGeneration): Promise<DoctorCheck> {
  if (supervisorPid !== null) return passed('stack.state', `running: supervisor pid ${supervisorPid}, generation ${active.id ?? 'unknown'}`);
  const stale = await lockFilePid(paths.supervisorLock);
  if (stale !== null) {
    return warned(
      'stack.state',
      `stopped, but the supervisor lock still names pid ${stale}, which is gone: the stack did not stop cleanly`,
      '`lexec stack start` takes the stale lock over; `lexec stack logs --component supervisor` shows how it ended.',
    );
  }
  return passed('stack.state', 'stopped');
}

/** The handoff clients find the stack by, as the running supervisor should have published it. */
async function handoffCheck(paths: ProfilePaths, supervisorPid: number | null): Promise<DoctorCheck> {
  if (supervisorPid === null) return stackHandoffCheck({ profile: paths.name, file: paths.handoffFile, supervisorPid: null });
  const state = await readStateLeniently(paths);
  // A state file of an earlier supervisor says nothing of this one: it has not published yet.
  const phase = state?.supervisor_pid === supervisorPid ? state.phase : null;
  try {
    const handoff = await readHandoff(paths);
    const found = handoff === null ? ({ kind: 'missing' } as const) : { kind: 'present' as const, profile: handoff.profile, supervisorPid: handoff.supervisor_pid, writtenAt: handoff.written_at };
    return stackHandoffCheck({ profile: paths.name, file: paths.handoffFile, supervisorPid, phase, found });
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return stackHandoffCheck({ profile: paths.name, file: paths.handoffFile, supervisorPid, phase, found: { kind: 'damaged', issues: error.issues } });
  }
}

const PORT_OWNERS: readonly PortOwner[] = [...STACK_COMPONENTS, 'temporal', 'temporal_ui'];

function portOf(manifest: GenerationManifest, owner: PortOwner): number | null {
  const temporal = manifest.components.executor?.temporal;
  if (owner === 'temporal') return temporal?.port ?? null;
  if (owner === 'temporal_ui') return temporal?.ui_port ?? null;
  return manifest.components[owner]?.port ?? null;
}

async function portChecks(subject: Subject | null, paths: ProfilePaths, supervisorPid: number | null): Promise<DoctorCheck[]> {
  if (subject === null) return PORT_OWNERS.map((component) => skipped(`ports.${component}.free`, 'no generation and no valid profile to take the ports from'));
  const published = supervisorPid === null ? new Map<string, number>() : await publishedComponentPids(paths);
  // The executor's Temporal server holds both of its ports while the stack runs.
  const temporal = supervisorPid === null ? null : await liveTemporalChild(paths);
  if (temporal !== null) {
    published.set('temporal', temporal.pid);
    published.set('temporal_ui', temporal.pid);
  }
  const checks: DoctorCheck[] = [];
  for (const component of PORT_OWNERS) {
    const port = portOf(subject.manifest, component);
    const probe = port === null ? null : await probePort(port, listenHostOf(subject.manifest, component));
    const expectedPid = published.get(component) ?? null;
    let ownership: 'stack' | 'foreign' | 'unknown' = 'unknown';
    if (supervisorPid !== null && probe !== null && !probe.free && probe.holder !== null) {
      const { pid } = probe.holder;
      ownership = pid === expectedPid || (await descendsFrom(pid, supervisorPid)) ? 'stack' : 'foreign';
    }
    checks.push(portCheck({ component, port, probe, running: supervisorPid !== null, ownership, expectedPid }));
  }
  return checks;
}

async function liveCheck(subject: Subject | null): Promise<DoctorCheck> {
  if (subject?.config == null) return liveCredentialCheck({ kind: null });
  const { providers } = subject.config;
  if (providers.mode !== 'live') return liveCredentialCheck({ kind: 'sandbox' });
  const reference = providers.credential;
  return liveCredentialCheck({ kind: 'live', reference, fileState: reference.store === 'file' ? await inspectSecretFile(reference.path) : null });
}

async function externalCheck(subject: Subject | null): Promise<DoctorCheck> {
  const engine = subject?.config?.workflow_engine;
  if (engine?.mode !== 'external') return externalEngineCheck({ mode: engine?.mode ?? null });
  const url = new URL(engine.address);
  return externalEngineCheck({ mode: 'external', address: engine.address, reachable: (await probeTcp(Number(url.port), 1_000, url.hostname.replace(/^\[|\]$/g, ''))).ok });
}

async function temporalCheck(subject: Subject | null): Promise<DoctorCheck> {
  const engine = subject?.config?.workflow_engine;
  if (engine?.mode !== 'managed_local') return temporalCliCheck({ mode: engine?.mode ?? null });
  const { path, version } = engine.temporal_cli;
  return temporalCliCheck({ mode: 'managed_local', path, pinned: version, observed: await readTemporalCliVersion(path) });
}

/**
 * `ledger.remote`: an executor host's remote ledger before start — enrolled, reachable (over
 * https: the client's own TLS error), of this binary's lineage, and accepting this host's
 * executor and agent credentials. Skipped where the stack runs its own ledger.
 */
async function remoteLedgerCheck(subject: Subject | null, paths: ProfilePaths, build: BuildInfo): Promise<DoctorCheck> {
  const remote = subject?.manifest.remote_ledger;
  if (remote === undefined) return skipped('ledger.remote', 'this profile runs its own ledger');
  let enrolment;
  try {
    enrolment = await readEnrolmentState(paths);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return failed('ledger.remote', error.message, error.nextStep);
  }
  if (enrolment === null) {
    return failed(
      'ledger.remote',
      `not enrolled at the remote ledger ${remote.url}`,
      `On the ledger host: \`lexec ledger enrolments issue --name ${paths.name} --token-file <file>\`; move the file here privately; then \`lexec stack enrol --profile ${paths.name} --token-file <file>\`.`,
    );
  }
  try {
    const version = await checkRemoteLedgerStanding(
      { url: remote.url, caFile: remote.ca_file ?? null },
      { executor: managedCredentialPaths(paths.executorCredentialsDir).ledger, agent: paths.agentCapability },
      build,
    );
    return passed('ledger.remote', `the ledger at ${remote.url} is reachable, of this lineage (${version.product_version}, ${version.commit.slice(0, 12)}) and accepts this host's executor and agent credentials (agent ${enrolment.agent.name})`);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return failed('ledger.remote', `${error.code}: ${error.message}`, error.nextStep);
  }
}

function catalogCheck(catalog: DoctorReport['provider_catalog']): DoctorCheck {
  if (catalog === null) return skipped('provider.catalog', 'no active generation: no provider catalog yet');
  const { facts } = catalog;
  const yes = (value: boolean): string => (value ? 'yes' : 'no');
  return passed(
    'provider.catalog',
    `${catalog.targets.length} target${catalog.targets.length === 1 ? '' : 's'} (${catalog.providers_mode}); configured ${yes(facts.configured)}, credential reference present ${yes(facts.credential_reference_present)}, production validated ${yes(facts.production_validated)} (${facts.production_validated_reason}), live qualified ${yes(facts.live_qualified)} (${facts.live_qualified_reason})`,
  );
}

/** Runs every check on one profile and returns the report. Changes nothing, unless asked to fix permissions. */
export async function runDoctor({ home, paths, build = readBuildInfo(), fixPermissions = false }: DoctorOptions): Promise<DoctorReport> {
  const profile = await inspectProfile(home, paths, build);
  const active = await inspectActiveGeneration(paths);
  const supervisorPid = await runningSupervisorPid(paths);
  const renderedExecutor = profile.rendered?.files['executor.json'];
  const renderedConfig = renderedExecutor === undefined ? null : parseExecutorConfig(JSON.parse(renderedExecutor));
  const hasExecutor = (manifest: GenerationManifest) => manifest.components.executor !== undefined;
  const subject: Subject | null =
    active.manifest !== null && (active.config !== null || (active.check.status === 'pass' && !hasExecutor(active.manifest)))
      ? { manifest: active.manifest, config: active.config }
      : profile.rendered !== null && renderedConfig?.ok === true
        ? { manifest: profile.rendered.manifest, config: renderedConfig.value }
        : profile.rendered !== null && !hasExecutor(profile.rendered.manifest)
          ? { manifest: profile.rendered.manifest, config: null }
          : null;
  const catalog = active.id === null || active.config === null ? null : (await generationCatalog(paths, active.id, active.config)).catalog;
  const lineage = {
    binary: { product_version: build.product_version, contract_version: build.contract_version, commit: build.commit, build_kind: build.build_kind },
    generation: active.manifest?.lineage ?? null,
    pinned_ledger_product_version: active.config?.ledger.product_version ?? null,
    development_allowance: active.config?.development_allowance ?? null,
  };
  const credentials = await inspectPrivateTree(paths.credentialsDir);
  const scope = stateScope(paths, subject?.config ?? null);
  let state = inspectStatePermissions(scope);
  let permissionsFixed: PermissionFix[] | null = null;
  if (fixPermissions) {
    permissionsFixed = await tightenStatePermissions(state.problems);
    state = inspectStatePermissions(scope);
  }
  const checks = inReportOrder([
    profile.check,
    active.check,
    currentCheck(profile.rendered, active),
    ...lineageChecks({
      binary: lineage.binary,
      generation: lineage.generation,
      pinnedLedgerProductVersion: lineage.pinned_ledger_product_version,
      developmentAllowance: lineage.development_allowance,
    }),
    await stackStateCheck(paths, supervisorPid, active),
    await handoffCheck(paths, supervisorPid),
    await temporalCheck(subject),
    await externalCheck(subject),
    ...(await portChecks(subject, paths, supervisorPid)),
    credentialPermissionsCheck({ dir: paths.credentialsDir, ...credentials }),
    statePermissionsCheck({ ...state, fixed: permissionsFixed?.length ?? null }),
    await liveCheck(subject),
    await remoteLedgerCheck(subject, paths, build),
    diskSpaceCheck({ path: paths.dir, availableBytes: await availableDiskBytes(paths.dir) }),
    awaitingHumanCheck(await countExecutions(paths.executorDatabase, ['reconciliation'])),
    rescheduledRunsCheck(await countRescheduledRuns(paths.executorDatabase)),
    catalogCheck(catalog),
  ]);
  return {
    report_version: DOCTOR_REPORT_VERSION,
    profile: paths.name,
    overall: overallStatus(checks),
    running: supervisorPid !== null,
    active_generation_id: active.id,
    checks,
    provider_catalog: catalog,
    lineage,
    permissions_fixed: permissionsFixed,
  };
}

export interface DoctorRequest extends ProfileRequest {
  /** `--fix-permissions`. */
  readonly fixPermissions: boolean;
}

/** `stack doctor`: the profile from `--profile`, the selection or the default; then `runDoctor`. */
export async function doctorStack(request: DoctorRequest): Promise<DoctorReport> {
  const home = lexecHome(request.env);
  const { name, source } = await resolveProfileName(home, request.profileFlag);
  // A named profile (flag or selection) must exist; the default one before its first start is
  // what doctor is for: its report says \`lexec stack start\` creates it.
  const paths = source === 'default' ? profilePaths(home, name) : await existingProfilePaths(request);
  return runDoctor({ home, paths, fixPermissions: request.fixPermissions });
}
