import type { ForegroundEnd } from './stack-foreground.js';
import type { StartResult } from './stack-start.js';
import type { StopEvent, StopResult } from './stack-stop.js';
import { describeBusyPort } from '../../process/port-probe.js';
import type { Output } from '../../terminal/output.js';
import { table } from '../../terminal/table.js';
import { engineLine } from '../status/render-status.js';

/** Human lines for `stack start` and `stack stop` (stdout; stop's warnings on stderr). */

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A wait's length in whole units: `40 s`, `10 min`. */
function duration(ms: number): string {
  const total = Math.round(ms / 1000);
  return total >= 120 && total % 60 === 0 ? `${total / 60} min` : `${total} s`;
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
  const engine = engineLine(result);
  if (engine !== null) output.line(engine);
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
    const killed = result.killed.length > 0 ? `, which killed the ${result.killed.join(' and ')} after ${result.killed.length === 1 ? 'it' : 'they'} did not stop in time` : '';
    const by = result.supervisor_pid === null ? 'no supervisor was running' : `supervisor pid ${result.supervisor_pid}${result.forced && result.killed.length === 0 ? ', killed after it did not stop in time' : killed}`;
    output.line(`${result.forced ? style.warn('✔') : style.ok('✔')} profile ${style.bold(result.profile)} stopped${result.forced ? ' by force' : ''} (${by}; ${seconds(result.elapsed_ms)})`);
    if (result.drain !== null) {
      output.line(
        result.drain.outcome === 'drained'
          ? `waited ${seconds(result.drain.waited_ms)} for the work in flight: ${result.drain.finished} execution${result.drain.finished === 1 ? '' : 's'} finished first`
          : `waited ${seconds(result.drain.waited_ms)}: ${result.drain.remaining} execution${result.drain.remaining === 1 ? '' : 's'} still in flight resume${result.drain.remaining === 1 ? 's' : ''} at the next start`,
      );
    }
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
      const counted = `${event.count} execution${one ? ' is' : 's are'} still in flight`;
      if (event.waiting) diagnostics.line(`${counted}: waiting for ${one ? 'it' : 'them'} to finish before stopping (clients already connected keep following; Ctrl-C calls the stop off)`);
      else diagnostics.line(diagnostics.style.warn(`warning: ${counted}; ${one ? 'it stops where it is and resumes' : 'they stop where they are and resume'} at the next \`lexec stack start\` (nothing is submitted or charged twice; a \`lexec run\` following ${one ? 'it' : 'them'} ends now and says how to collect the images). \`lexec stack stop --wait\` lets them finish first.`));
      return;
    }
    case 'approvals_pending': {
      const one = event.count === 1;
      diagnostics.line(diagnostics.style.warn(`warning: ${event.count} authorization${one ? ' waits' : 's wait'} for an approver; ${one ? 'it stays' : 'they stay'} requested in the ledger (until ${one ? 'it expires' : 'they expire'}) and can be decided after the next \`lexec stack start\`; a \`lexec run\` waiting on ${one ? 'it' : 'one'} ends now and says how to resume.`));
      return;
    }
    case 'draining':
      diagnostics.line(`waiting up to ${duration(event.bound_ms)} for ${event.count} execution${event.count === 1 ? '' : 's'} in flight (--wait)`);
      return;
    case 'drain_progress':
      diagnostics.line(event.remaining === 0 ? 'no execution in flight any more' : `${event.remaining} execution${event.remaining === 1 ? '' : 's'} still in flight`);
      return;
    case 'drain_timed_out':
      diagnostics.line(diagnostics.style.warn(`warning: waited ${duration(event.waited_ms)}; ${event.remaining} execution${event.remaining === 1 ? ' is' : 's are'} still in flight and resume${event.remaining === 1 ? 's' : ''} at the next \`lexec stack start\`; stopping now`));
      return;
    case 'component_killed':
      diagnostics.line(diagnostics.style.warn(`warning: the ${event.component}${event.pid === null ? '' : ` (pid ${event.pid})`} did not stop within its bound after SIGTERM and was killed (SIGKILL); \`lexec stack logs --component ${event.component}\` shows what it was doing`));
      return;
    case 'stopping_supervisor':
      diagnostics.line(`stopping supervisor pid ${event.supervisor_pid} (${event.components.join(', ') || 'its children'}; the executor drains first): waiting up to ${event.bound_ms / 1000} s, then SIGKILL`);
      return;
    case 'supervisor_killed':
      diagnostics.line(`supervisor pid ${String(event.supervisor_pid)} did not stop within ${event.bound_ms / 1000} s: killed (SIGKILL) with its process group`);
      return;
  }
}
