import type { StartResult } from '../launcher/start-stop/stack-start.js';
import type { StatusResult } from '../launcher/status/stack-status.js';
import type { StopResult } from '../launcher/start-stop/stack-stop.js';
import { describeBusyPort } from '../process/port-probe.js';
import type { Output } from '../terminal/output.js';

/*
 * Human lines for `stack start`, `stack stop` and `stack status` (stderr). Only type imports from
 * the services: `stack status` loads this module and must not load what start and stop need.
 */

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function duration(ms: number | null): string {
  if (ms === null) return '-';
  const total = Math.floor(ms / 1000);
  const [h, m, s] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(s).padStart(2, '0')}s` : `${s}s`;
}

function bytes(count: number): string {
  if (count < 1024) return `${count} B`;
  if (count < 1024 * 1024) return `${(count / 1024).toFixed(1)} KiB`;
  return `${(count / (1024 * 1024)).toFixed(1)} MiB`;
}

function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) => `  ${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ')}`.trimEnd());
}

export function renderStartResult(result: StartResult, output: Output): void {
  const { style } = output;
  if (result.outcome === 'already_running') {
    output.line(`profile ${result.profile} is already running (generation ${result.generation_id}, supervisor pid ${result.supervisor_pid}): nothing to do`);
  } else {
    output.line(`${style.ok('✔')} profile ${style.bold(result.profile)} is ready: generation ${result.generation_id}, supervisor pid ${result.supervisor_pid} (${seconds(result.elapsed_ms)})`);
  }
  for (const line of table(result.components.map((component) => [component.name, component.endpoint, `pid ${component.pid ?? '-'}`]))) output.line(line);
  if (result.agent !== null) output.line(`  agent ${result.agent.name} (${result.agent.agent_id})`);
  output.line(style.dim(`handoff ${result.handoff_file}; \`lexec stack status\` shows the stack, \`lexec stack stop\` stops it`));
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

export function renderStatusResult(result: StatusResult, output: Output): void {
  const { style } = output;
  const state = result.state === 'running' ? style.ok('running') : result.state === 'degraded' ? style.warn('degraded') : 'stopped';
  const supervisor = result.supervisor === null ? 'no supervisor' : `supervisor pid ${result.supervisor.pid} (${result.supervisor.phase}, up ${duration(result.supervisor.uptime_ms)})`;
  output.line(`profile ${style.bold(result.profile)}: ${state}, generation ${result.generation_id ?? 'none'}, ${supervisor}`);
  if (result.components.length === 0) {
    output.line(style.dim('No active generation yet (`lexec stack start` renders and activates one).'));
    return;
  }
  const rows = [
    ['component', 'state', 'pid', 'port', 'uptime', 'restarts', 'ready', 'log'],
    ...result.components.map((component) => [
      component.name,
      component.state,
      component.pid === null ? '-' : String(component.pid),
      String(component.port),
      duration(component.uptime_ms),
      String(component.restarts),
      component.ready === null ? '-' : component.ready ? 'yes' : `no: ${component.probe_error ?? '?'}`,
      bytes(component.log_bytes),
    ]),
  ];
  for (const line of table(rows)) output.line(line);
  for (const component of result.components) {
    if (component.ui_url !== undefined) output.line(`${component.name} web UI: ${component.ui_url}`);
  }
  if (result.orphans.length > 0) {
    output.line(style.warn(`The supervisor is gone but ${result.orphans.map((orphan) => `${orphan.component} pid ${orphan.pid}`).join(', ')} still run: \`lexec stack stop\` ends them.`));
  }
  if (result.awaiting_human !== null && result.awaiting_human > 0) {
    output.line(style.warn(`${result.awaiting_human} execution${result.awaiting_human === 1 ? '' : 's'} await${result.awaiting_human === 1 ? 's' : ''} a human (billing ambiguous): \`lexec executor reconciliation list\``));
  }
  const rescheduled = result.rescheduled_runs;
  if (rescheduled !== null && rescheduled.total > 0) {
    const line = `${rescheduled.total} workflow run${rescheduled.total === 1 ? ' was' : 's were'} closed under a live execution and started again (${rescheduled.last_24h} in the last 24 h, last ${rescheduled.last_at ?? '?'}): \`lexec stack logs --component executor | grep workflow_rescheduled\``;
    output.line(rescheduled.last_24h > 0 ? style.warn(line) : line);
  }
  if (result.supervisor !== null) output.line(result.usable ? `usable: yes (handoff written ${result.handoff.written_at ?? '?'})` : style.warn(`usable: no${result.handoff.active ? '' : ' (no active handoff)'}`));
  if (result.next_step !== null && result.state !== 'stopped') output.line(style.dim(result.next_step));
}
