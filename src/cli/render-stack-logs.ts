import type { LogEntry, LogsResult } from '../services/stack-logs.js';
import type { AdmissionRejection } from '../stack/log-lines.js';
import type { Output } from './output.js';

/*
 * Human output of `stack logs` (docs/stack-logs.md "Output"). Colour, when on, touches only what
 * lexec adds — the component prefix (by the line's level), headers and notes. The payload of a
 * log line is printed as read, already stripped of every control sequence (spec §8 Operations 8).
 */

const PREFIX_WIDTH = 'supervisor'.length;

function levelOf(entry: LogEntry): number | null {
  const level = entry.parsed?.level;
  return typeof level === 'number' ? level : null;
}

/** One log line for the terminal: `component | payload` when several components are shown. */
export function formatLogEntry(entry: LogEntry, withPrefix: boolean, output: Output): string {
  if (!withPrefix) return entry.line;
  const level = levelOf(entry) ?? 0;
  const style = level >= 50 ? output.style.error : level >= 40 ? output.style.warn : output.style.bold;
  return `${style(entry.component.padEnd(PREFIX_WIDTH))} ${output.style.dim('|')} ${entry.line}`;
}

function describeRejection(rejection: AdmissionRejection): string {
  const fields = rejection.fields.length > 0 ? rejection.fields.join(', ') : 'none';
  const seen = rejection.occurrences === 1 ? 'logged once' : `logged ${rejection.occurrences} times, first ${rejection.first_seen ?? 'at an unknown time'}`;
  return `  ${rejection.last_seen ?? '(no time)'}  ${rejection.route} v${rejection.route_version} -> ${rejection.status} ${rejection.code}/${rejection.reason_code}  fields: ${fields}  (${seen})`;
}

/** Everything printed before the lines: where nothing was found, and the admission rejections. */
export function renderLogsHeader(result: LogsResult, output: Output): void {
  const which = result.component === 'all' ? 'any component' : `the ${result.component}`;
  if (result.log_files === 0) {
    output.line(`No logs yet for ${which} of profile ${result.profile} (${result.logs_dir}): the supervisor writes them once \`lexec stack start\` runs.`);
    return;
  }
  if (result.admission_rejections !== null) {
    if (result.admission_rejections.length === 0) {
      output.line(output.style.dim('No admission rejections (executor_admission_rejected) in the retained executor logs.'));
    } else {
      output.line(output.style.warn('Admission rejections in the retained executor logs (no execution id; may predate the running executor):'));
      for (const rejection of result.admission_rejections) output.line(describeRejection(rejection));
    }
    output.line(output.style.dim('Executor lines below are not filtered by execution; pass --execution-id <id> to see one execution.'));
  }
  if (result.execution_id !== null) {
    output.line(output.style.dim(`Only lines of execution ${result.execution_id}; admission rejections carry no execution id and are left out (omit --execution-id to see them).`));
  }
  if (result.lines.length === 0) output.line(output.style.dim('No matching lines.'));
}

export function renderLogLines(result: Pick<LogsResult, 'component'>, lines: readonly LogEntry[], output: Output): void {
  for (const entry of lines) output.line(formatLogEntry(entry, result.component === 'all', output));
}
