import { describe, expect, it } from 'vitest';
import { childLogLine } from '../../src/launcher/supervisor/child-log-line.js';
import { parseLogLine } from '../../src/launcher/logs/log-lines.js';

const time = new Date('2026-01-02T03:04:05.000Z');

describe('a line a managed child writes (issue 24 item 9)', () => {
  it('a server\'s own JSON line goes into the log as written', () => {
    const line = '{"level":30,"time":"2026-01-02T03:04:05.000Z","service":"ledger","event":"ledger_stopped","signal":"SIGTERM"}';
    expect(childLogLine(line, { stream: 'stderr', service: 'ledger', pid: 7, time })).toBe(line);
  });

  it('a plain line becomes a JSON line: info from stdout (a result), error from stderr (a failure outside the logger)', () => {
    const stdout = childLogLine('executor stopped (SIGTERM)', { stream: 'stdout', service: 'executor', pid: 7, time });
    expect(JSON.parse(stdout)).toEqual({ level: 30, time: time.toISOString(), service: 'executor', pid: 7, event: 'process_output', stream: 'stdout', text: 'executor stopped (SIGTERM)' });
    const stderr = childLogLine('{ not json', { stream: 'stderr', service: 'ledger', pid: 8, time });
    expect(JSON.parse(stderr)).toMatchObject({ level: 50, event: 'process_output', stream: 'stderr', text: '{ not json' });
    // The log readers see an ordinary event with its level and time.
    expect(parseLogLine('executor', stdout)).toMatchObject({ level: 30, time: time.getTime(), parsed: { event: 'process_output' } });
  });
});
