import { ExitCode, UserError } from '../../errors.js';
import { logFilePath } from '../../process/log-files.js';
import { lastLogLines } from '../logs/tail-log.js';
import { PROBE_DESCRIPTIONS } from '../../process/loopback-probe.js';
import { isRunning } from '../../process/process-identity.js';
import { generationComponents, type GenerationManifest, type StackComponent } from '../generations/render-generation.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { readStateLeniently } from '../supervisor/stack-processes.js';
import type { SupervisorState } from '../supervisor/supervisor-state.js';
import type { StartProgress } from './start-events.js';

/*
 * How `stack start` waits for the stack it started (or found running): it follows what the
 * supervisor publishes in supervisor.json rather than probing the servers itself, so the
 * components see one prober, and a failure names what the supervisor knew — the component's
 * state, restarts, last exit and last probe error — with the last lines of its log.
 */

const LOG_LINES_ON_TIMEOUT = 12;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Follows supervisor.json until every component of the generation is running (ready), in start
 * order, one progress step each. Fails at once when the supervisor exits (with the failure it
 * recorded), and with exit 4 at the deadline, naming the first component not ready.
 */
export async function waitUntilReady(options: {
  paths: ProfilePaths;
  manifest: GenerationManifest;
  supervisorPid: number;
  deadline: number;
  request: { readonly progress: StartProgress; readonly timeoutMs: number };
  /** Whether a timeout stops the stack (this start started it) or leaves it running (it was running before). */
  onTimeout: 'stop' | 'leave';
}): Promise<SupervisorState> {
  const { paths, manifest, supervisorPid, deadline, request } = options;
  let latest: SupervisorState | null = null;
  for (const component of generationComponents(manifest)) {
    const port = manifest.components[component]?.port ?? 0;
    latest = await request.progress.step(
      { kind: 'component_ready', component, endpoint: (component === 'ledger' ? manifest.components.ledger?.endpoint : undefined) ?? `http://127.0.0.1:${port}` },
      async () => {
        for (;;) {
          const state = await readStateLeniently(paths);
          const own = state?.supervisor_pid === supervisorPid ? state : null;
          if (own?.components[component]?.state === 'running') return own;
          if (!(await isRunning(supervisorPid))) throw await supervisorExited(paths, supervisorPid);
          if (Date.now() >= deadline) throw await readinessTimeout({ paths, component, state: own, timeoutMs: request.timeoutMs, onTimeout: options.onTimeout });
          await sleep(100);
        }
      },
    );
  }
  if (latest === null) throw new Error('a generation without components');
  return latest;
}

async function supervisorExited(paths: ProfilePaths, pid: number): Promise<UserError> {
  const state = await readStateLeniently(paths);
  const failure = state?.supervisor_pid === pid ? state.failure : null;
  if (failure !== null) {
    return new UserError(failure.code, `The stack did not start: ${failure.step} failed. ${failure.message}`, { nextStep: failure.next_step });
  }
  const lines = await lastLogLines(paths.logsDir, 'supervisor', 5);
  return new UserError('supervisor_exited', [`The supervisor (pid ${pid}) of profile "${paths.name}" exited before the stack was ready.`, ...logBlock(paths, 'supervisor', lines)].join('\n'), {
    nextStep: `Read ${logFilePath(paths.logsDir, 'supervisor')}, fix what it says, then start again.`,
  });
}

function logBlock(paths: ProfilePaths, component: string, lines: readonly string[]): string[] {
  const file = logFilePath(paths.logsDir, component);
  if (lines.length === 0) return [`(${file} has no lines yet)`];
  return [`Last lines of ${file}:`, ...lines.map((line) => `  ${line}`)];
}

async function readinessTimeout(options: {
  paths: ProfilePaths;
  component: StackComponent;
  state: SupervisorState | null;
  timeoutMs: number;
  onTimeout: 'stop' | 'leave';
}): Promise<UserError> {
  const { paths, component, state, timeoutMs } = options;
  const status = state?.components[component];
  const facts: string[] = [];
  if (status === undefined || status.state === 'stopped') {
    facts.push(state?.step !== null && state?.step !== undefined ? `not started yet: the supervisor was at step "${state.step}"` : 'not started yet');
  } else {
    facts.push(`state ${status.state}`);
    if (status.pid !== null) facts.push(`pid ${status.pid}`);
    facts.push(`restarts ${status.restarts}`);
    if (status.last_exit !== null) facts.push(`last exit ${status.last_exit.signal ?? `code ${status.last_exit.code ?? '?'}`}`);
    facts.push(`last probe (${PROBE_DESCRIPTIONS[component]}): ${status.probe_error ?? (status.state === 'restarting' ? 'none (the process had exited)' : 'not answered yet')}`);
  }
  const lines = await lastLogLines(paths.logsDir, component, LOG_LINES_ON_TIMEOUT);
  const message = [`The ${component} of profile "${paths.name}" did not become ready within ${Math.round(timeoutMs / 1000)} s (${facts.join('; ')}).`, ...logBlock(paths, component, lines)].join('\n');
  return new UserError('readiness_timeout', message, {
    nextStep:
      options.onTimeout === 'stop'
        ? `What was started has been stopped. Fix what the log says (all of it: \`lexec stack logs --component ${component}\`), or give it more time with --timeout, then start again.`
        : `The stack was already running and is left as it is. Look at \`lexec stack status\` and \`lexec stack logs --component ${component}\`; for an unhealthy stack run \`lexec stack stop\` then \`lexec stack start\`.`,
    exitCode: ExitCode.readinessTimeout,
  });
}
