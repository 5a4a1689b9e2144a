/*
 * A managed component's log is JSON lines (docs/stack-logs.md), but a child also writes lines no
 * logger made: its command result on stdout when it stops (`executor stopped (SIGTERM)`), the
 * CLI's error text on stderr when it cannot start, a crash trace. The supervisor, which merges
 * both streams into the one log, writes each such line as a JSON line of its own, in the shape
 * pino gives the servers' lines, so that every reader — `stack logs --level error` included —
 * sees one format. A server's own JSON lines pass as they are.
 */

export type ChildStream = 'stdout' | 'stderr';

/** The event of a line a child wrote outside its logger. */
export const CHILD_OUTPUT_EVENT = 'process_output';

// pino levels: a child writes plain text on stderr only when something went wrong outside its
// logger (it could not start, it crashed); on stdout only its result.
const LEVEL: Record<ChildStream, number> = { stdout: 30, stderr: 50 };

/** Whether a line is already one JSON object (pino's lines always are; checked cheaply, not parsed). */
function isJsonObjectLine(line: string): boolean {
  return line.startsWith('{') && line.endsWith('}');
}

/** `line` as it goes into the component's log: as written when it is JSON, else wrapped. */
export function childLogLine(line: string, context: { stream: ChildStream; service: string; pid: number; time?: Date }): string {
  if (isJsonObjectLine(line)) return line;
  return JSON.stringify({
    level: LEVEL[context.stream],
    time: (context.time ?? new Date()).toISOString(),
    service: context.service,
    pid: context.pid,
    event: CHILD_OUTPUT_EVENT,
    stream: context.stream,
    text: line,
  });
}
