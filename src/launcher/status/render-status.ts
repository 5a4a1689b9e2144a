import type { StatusResult } from './stack-status.js';
import type { Output } from '../../terminal/output.js';
import { table } from '../../terminal/table.js';

/*
 * Human lines for `stack status` (stdout). Only type imports from the service: `stack status`
 * loads this module and must not load what start and stop need.
 */

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

/** profile.toml no longer renders: what the next start will do about it, and every key at fault. */
function renderProfileProblem(result: StatusResult, output: Output): void {
  const problem = result.profile_problem;
  if (problem === null) return;
  const keys = problem.issues.length > 0 ? `: ${problem.issues.map((issue) => issue.path).join(', ')}` : '';
  const when = result.state === 'stopped' ? 'the next `lexec stack start`' : 'the next `lexec stack start` after a stop';
  output.line(output.style.warn(`warning: profile.toml no longer renders (${problem.code}${keys}); ${when} will refuse until it is fixed (\`lexec stack doctor\` checks it)`));
  for (const issue of problem.issues) output.line(`  ${issue.path}: ${issue.message}`);
}

const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;

/** Where the executor's Temporal engine answers and its web UI (the embedded engine has neither). */
export function engineLine(result: Pick<StatusResult, 'workflow_engine'>): string | null {
  const engine = result.workflow_engine;
  if (engine === null || engine.mode === 'embedded') return null;
  const where = engine.address === null ? '' : ` at ${engine.address}`;
  const ui = engine.ui_url === null ? '' : `; temporal web UI: ${engine.ui_url}`;
  return `workflow engine: ${engine.mode === 'external' ? 'external Temporal' : 'Temporal server run by the executor'}${where}${ui}`;
}

/** The work a stop would interrupt: executions in flight and approvals waiting for a human. */
function workLine(result: StatusResult): string | null {
  const inFlight = result.executions_in_flight;
  const approvals = result.approvals_pending;
  if (inFlight === null && approvals === null) return null;
  const parts = [
    inFlight === null ? null : `${plural(inFlight, 'execution', 'executions')} in flight`,
    approvals === null ? null : `${plural(approvals, 'approval', 'approvals')} pending${approvals > 0 ? ' (`lexec ledger authorizations list --status requested`, or the console)' : ''}`,
  ].filter((part) => part !== null);
  return `work: ${parts.join(', ')}`;
}

export function renderStatusResult(result: StatusResult, output: Output): void {
  const { style } = output;
  const state = result.state === 'running' ? style.ok('running') : result.state === 'degraded' ? style.warn('degraded') : 'stopped';
  const supervisor = result.supervisor === null ? 'no supervisor' : `supervisor pid ${result.supervisor.pid} (${result.supervisor.phase}, up ${duration(result.supervisor.uptime_ms)})`;
  output.line(`profile ${style.bold(result.profile)}: ${state}, generation ${result.generation_id ?? 'none'}, ${supervisor}`);
  renderProfileProblem(result, output);
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
  const engine = engineLine(result);
  if (engine !== null) output.line(engine);
  const work = workLine(result);
  if (work !== null) output.line(work);
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
  if (result.next_step !== null && (result.state !== 'stopped' || result.profile_problem !== null)) output.line(style.dim(result.next_step));
}
