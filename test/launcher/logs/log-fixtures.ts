import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { makeTempDir } from '../../support/cli.js';
import { exampleText, writeProfile } from '../../support/example-profiles.js';

/** A temporary LEXEC_HOME holding one profile made from a shipped example; no logs yet. */
export interface ProfileHome {
  readonly home: string;
  readonly logsDir: string;
  readonly profileDir: string;
  readonly env: Record<string, string>;
}

export async function makeProfileHome(options: { profile?: string; example?: string; toml?: string } = {}): Promise<ProfileHome> {
  const home = await makeTempDir('lexec-logs-');
  const profileDir = dirname(await writeProfile(home, options.profile ?? 'sandbox', options.toml ?? exampleText(options.example ?? 'sandbox')));
  return { home, profileDir, logsDir: join(profileDir, 'logs'), env: { LEXEC_HOME: home } };
}

/** Writes one log file (`generation` 0 = active `<component>.log`, 1..4 = `.log.N`). */
export async function writeLog(logsDir: string, component: string, generation: number, lines: readonly string[]): Promise<void> {
  await mkdir(logsDir, { recursive: true });
  const name = generation === 0 ? `${component}.log` : `${component}.log.${generation}`;
  await writeFile(join(logsDir, name), lines.map((line) => `${line}\n`).join(''));
}

export const BASE_TIME = Date.parse('2026-03-01T12:00:00.000Z');

/** A pino-style JSON line as the servers write them (ISO `time`, numeric `level`). */
export function jsonLine(second: number, event: string, fields: Record<string, unknown> = {}, level = 30): string {
  return JSON.stringify({ level, time: new Date(BASE_TIME + second * 1000).toISOString(), pid: 4242, service: 'executor', event, ...fields });
}

export const EXECUTION_A = `exe_${'a'.repeat(32)}`;
export const EXECUTION_B = `exe_${'b'.repeat(32)}`;

export function admissionRejected(second: number, reason = 'target_not_selectable', fields: string[] = ['target_id']): string {
  return jsonLine(second, 'executor_admission_rejected', {
    route: 'create_execution',
    route_version: 2,
    status: 400,
    code: 'invalid_request',
    reason_code: reason,
    fields,
  });
}

export interface LogEntryRecord {
  readonly component: string;
  readonly line: string;
  readonly parsed?: Record<string, unknown>;
}

/** `stack logs --json` read back: its JSON Lines records by type (docs/stack-logs.md "JSON Lines"). */
export interface LogsRecords {
  readonly lines: LogEntryRecord[];
  readonly admission_rejections: Record<string, unknown>[];
}

/** Parses JSON Lines output: every line one JSON object with a known `type`, nothing else. */
export function parseLogsJsonLines(stdout: string): LogsRecords {
  const records: LogsRecords = { lines: [], admission_rejections: [] };
  for (const text of stdout.split('\n').filter((line) => line !== '')) {
    const { type, ...record } = JSON.parse(text) as { type: unknown } & Record<string, unknown>;
    if (type === 'line') records.lines.push(record as unknown as LogEntryRecord);
    else if (type === 'admission_rejection') records.admission_rejections.push(record);
    else throw new Error(`unexpected JSON Lines record: ${text}`);
  }
  return records;
}

/** A failure under --json: the one failure envelope, on one line. */
export interface FailureDocument {
  readonly ok: false;
  readonly error: { kind: string; code: string; message: string };
}
