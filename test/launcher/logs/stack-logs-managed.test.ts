import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunningStack, type RunningStack } from '../../support/running-stack.js';

/*
 * The logs of a real managed stack after a stop and a start (issue 24 item 9): every line of
 * every component's log is a JSON line — the servers' own, and the lines a child wrote outside
 * its logger (its `… stopped (SIGTERM)` result on stdout), which the supervisor wraps — and
 * `lexec stack logs` renders them like any other event.
 */

let stack: RunningStack;

beforeAll(async () => {
  stack = await startRunningStack();
  // A stop writes each server's result line; the start after it makes the stack answer again.
  await stack.restart();
}, 180_000);

afterAll(async () => {
  await stack.stop();
}, 120_000);

describe('a managed stack\'s logs after a stop and a start', () => {
  it('hold only JSON lines, the stop results included', async () => {
    const files = (await readdir(stack.paths.logsDir)).filter((file) => file.endsWith('.log'));
    expect(files.sort()).toEqual(['executor.log', 'ledger.log', 'sandbox.log', 'supervisor.log']);
    const stopped: string[] = [];
    for (const file of files) {
      const lines = (await readFile(join(stack.paths.logsDir, file), 'utf8')).trimEnd().split('\n');
      for (const line of lines) {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        expect(parsed, `${file}: ${line}`).toMatchObject({ level: expect.any(Number) as unknown, time: expect.any(String) as unknown });
        // An event name, or pino's message (Fastify's own "Server listening at …").
        expect(typeof parsed.event === 'string' || typeof parsed.msg === 'string', line).toBe(true);
        if (parsed.event === 'process_output') stopped.push(`${String(parsed.service)} ${String(parsed.stream)}: ${String(parsed.text)}`);
      }
    }
    expect(stopped.sort()).toEqual([
      'executor stdout: executor stopped (SIGTERM)',
      'ledger stdout: ledger stopped (SIGTERM)',
      expect.stringMatching(/^sandbox-provider stdout: sandbox provider stopped \(SIGTERM; \d+ submissions? received\)$/) as unknown as string,
    ]);
  });

  it('`lexec stack logs` shows a stop result as a readable event and in --json with its parsed fields', async () => {
    const human = await stack.lexec(['stack', 'logs', '--component', 'executor', '--lines', '500']);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^\S+Z INFO {2}executor +process_output stream=stdout text="executor stopped \(SIGTERM\)"$/m);
    expect(human.stdout).not.toMatch(/^- +- +executor/m);
    const json = await stack.lexec(['stack', 'logs', '--component', 'ledger', '--lines', '500', '--json']);
    const records = json.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { type: string; parsed?: Record<string, unknown> });
    expect(records.filter((record) => record.type === 'line').every((record) => record.parsed !== undefined)).toBe(true);
    expect(records.map((record) => record.parsed)).toContainEqual(expect.objectContaining({ event: 'process_output', stream: 'stdout', text: 'ledger stopped (SIGTERM)' }));
  });
});
