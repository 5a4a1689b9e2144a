import type { CheckStatus, DoctorReport } from './doctor-report.js';
import type { Output } from '../../terminal/output.js';

const MARKS: Record<CheckStatus, string> = { pass: '✔', warn: '!', fail: '✖', skip: '-' };

/** Human form of the doctor report: one line per check, its fix and field problems indented. */
export function renderDoctorReport(report: DoctorReport, output: Output): void {
  const { style } = output;
  const paint: Record<CheckStatus, (text: string) => string> = { pass: style.ok, warn: style.warn, fail: style.error, skip: style.dim };
  output.line(`${style.bold('stack doctor')} profile ${report.profile} (${report.running ? 'running' : 'stopped'}, active generation ${report.active_generation_id ?? 'none'})`);
  if (report.permissions_fixed !== null) {
    const fixed = report.permissions_fixed;
    output.line(fixed.length === 0 ? 'permissions: nothing to tighten' : `permissions: tightened ${fixed.length} entr${fixed.length === 1 ? 'y' : 'ies'}`);
    for (const fix of fixed) output.line(`         ${fix.previous_mode} -> ${fix.mode}  ${fix.path}`);
  }
  const width = Math.max(...report.checks.map((check) => check.id.length));
  for (const check of report.checks) {
    output.line(`${paint[check.status](`${MARKS[check.status]} ${check.status.padEnd(4)}`)} ${check.id.padEnd(width)}  ${check.summary}`);
    for (const issue of check.issues) output.line(`         ${style.bold(issue.path)}: ${issue.message}`);
    if (check.fix !== null && check.status !== 'pass') output.line(`         ${style.dim(`fix: ${check.fix}`)}`);
  }
  const counts = (['fail', 'warn', 'pass', 'skip'] as const).map((status) => `${report.checks.filter((check) => check.status === status).length} ${status}`).join(', ');
  const verdict = report.overall === 'fail' ? style.error('fail') : report.overall === 'warn' ? style.warn('warn') : style.ok('pass');
  output.line(`overall: ${verdict} (${counts})${report.overall === 'fail' ? ' — exit 3' : ''}`);
}
