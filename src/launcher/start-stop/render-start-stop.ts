import type { ForegroundEnd } from './stack-foreground.js';
import type { StartResult } from './stack-start.js';
import type { StopEvent, StopResult } from './stack-stop.js';
import { describeBusyPort } from '../../process/port-probe.js';
import type { Output } from '../../terminal/output.js';
import { table } from '../../terminal/table.js';

/** Human lines for `stack start` and `stack stop` (stdout; stop's warnings on stderr). */

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export function renderStartResult(result: StartResult, output: Output): void {
  const { style } = output;
  if (result.outcome === 'already_running') {
    const running = `profile ${result.profile} is already running (generation ${result.generation_id}, supervisor pid ${result.supervisor_pid})`;
    output.line(
      result.handoff_rewritten === null
        ? `${running}: nothing to do`
        : `${running}: its handoff was ${result.handoff_rewritten} and has been written again, so clients can find the stack; nothing was restarted`,
    );
  } else {
    output.line(`${style.ok('✔')} profile ${style.bold(result.profile)} is ready: generation ${result.generation_id}, supervisor pid ${result.supervisor_pid} (${seconds(result.elapsed_ms)})`);
  }
  for (const line of table(result.components.map((component) => [component.name, component.endpoint, `pid ${component.pid ?? '-'}`]))) output.line(line);
  if (result.agent !== null) output.line(`  agent ${result.agent.name} (${result.agent.agent_id})`);
  output.line(style.dim(`handoff ${result.handoff_file}; \`lexec stack status\` shows the stack, \`lexec stack stop\` stops it`));
}

/** `stack start` in human form; with --foreground the start was printed when ready, and this says how the wait ended. */
export function renderStartOutcome(result: StartResult & { readonly foreground: ForegroundEnd | null }, output: Output): void {
  if (result.foreground === null) renderStartResult(result, output);
  else output.line(`stack of profile ${result.profile} stopped (${result.foreground.ended_by})`);
}

export function renderStopResult(result: StopResult, output: Output): void {
  const { style } = output;
  if (result.outcome === 'already_stopped') {
    output.line(`profile ${result.profile} was not running: nothing to stop`);
  } else {
    const by = result.supervisor_pid === null ? 'no supervisor was running' : `supervisor pid ${result.supervisor_pid}${result.forced ? ', killed after it did not stop in time' : ''}`;
    output.line(`${style.ok('✔')} profile ${style.bold(result.profile)} stopped (${by}; ${seconds(result.elapsed_ms)})`);
  }
  if (result.orphans_stopped.length > 0) {
    output.line(`stopped ${result.orphans_stopped.length} process(es) left by a killed supervisor: ${result.orphans_stopped.map((orphan) => `${orphan.component} pid ${orphan.pid}`).join(', ')}`);
  }
  const busy = result.ports_busy.map((port) => describeBusyPort({ port: port.port, free: false, holder: port.holder }));
  for (const line of busy) output.diagnostics.line(output.diagnostics.style.warn(`warning: ${line} (not a process of this stack)`));
}

/** One line of a stop's progress, on stderr (a warning styled as one). */
export function renderStopEvent(event: StopEvent, output: Output): void {
  const { diagnostics } = output;
  switch (event.kind) {
    case 'executions_in_flight': {
      const one = event.count === 1;
      diagnostics.line(diagnostics.style.warn(`warning: ${event.count} execution${one ? ' is' : 's are'} still in flight; ${one ? 'it resumes' : 'they resume'} at the next \`lexec stack start\` (nothing is submitted or charged twice)`));
      return;
    }
    case 'stopping_supervisor':
      diagnostics.line(`stopping supervisor pid ${event.supervisor_pid} (${event.components.join(', ') || 'its children'}; the executor drains first): waiting up to ${event.bound_ms / 1000} s, then SIGKILL`);
      return;
    case 'supervisor_killed':
      diagnostics.line(`supervisor pid ${String(event.supervisor_pid)} did not stop within ${event.bound_ms / 1000} s: killed (SIGKILL) with its process group`);
      return;
  }
}
