import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/*
 * The Temporal child a managed_local executor publishes in `<data_dir>/server.json` (written by
 * src/executor/engine/temporal/managed-temporal-state.ts; docs/executions.md "managed_local"),
 * read the light way — no zod — because `stack status` must start fast. Only the fields the
 * launcher uses are taken, each checked by hand; anything damaged reads as nothing.
 */

export interface TemporalChildRecord {
  readonly state: 'starting' | 'running' | 'restarting' | 'stopped';
  readonly pid: number | null;
  readonly startTicks: number | null;
  readonly address: string;
  readonly uiUrl: string;
  readonly restarts: number;
  readonly startedAt: string | null;
  readonly lastExit: { readonly code: number | null; readonly signal: string | null; readonly at: string } | null;
}

const STATES = new Set(['starting', 'running', 'restarting', 'stopped']);
const wholeOrNull = (value: unknown): value is number | null => value === null || (Number.isInteger(value) && (value as number) >= 0);

/** The record in `<temporalDataDir>/server.json`, or null when there is none or it is damaged. */
export async function readTemporalChild(temporalDataDir: string): Promise<TemporalChildRecord | null> {
  let document: Record<string, unknown>;
  try {
    document = JSON.parse(await readFile(join(temporalDataDir, 'server.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
  const { state, pid, pid_start_ticks: ticks, address, ui_url: uiUrl, restarts, started_at: startedAt, last_exit: lastExit } = document;
  if (document.state_version !== 1 || typeof state !== 'string' || !STATES.has(state) || !wholeOrNull(pid) || !wholeOrNull(ticks)) return null;
  if (typeof address !== 'string' || typeof uiUrl !== 'string' || !Number.isInteger(restarts) || (startedAt !== null && typeof startedAt !== 'string')) return null;
  const exit = lastExit as { code?: unknown; signal?: unknown; at?: unknown } | null;
  const validExit = exit === null || (typeof exit === 'object' && wholeOrNull(exit.code) && (exit.signal === null || typeof exit.signal === 'string') && typeof exit.at === 'string');
  if (!validExit) return null;
  return {
    state: state as TemporalChildRecord['state'],
    pid: pid === 0 ? null : pid,
    startTicks: ticks,
    address,
    uiUrl,
    restarts: restarts as number,
    startedAt,
    lastExit: exit === null ? null : { code: exit.code as number | null, signal: exit.signal as string | null, at: exit.at as string },
  };
}
