import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { logFilePath } from '../../process/log-files.js';
import { readTemporalChild } from '../supervisor/managed-temporal-child.js';
import { isSameProcess } from '../../process/process-identity.js';
import { probeComponent, probeTargetOf, probeTcp, type ProbedComponent, type ProbeTarget } from '../../process/loopback-probe.js';
import { lexecHome, type ProfilePaths } from '../home/stack-home.js';
import type { ProfileProblem } from '../generations/render-in-memory.js';
import { rewriteHandoffStep } from '../handoff/handoff-step.js';
import { profileProblem } from './profile-problem.js';
import { liveRecordedChildren, liveSupervisorPid, readStateLeniently } from '../supervisor/stack-processes.js';
import type { ComponentExit, ComponentState, SupervisorPhase, SupervisorState } from '../supervisor/supervisor-state.js';
import { knownProfilePaths } from '../profiles/existing-profile.js';
import { executorCounts as readExecutorCounts, type ExecutorCounts, type RescheduledRuns } from './executor-database.js';
import { countPendingApprovals } from './ledger-database.js';
import { engineStateOf } from '../../executor/domain/readiness-state.js';
import { generationEngine, type GenerationEngine } from '../generations/generation-engine.js';

/*
 * `stack status` (docs/stack-runtime.md "Status"): read-only and fast. It reads the supervisor's
 * lock and published state, probes each component once on loopback with a short timeout, and
 * stats the logs; it changes no file and signals no process. Its imports are kept light on
 * purpose (no zod, no fetch, no generation store): it is meant to answer within 1.5x of a bare
 * oclif command (bench/stack-lifecycle). The command exits 0 when the stack is usable and 7 when
 * it is not (stopped or degraded), with the report printed either way (docs/exit-codes.md).
 */

const PROBE_TIMEOUT_MS = 500;
const COMPONENT_ORDER: readonly ProbedComponent[] = ['ledger', 'executor', 'sandbox'];

export type OverallState = 'running' | 'stopped' | 'degraded';

export interface ComponentReport {
  /** A supervised child, or `temporal`: the Temporal server a managed_local executor starts and supervises itself. */
  readonly name: ProbedComponent | 'temporal';
  readonly state: ComponentState;
  readonly pid: number | null;
  readonly port: number;
  readonly uptime_ms: number | null;
  readonly restarts: number;
  /** The loopback probe answered (ledger /health 200, executor /readyz 200, sandbox port open); null when not probed (stopped). */
  readonly ready: boolean | null;
  /** Why the probe failed, when it did. */
  readonly probe_error: string | null;
  /** How its previous process ended, when one did. */
  readonly last_exit: ComponentExit | null;
  /** Size of the active log file, bytes. */
  readonly log_bytes: number;
  /** `temporal` only: its web UI on loopback. */
  readonly ui_url?: string;
}

export interface StatusResult {
  readonly profile: string;
  readonly state: OverallState;
  readonly generation_id: string | null;
  /** The live supervisor; null when none runs. */
  readonly supervisor: { readonly pid: number; readonly phase: SupervisorPhase; readonly uptime_ms: number | null; readonly log_bytes: number } | null;
  readonly components: readonly ComponentReport[];
  /** Children still running although their supervisor is gone (it was killed); `stack stop` ends them. */
  readonly orphans: readonly { readonly component: string; readonly pid: number }[];
  /** The active handoff clients find the stack by: written by the running supervisor, or not. */
  readonly handoff: { readonly active: boolean; readonly written_at: string | null };
  /**
   * Executions parked for a human (billing ambiguous), read-only from the executor's database;
   * null when there is none yet or it cannot be read. `lexec executor reconciliation list` shows them.
   */
  readonly awaiting_human: number | null;
  /**
   * Executions admitted and not yet finished (pending, scheduled, running), read-only from the
   * executor's database; null when it cannot be read. A stop lets them resume at the next start;
   * `stack stop --wait` lets them finish first.
   */
  readonly executions_in_flight: number | null;
  /** Authorizations waiting for an approver (requested, not expired), read-only from the ledger's database; null when it cannot be read. */
  readonly approvals_pending: number | null;
  /** The workflow engine of the generation (mode, address, web UI); null when there is no generation or its configuration cannot be read. */
  readonly workflow_engine: GenerationEngine | null;
  /**
   * Workflow runs the executor started again because the engine closed them (or left them on
   * another task queue) under a live execution; null when there is no executor database yet or
   * it cannot be read. docs/executions.md "Rescheduling closed runs".
   */
  readonly rescheduled_runs: RescheduledRuns | null;
  /**
   * profile.toml no longer renders (code, message, next step and every field path, as `stack
   * render` would refuse): the running stack is unaffected, but the next `stack start` that has to
   * start it refuses until it is fixed. Null when it renders (or there is no profile.toml).
   */
  readonly profile_problem: ProfileProblem | null;
  /** Whether `lexec run`, the ledger verbs and `lexec agent mcp` can use the stack now. */
  readonly usable: boolean;
  /** What to do when the stack is not usable (null when it is, or when it is simply stopped). */
  readonly next_step: string | null;
  readonly checked_at: string;
}

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);

/** Executions in flight and in `reconciliation`, and rescheduled runs; better-sqlite3 is loaded only when the database exists (status stays light). */
async function executorCounts(databasePath: string): Promise<ExecutorCounts> {
  if (!(await exists(databasePath))) return { awaiting_human: null, executions_in_flight: null, rescheduled_runs: null };
  return readExecutorCounts(databasePath);
}

async function pendingApprovals(databasePath: string): Promise<number | null> {
  return (await exists(databasePath)) ? countPendingApprovals(databasePath) : null;
}

/** The handoff, read by hand (no zod here: see the header): active when it names the running supervisor. */
async function handoffOf(paths: ProfilePaths, supervisorPid: number | null): Promise<StatusResult['handoff']> {
  try {
    const document = JSON.parse(await readFile(paths.handoffFile, 'utf8')) as { supervisor_pid?: unknown; written_at?: unknown };
    const writtenAt = typeof document.written_at === 'string' ? document.written_at : null;
    return { active: supervisorPid !== null && document.supervisor_pid === supervisorPid, written_at: writtenAt };
  } catch {
    return { active: false, written_at: null };
  }
}

interface Trouble {
  readonly orphans: number;
  readonly problem: ProfileProblem | null;
  /** The directory a component says is full. */
  readonly diskFull: string | null;
  /** The executor's own probe says its workflow engine does not answer. */
  readonly engineDown: boolean;
  readonly engine: GenerationEngine | null;
}

function nextStep(paths: ProfilePaths, state: OverallState, phase: SupervisorPhase | null, handoff: StatusResult['handoff'], trouble: Trouble): string | null {
  const { orphans, problem, diskFull } = trouble;
  const flag = ` --profile ${paths.name}`;
  if (state === 'running') return null;
  if (state === 'stopped') {
    if (problem !== null) return `Fix ${problem.issues.length > 0 ? 'each key listed' : 'it'} in ${paths.source} first (the start refuses until then), then start it with \`lexec stack start${flag}\`.`;
    return `Start it with \`lexec stack start${flag}\`.`;
  }
  if (phase === null) return `Its supervisor is gone${orphans > 0 ? ` and ${orphans} process(es) are left` : ''}: run \`lexec stack stop${flag}\`, then \`lexec stack start${flag}\`.`;
  if (phase === 'starting') return `It is still starting; run \`lexec stack status${flag}\` again in a moment, or \`lexec stack start${flag}\` to wait for it.`;
  if (phase === 'running' && !handoff.active) return `It runs without an active handoff, so clients cannot find it. ${rewriteHandoffStep(paths.name)}`;
  // A restart cannot make room on a disk: say what can.
  if (diskFull !== null) return `A disk is full (${diskFull}): free space on that filesystem; the executor admits new executions again by itself once there is room (\`lexec stack doctor${flag}\` shows the free space).`;
  // Nor can it bring back an engine lexec does not run: name where it should answer.
  if (trouble.engineDown && trouble.engine?.mode === 'external') {
    return `The executor cannot reach its workflow engine, the Temporal cluster at ${trouble.engine.address ?? 'workflow_engine.address'}: start it or restore the network path to it (or fix workflow_engine.address in ${paths.source}). Restarting lexec does not help; the executor admits new executions again by itself once the engine answers, and executions under way wait for it safely.`;
  }
  if (trouble.engineDown && trouble.engine?.mode === 'managed_local') {
    return `The executor's own Temporal server does not answer yet; the executor restarts it by itself (\`lexec stack logs${flag} --component temporal\` shows why it stopped). Executions under way wait for it safely.`;
  }
  return `\`lexec stack logs${flag}\` shows why; \`lexec stack stop${flag}\` then \`lexec stack start${flag}\` restarts it.`;
}

/** The executor's probe says its workflow engine is not answering (`HTTP 503 (workflow_engine_unavailable)`). */
function engineDown(components: readonly ComponentReport[]): boolean {
  const reason = /\(([a-z0-9_]+)\)$/.exec(components.find((component) => component.name === 'executor')?.probe_error ?? '')?.[1];
  return reason !== undefined && engineStateOf(reason) === 'unreachable';
}

/** The directory a component's probe says is full (`HTTP 503 (disk_full: /path)`), or null. */
function diskFullPath(components: readonly ComponentReport[]): string | null {
  for (const component of components) {
    const path = /\(disk_full: (\/.*)\)$/.exec(component.probe_error ?? '')?.[1];
    if (path !== undefined) return path;
  }
  return null;
}

async function sizeOf(path: string): Promise<number> {
  return stat(path).then(
    (info) => info.size,
    () => 0,
  );
}

/**
 * The active generation id and its components' ports, read without the generation store (which
 * loads zod): the pointer is one id, and only the ports are taken from manifest.json.
 */
interface GenerationPorts {
  readonly ports: Partial<Record<ProbedComponent, number>>;
  /** A managed_local executor's Temporal server, when the generation has one. */
  readonly temporal: { readonly port: number; readonly ui_port: number } | null;
}

/** A generation's component ports, read from its manifest.json alone (see activeGeneration). */
async function generationPorts(paths: ProfilePaths, id: string): Promise<GenerationPorts> {
  const ports: Partial<Record<ProbedComponent, number>> = {};
  let temporal: GenerationPorts['temporal'] = null;
  try {
    const manifest = JSON.parse(await readFile(join(paths.generationsDir, id, 'manifest.json'), 'utf8')) as {
      components?: Record<string, { port?: unknown; temporal?: { port?: unknown; ui_port?: unknown } } | undefined>;
    };
    for (const component of COMPONENT_ORDER) {
      const port = manifest.components?.[component]?.port;
      if (Number.isInteger(port)) ports[component] = port as number;
    }
    const engine = manifest.components?.executor?.temporal;
    if (Number.isInteger(engine?.port) && Number.isInteger(engine?.ui_port)) temporal = { port: engine?.port as number, ui_port: engine?.ui_port as number };
  } catch {
    // A damaged manifest: `stack start` reports it; status just shows no components.
  }
  return { ports, temporal };
}

/**
 * The active generation id and its components' ports, read without the generation store (which
 * loads zod): the pointer is one id, and only the ports are taken from manifest.json.
 */
async function activeGeneration(paths: ProfilePaths): Promise<({ id: string } & GenerationPorts) | null> {
  const id = (await readFile(paths.activeFile, 'utf8').catch(() => '')).trim();
  if (!/^g[0-9a-f]{16}$/.test(id)) return null;
  return { id, ...(await generationPorts(paths, id)) };
}

/**
 * The Temporal server of a managed_local executor, as the executor published it in
 * state/temporal/server.json; probed (a TCP connect to its gRPC port) while it should run.
 */
async function temporalReport(paths: ProfilePaths, ports: { port: number; ui_port: number }, probeIt: boolean, now: number): Promise<ComponentReport> {
  const record = await readTemporalChild(paths.temporalDataDir);
  const live = record?.pid != null && (await isSameProcess(record.pid, record.startTicks)) ? record : null;
  const probe = probeIt || live !== null ? await probeTcp(ports.port, PROBE_TIMEOUT_MS) : null;
  // A dead pid is stopped, unless the executor said it is bringing it back.
  const state = live !== null ? live.state : record?.state === 'restarting' ? 'restarting' : 'stopped';
  return {
    name: 'temporal',
    state,
    pid: live?.pid ?? null,
    port: ports.port,
    uptime_ms: live !== null && state === 'running' ? uptime(live.startedAt, now) : null,
    restarts: record?.restarts ?? 0,
    ready: probe === null ? null : probe.ok,
    probe_error: probe === null || probe.ok ? null : probe.error,
    last_exit: record?.lastExit ?? null,
    log_bytes: await sizeOf(logFilePath(paths.logsDir, 'temporal')),
    ui_url: `http://127.0.0.1:${ports.ui_port}`,
  };
}

function uptime(since: string | null, now: number): number | null {
  return since === null ? null : Math.max(0, now - Date.parse(since));
}

/** Where the stack's own ledger is probed when its profile sets `[ledger.http]`; a CA file that cannot be read leaves the probe to fail on TLS. */
async function ownLedgerProbeTarget(own: SupervisorState['own_ledger']): Promise<ProbeTarget | undefined> {
  if (own === undefined) return undefined;
  const ca = own.ca_file === null ? null : await readFile(own.ca_file, 'utf8').catch(() => null);
  return probeTargetOf(own.endpoint, ca);
}

export async function stackStatus(request: { env: NodeJS.ProcessEnv; profileFlag: string | undefined }): Promise<StatusResult> {
  const paths = await knownProfilePaths(request);
  const state = await readStateLeniently(paths);
  const supervisorPid = await liveSupervisorPid(paths, state);
  const now = Date.now();
  const running = supervisorPid !== null && state?.supervisor_pid === supervisorPid ? state : null;
  const orphans = running === null ? (await liveRecordedChildren(state, paths)).map(({ component, pid }) => ({ component, pid })) : [];
  const active = running === null ? await activeGeneration(paths) : null;

  // A ledger on its own address over TLS ([ledger.http]) is probed there, verified against its CA.
  const ledgerTarget = await ownLedgerProbeTarget(state?.own_ledger);
  const names = COMPONENT_ORDER.filter((name) => (running === null ? active?.ports[name] !== undefined : running.components[name] !== undefined));
  const components = await Promise.all(
    names.map(async (name): Promise<ComponentReport> => {
      const recorded = state?.components[name];
      const port = running?.components[name]?.port ?? active?.ports[name] ?? 0;
      const live = running?.components[name];
      const probe = running !== null || orphans.some((orphan) => orphan.component === name) ? await probeComponent(name, port, PROBE_TIMEOUT_MS, name === 'ledger' ? ledgerTarget : undefined) : null;
      return {
        name,
        state: live?.state ?? 'stopped',
        pid: live?.pid ?? orphans.find((orphan) => orphan.component === name)?.pid ?? null,
        port,
        uptime_ms: live?.state === 'running' || live?.state === 'starting' ? uptime(live.started_at, now) : null,
        restarts: recorded !== undefined && state?.generation_id === (running?.generation_id ?? active?.id) ? recorded.restarts : 0,
        ready: probe === null ? null : probe.ok,
        probe_error: probe === null || probe.ok ? null : probe.error,
        last_exit: recorded?.last_exit ?? null,
        log_bytes: await sizeOf(logFilePath(paths.logsDir, name)),
      };
    }),
  );

  // The executor's own child: shown after the executor while its generation has one.
  const temporalPorts = running !== null ? (await generationPorts(paths, running.generation_id)).temporal : (active?.temporal ?? null);
  if (temporalPorts !== null) {
    const executorUp = running?.components.executor?.state === 'running';
    components.splice(components.findIndex((component) => component.name === 'executor') + 1, 0, await temporalReport(paths, temporalPorts, executorUp, now));
  }

  const handoff = await handoffOf(paths, supervisorPid);
  const generationId = running?.generation_id ?? active?.id ?? null;
  const engine = generationId === null ? null : await generationEngine(paths, generationId);
  const problem = await profileProblem(lexecHome(request.env), paths, generationId);
  let overall: OverallState;
  if (running !== null) {
    const healthy = running.phase === 'running' && handoff.active && components.every((component) => component.state === 'running' && component.ready === true);
    overall = healthy ? 'running' : 'degraded';
  } else overall = orphans.length > 0 || supervisorPid !== null ? 'degraded' : 'stopped';
  const phase = supervisorPid === null ? null : (running?.phase ?? 'starting');

  return {
    profile: paths.name,
    state: overall,
    generation_id: generationId,
    supervisor:
      supervisorPid === null
        ? null
        : {
            pid: supervisorPid,
            // A supervisor that has not published its state yet has only just started.
            phase: running?.phase ?? 'starting',
            uptime_ms: uptime(running?.started_at ?? null, now),
            log_bytes: await sizeOf(logFilePath(paths.logsDir, 'supervisor')),
          },
    components,
    orphans,
    handoff,
    ...(await executorCounts(paths.executorDatabase)),
    approvals_pending: await pendingApprovals(paths.ledgerDatabase),
    workflow_engine: engine,
    profile_problem: problem,
    usable: overall === 'running',
    next_step: nextStep(paths, overall, phase, handoff, { orphans: orphans.length, problem, diskFull: diskFullPath(components), engineDown: engineDown(components), engine }),
    checked_at: new Date(now).toISOString(),
  };
}
