import type { LogEntry, LogsResult } from './stack-logs.js';
import type { AdmissionRejection } from './log-lines.js';
import type { Output } from '../../terminal/output.js';

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

/** One log line as read, for `--raw`: `component | payload` when several components are shown. */
export function formatLogEntry(entry: LogEntry, withPrefix: boolean, output: Output): string {
  if (!withPrefix) return entry.line;
  const level = levelOf(entry) ?? 0;
  const style = level >= 50 ? output.style.error : level >= 40 ? output.style.warn : output.style.bold;
  return `${style(entry.component.padEnd(PREFIX_WIDTH))} ${output.style.dim('|')} ${entry.line}`;
}

const LEVEL_NAMES: readonly [number, string][] = [
  [60, 'FATAL'],
  [50, 'ERROR'],
  [40, 'WARN'],
  [30, 'INFO'],
  [20, 'DEBUG'],
  [10, 'TRACE'],
];
/** Keys every line carries that the readable form shows in its own columns, or not at all. */
const FRAME_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'service', 'event', 'msg', 'v']);
const MAX_VALUE_CHARS = 120;
// Every C0/C1 control character and DEL: a value is shown on one line, with nothing a terminal obeys.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

function plainValue(value: unknown): string {
  // JSON.stringify answers undefined for undefined, functions and symbols (never in parsed JSON, but typed so).
  const text = typeof value === 'string' ? value : ((JSON.stringify(value) as string | undefined) ?? String(value));
  const clean = text.replace(CONTROL, ' ');
  const shown = clean.length > MAX_VALUE_CHARS ? `${clean.slice(0, MAX_VALUE_CHARS - 1)}…` : clean;
  return typeof value === 'string' && (shown === '' || /[\s"=]/.test(shown)) ? JSON.stringify(shown) : shown;
}

/**
 * One log line for people (the default): `time LEVEL component event key=value …`. Lines that
 * are not JSON (a crash trace, a child's own output) are shown as read, after the component.
 */
export function formatReadableEntry(entry: LogEntry, output: Output): string {
  const { style } = output;
  const component = entry.component.padEnd(PREFIX_WIDTH);
  const parsed = entry.parsed;
  if (parsed === undefined) return `${style.dim('-'.padEnd(24))} ${'-'.padEnd(5)} ${component} ${entry.line}`;
  const level = levelOf(entry);
  const name = level === null ? '-' : (LEVEL_NAMES.find(([at]) => level >= at)?.[1] ?? String(level));
  const levelStyle = level !== null && level >= 50 ? style.error : level !== null && level >= 40 ? style.warn : (text: string) => text;
  const time = typeof parsed.time === 'string' ? parsed.time : typeof parsed.time === 'number' ? new Date(parsed.time).toISOString() : '-';
  const what = typeof parsed.event === 'string' ? parsed.event : typeof parsed.msg === 'string' ? parsed.msg : '-';
  const fields = Object.entries(parsed)
    .filter(([key]) => !FRAME_KEYS.has(key))
    .map(([key, value]) => `${key.replace(CONTROL, '')}=${plainValue(value)}`);
  return [style.dim(plainValue(time).padEnd(24)), levelStyle(name.padEnd(5)), component, style.bold(plainValue(what)), ...fields].join(' ');
}

function describeRejection(rejection: AdmissionRejection): string {
  const fields = rejection.fields.length > 0 ? rejection.fields.join(', ') : 'none';
  const seen = rejection.occurrences === 1 ? 'logged once' : `logged ${rejection.occurrences} times, first ${rejection.first_seen ?? 'at an unknown time'}`;
  return `  ${rejection.last_seen ?? '(no time)'}  ${rejection.route} v${rejection.route_version} -> ${rejection.status} ${rejection.code}/${rejection.reason_code}  fields: ${fields}  (${seen})`;
}

/**
 * Everything printed before the lines — where nothing was found, the admission rejections, what
 * the lines are — on stderr: stdout carries the log lines only, so `--lines 5` prints five lines
 * and a pipe (`| grep`) sees nothing else.
 */
export function renderLogsHeader(result: LogsResult, { diagnostics: output }: Output): void {
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

export function renderLogLines(result: Pick<LogsResult, 'component'>, lines: readonly LogEntry[], output: Output, raw = false): void {
  for (const entry of lines) output.line(raw ? formatLogEntry(entry, result.component === 'all', output) : formatReadableEntry(entry, output));
}

/**
 * `stack logs --json`: JSON Lines on stdout (docs/stack-logs.md "JSON Lines"). Admission
 * rejections first, each `{"type":"admission_rejection", …}` (when looked for, as in the human
 * form), then one `{"type":"line","component","line","parsed"?}` per log line, oldest first; with
 * `--follow` more `line` records as they are written. `jq 'select(.type == "line")'` keeps the lines.
 */
export function renderLogsJsonLines(result: Pick<LogsResult, 'admission_rejections'> | null, lines: readonly LogEntry[], output: Output): void {
  for (const rejection of result?.admission_rejections ?? []) output.jsonLine({ type: 'admission_rejection', ...rejection });
  for (const entry of lines) output.jsonLine({ type: 'line', ...entry });
}

/** `stack logs` in human form: the header and the lines read; once followed, only the closing note (the rest was printed as it came). */
export function renderLogsResult(result: LogsResult, output: Output, options: { readonly raw: boolean; readonly followed: boolean }): void {
  if (options.followed) {
    output.diagnostics.line(output.diagnostics.style.dim('Stopped following.'));
    return;
  }
  renderLogsHeader(result, output);
  renderLogLines(result, result.lines, output, options.raw);
}

/** `stack logs --follow`: what was read before following (human or JSON Lines), then a note on stderr. */
export function renderFollowedTail(result: LogsResult, output: Output, raw: boolean): void {
  if (output.jsonMode) {
    renderLogsJsonLines(result, result.lines, output);
    return;
  }
  renderLogsHeader(result, output);
  renderLogLines(result, result.lines, output, raw);
  output.diagnostics.line(output.diagnostics.style.dim('Following (Ctrl-C to stop)…'));
}

/** `stack logs --follow`: lines written since, as they come. */
export function renderFollowedLines(result: Pick<LogsResult, 'component'>, lines: readonly LogEntry[], output: Output, raw: boolean): void {
  if (output.jsonMode) renderLogsJsonLines(null, lines, output);
  else renderLogLines(result, lines, output, raw);
}
