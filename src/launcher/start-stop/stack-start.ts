import { spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import { UserError } from '../../errors.js';
import { readActiveId, writeActiveId, clearActiveId } from '../generations/generation-store.js';
import { readHandoff, stackHandoff, withdrawHandoff, writeHandoff, type Handoff } from '../handoff/handoff.js';
import { terminateProcess } from '../../process/process-identity.js';
import { createProfileFromExample, profileMissing, resolveProfileName } from '../profiles/profile-store.js';
import { compareGenerations, type GenerationManifest, type StackComponent } from '../generations/render-generation.js';
import { DEFAULT_PROFILE, lexecHome, profilePaths, type ProfilePaths } from '../home/stack-home.js';
import { acquireLauncherLock } from '../home/stack-locks.js';
import { liveRecordedChildren, liveSupervisorPid, readStateLeniently, takeDownStack } from '../supervisor/stack-processes.js';
import { LEXEC_BIN } from '../supervisor/supervised-child.js';
import type { SupervisorState } from '../supervisor/supervisor-state.js';
import { preflightChecks } from './stack-preflight.js';
import type { ProfileDrift, StartProgress } from './start-events.js';
import { waitUntilReady } from './stack-readiness-wait.js';
import { activeManifest, renderProfile } from '../generations/stack-generations.js';
import { renderInMemory } from '../generations/render-in-memory.js';
import { generationEngine, type GenerationEngine } from '../generations/generation-engine.js';

/*
 * `stack start` (docs/stack-runtime.md "Start sequence"): under the launcher lock, make sure the
 * profile has an active generation (creating the sandbox profile and its first generation on
 * the very first start), check the ports, spawn the detached supervisor that owns the stack,
 * follow its published state until every component is ready, and write the active handoff.
 * The supervisor does the starting (ledger, credentials, executor, sandbox); this command only
 * waits for it, so nothing about a running stack depends on the launcher staying alive.
 */

/** Bound on stopping what a failed start had started. */
const TAKEDOWN_BOUND_MS = 30_000;
const ORPHAN_GRACE_MS = 5_000;

export interface StartRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profileFlag: string | undefined;
  readonly timeoutMs: number;
  readonly progress: StartProgress;
  readonly now: () => Date;
}

export interface StartedComponent {
  readonly name: StackComponent;
  readonly pid: number | null;
  readonly port: number;
  readonly endpoint: string;
}

export interface StartResult {
  readonly profile: string;
  readonly generation_id: string;
  readonly outcome: 'started' | 'already_running';
  readonly supervisor_pid: number;
  readonly components: readonly StartedComponent[];
  readonly agent: { readonly name: string; readonly agent_id: string } | null;
  /** The executor's workflow engine: mode, where it answers, its web UI (as `stack status` shows it); null when its configuration cannot be read. */
  readonly workflow_engine: GenerationEngine | null;
  readonly handoff_file: string;
  /** First start only: the sandbox profile was created from profiles.example/sandbox.toml. */
  readonly profile_created: boolean;
  /** There was no active generation: the profile was rendered and that generation activated. */
  readonly generation_activated: boolean;
  readonly profile_drift: ProfileDrift | null;
  /**
   * `already_running` only: why this start wrote the handoff again (nothing was restarted) — it
   * was `missing`, `damaged`, or `stale` (another supervisor's, profile's or generation's); null
   * when it was in place, and always for `started`.
   */
  readonly handoff_rewritten: 'missing' | 'damaged' | 'stale' | null;
  /** Children of an earlier, killed supervisor that were still running and were stopped first. */
  readonly orphans_stopped: number;
  readonly elapsed_ms: number;
}

const endpointOf = (port: number) => `http://127.0.0.1:${port}`;

function pathExists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

export async function startStack(request: StartRequest): Promise<StartResult> {
  const started = Date.now();
  const home = lexecHome(request.env);
  const { name } = await resolveProfileName(home, request.profileFlag);
  const paths = profilePaths(home, name);
  // Checked before the lock, which would create the profile's state directory for a typo.
  if (name !== DEFAULT_PROFILE && !(await pathExists(paths.source)) && (await readActiveId(paths).catch(() => null)) === null) throw profileMissing(paths);
  const release = await acquireLauncherLock(paths);
  try {
    // The main job needs no set-up: the default profile comes from the shipped example.
    const profileCreated = name === DEFAULT_PROFILE && (await createProfileFromExample(home, name, 'sandbox')) === 'created';
    if (profileCreated) request.progress.event({ kind: 'profile_created', profile: name, source: paths.source });

    const state = await readStateLeniently(paths);
    const running = await liveSupervisorPid(paths, state);
    if (running !== null) return await joinRunningStack({ request, paths, supervisorPid: running, started });

    const orphans = await liveRecordedChildren(state, paths);
    if (orphans.length > 0) {
      await request.progress.step({ kind: 'stop_orphans', count: orphans.length }, () =>
        Promise.all(orphans.map((child) => terminateProcess(child.pid, child.startTicks, ORPHAN_GRACE_MS))),
      );
    }
    await withdrawHandoff(paths);

    const { manifest, activated, drift } = await request.progress.step(
      { kind: 'active_generation' },
      () => ensureActiveGeneration(paths, home, request.now()),
      (value) => ({ kind: 'generation', generation_id: value.manifest.generation_id, activated: value.activated }),
    );
    // The supervisor reads [agent] from profile.toml: a profile that no longer renders cannot start.
    if (drift?.kind === 'does_not_render') throw profileRefusal(paths, manifest.generation_id, drift);
    reportDrift(request.progress, manifest, drift, 'starting');
    try {
      await request.progress.step(
        { kind: 'preflight' },
        () => preflightChecks({ home, paths, manifest, freshGeneration: activated }),
        (value) => ({ kind: 'preflight', warnings: value.warnings }),
      );

      const supervisorPid = await request.progress.step({ kind: 'supervisor' }, () => spawnSupervisor(paths, request.env), (pid) => ({ kind: 'supervisor', pid }));
      const deadline = started + request.timeoutMs;
      let ready: SupervisorState;
      try {
        ready = await waitUntilReady({ paths, manifest, supervisorPid, deadline, request, onTimeout: 'stop' });
      } catch (error) {
        await request.progress.step({ kind: 'take_down' }, () => takeDownStack(paths, supervisorPid, { boundMs: TAKEDOWN_BOUND_MS, orphanGraceMs: ORPHAN_GRACE_MS }));
        throw error;
      }
      const handoff = await request.progress.step({ kind: 'handoff', handoff_file: paths.handoffFile }, () => supervisorHandoff(paths, ready, deadline, request.now));
      return result({ paths, state: ready, handoff, engine: await generationEngine(paths, ready.generation_id), outcome: 'started', started, profileCreated, activated, drift, orphans: orphans.length, handoffRewritten: null });
    } catch (error) {
      // The generation this start activated never became ready (nothing was handed to a client):
      // withdraw it, so that fixing profile.toml (a port, a key) takes effect at the next start
      // instead of the same failure until a render and an activate by hand.
      if (activated) await clearActiveId(paths);
      throw error;
    }
  } finally {
    await release();
  }
}

/** A second start of a running stack: wait until it is ready (normally at once) and make sure its handoff is there. */
async function joinRunningStack({ request, paths, supervisorPid, started }: { request: StartRequest; paths: ProfilePaths; supervisorPid: number; started: number }): Promise<StartResult> {
  request.progress.event({ kind: 'already_running', profile: paths.name, supervisor_pid: supervisorPid });
  const manifest = await activeManifest(paths);
  if (manifest === null) throw new UserError('no_active_generation', `Profile "${paths.name}" runs but has no active generation.`, { nextStep: `Run \`lexec stack stop --profile ${paths.name}\`, then start again.` });
  const state = await waitUntilReady({ paths, manifest, supervisorPid, deadline: started + request.timeoutMs, request, onTimeout: 'leave' });
  const drift = await profileDrift(paths, lexecHome(request.env), request.now(), manifest);
  reportDrift(request.progress, manifest, drift, 'joined');
  const current = await readHandoff(paths).catch(() => 'damaged' as const);
  const rewritten = handoffFault(current, paths, state);
  const handoff =
    rewritten === null && typeof current === 'object' && current !== null
      ? current
      : await request.progress.step({ kind: 'handoff', handoff_file: paths.handoffFile }, () => writeStackHandoff(paths, state, request.now()));
  return result({ paths, state, handoff, engine: await generationEngine(paths, state.generation_id), outcome: 'already_running', started, profileCreated: false, activated: false, drift, orphans: 0, handoffRewritten: rewritten });
}

/** What is wrong with the handoff of a running stack, if anything: it must name this profile, supervisor and generation. */
function handoffFault(current: Handoff | null | 'damaged', paths: ProfilePaths, state: SupervisorState): StartResult['handoff_rewritten'] {
  if (current === null) return 'missing';
  if (current === 'damaged') return 'damaged';
  return current.profile === paths.name && current.supervisor_pid === state.supervisor_pid && current.generation_id === state.generation_id ? null : 'stale';
}

/** A stopped stack whose profile.toml no longer renders: refused before anything is spawned, with every field path. */
function profileRefusal(paths: ProfilePaths, activeId: string, drift: Extract<ProfileDrift, { kind: 'does_not_render' }>): UserError {
  const keys = drift.issues.map((issue) => issue.path);
  return new UserError(drift.code, `Profile "${paths.name}" cannot start: ${paths.source} no longer renders (${drift.code}${keys.length > 0 ? `: ${keys.join(', ')}` : ''}), and the supervisor reads it at start. Nothing was started; the active generation ${activeId} is unchanged.`, {
    nextStep: `Fix ${keys.length > 0 ? 'each key listed' : 'it'} in ${paths.source} (\`lexec stack doctor --profile ${paths.name}\` checks it), then start again.`,
    issues: drift.issues,
  });
}

async function ensureActiveGeneration(paths: ProfilePaths, home: string, now: Date): Promise<{ manifest: GenerationManifest; activated: boolean; drift: ProfileDrift | null }> {
  if ((await readActiveId(paths)) === null) {
    const rendered = await renderProfile(paths, home, now);
    await writeActiveId(paths, rendered.generation_id);
    const manifest = await activeManifest(paths);
    if (manifest === null) throw new Error('the generation just activated has no manifest');
    return { manifest, activated: true, drift: null };
  }
  const manifest = await activeManifest(paths);
  if (manifest === null) throw new Error('activeManifest returned null for an existing active id');
  return { manifest, activated: false, drift: await profileDrift(paths, home, now, manifest) };
}

/** Whether profile.toml now renders something else than the active generation; never replaces it. */
async function profileDrift(paths: ProfilePaths, home: string, now: Date, active: GenerationManifest): Promise<ProfileDrift | null> {
  const render = await renderInMemory({ home, paths, now });
  if (!render.ok) return { kind: 'does_not_render', code: render.problem.code, issues: render.problem.issues };
  if (render.rendered.id === active.generation_id) return null;
  return { kind: 'renders_differently', rendered_generation_id: render.rendered.id, ...compareGenerations(active, render.rendered.manifest) };
}

function reportDrift(progress: StartProgress, manifest: GenerationManifest, drift: ProfileDrift | null, stack: 'starting' | 'joined'): void {
  if (drift !== null) progress.event({ kind: 'profile_drift', active_generation_id: manifest.generation_id, drift, stack });
}

/** Starts `lexec stack supervise` in its own session, detached from this process and its terminal. */
async function spawnSupervisor(paths: ProfilePaths, env: NodeJS.ProcessEnv): Promise<number> {
  const child = spawn(process.execPath, [LEXEC_BIN, 'stack', 'supervise', '--profile', paths.name], { cwd: paths.dir, env, detached: true, stdio: 'ignore' });
  const pid = await new Promise<number>((resolve, reject) => {
    child.once('spawn', () => {
      resolve(child.pid ?? 0);
    });
    child.once('error', reject);
  });
  child.unref();
  return pid;
}

/**
 * The handoff the supervisor writes once the stack is ready (so a start whose terminal goes away
 * still ends usable). Waited for briefly after the components are ready; written here only if
 * the supervisor has not done it by the deadline.
 */
async function supervisorHandoff(paths: ProfilePaths, ready: SupervisorState, deadline: number, now: () => Date): Promise<Handoff> {
  for (;;) {
    const current = await readHandoff(paths).catch(() => null);
    if (current !== null && current.supervisor_pid === ready.supervisor_pid) return current;
    if (Date.now() >= deadline) return writeStackHandoff(paths, ready, now());
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function writeStackHandoff(paths: ProfilePaths, state: SupervisorState, now: Date): Promise<Handoff> {
  const handoff = stackHandoff(paths, state, now);
  await writeHandoff(paths, handoff);
  return handoff;
}

function result(options: {
  paths: ProfilePaths;
  state: SupervisorState;
  handoff: Handoff;
  engine: GenerationEngine | null;
  outcome: StartResult['outcome'];
  started: number;
  profileCreated: boolean;
  activated: boolean;
  drift: ProfileDrift | null;
  orphans: number;
  handoffRewritten: StartResult['handoff_rewritten'];
}): StartResult {
  const { state } = options;
  const components = (Object.entries(state.components) as [StackComponent, NonNullable<SupervisorState['components'][StackComponent]>][]).map(([name, status]) => ({
    name,
    pid: status.pid,
    port: status.port,
    endpoint: name === 'ledger' && state.own_ledger !== undefined ? state.own_ledger.endpoint : endpointOf(status.port),
  }));
  return {
    profile: options.paths.name,
    generation_id: state.generation_id,
    outcome: options.outcome,
    supervisor_pid: state.supervisor_pid,
    components,
    agent: state.agent,
    workflow_engine: options.engine,
    handoff_file: options.paths.handoffFile,
    profile_created: options.profileCreated,
    generation_activated: options.activated,
    profile_drift: options.drift,
    handoff_rewritten: options.handoffRewritten,
    orphans_stopped: options.orphans,
    elapsed_ms: Date.now() - options.started,
  };
}
