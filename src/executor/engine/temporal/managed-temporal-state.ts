import { randomBytes } from 'node:crypto';
import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readJsonFile } from '../../../storage/read-json-file.js';

/*
 * `<data_dir>/server.json`: what the executor publishes about its managed Temporal dev server
 * (managed_local). A contract: the launcher's `stack status`, `logs` and `stop` read it, and the
 * next executor reads it to find a server its dead predecessor left running (orphan reaping).
 * Written only by managed-temporal-server.ts, atomically (temporary file + rename), mode 0600.
 */

export const MANAGED_TEMPORAL_STATE_VERSION = 1;
export const MANAGED_TEMPORAL_STATE_FILE = 'server.json';

const count = z.number().int().min(0);
const pid = z.number().int().min(1);

export const managedTemporalStateSchema = z.strictObject({
  state_version: z.literal(MANAGED_TEMPORAL_STATE_VERSION),
  /** The executor process that owns (supervises) the server. */
  executor_pid: pid,
  /** Kernel start time of executor_pid (src/process/process-identity.ts): a reused pid is never taken for it. */
  executor_pid_start_ticks: count.nullable(),
  /** The `temporal server start-dev` child; null while none runs. */
  pid: pid.nullable(),
  pid_start_ticks: count.nullable(),
  state: z.enum(['starting', 'running', 'restarting', 'stopped']),
  /** gRPC frontend, `127.0.0.1:<port>`. */
  address: z.string(),
  /** Web UI, `http://127.0.0.1:<ui_port>`. */
  ui_url: z.string(),
  /** Restarts after unexpected exits, since this executor started the server. */
  restarts: count,
  /** When the current child was spawned. */
  started_at: z.iso.datetime().nullable(),
  last_exit: z.strictObject({ code: z.number().int().nullable(), signal: z.string().nullable(), at: z.iso.datetime() }).nullable(),
});
export type ManagedTemporalState = z.infer<typeof managedTemporalStateSchema>;

export function managedTemporalStatePath(dataDir: string): string {
  return join(dataDir, MANAGED_TEMPORAL_STATE_FILE);
}

/** The published state; null when there is none, or it is damaged (unparsable or off-schema). */
export async function readManagedTemporalState(dataDir: string): Promise<ManagedTemporalState | null> {
  const file = await readJsonFile(managedTemporalStatePath(dataDir));
  if (file.kind !== 'json') return null;
  const parsed = managedTemporalStateSchema.safeParse(file.document);
  return parsed.success ? parsed.data : null;
}

/**
 * Replaces the state atomically. Synchronous on purpose: the file is tiny, and writes issued
 * from exit handlers and timers can then never land out of order.
 */
export function writeManagedTemporalState(dataDir: string, state: ManagedTemporalState): void {
  const path = managedTemporalStatePath(dataDir);
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  // Fields in the contract's order, whatever order the caller built them in.
  const document: ManagedTemporalState = {
    state_version: state.state_version,
    executor_pid: state.executor_pid,
    executor_pid_start_ticks: state.executor_pid_start_ticks,
    pid: state.pid,
    pid_start_ticks: state.pid_start_ticks,
    state: state.state,
    address: state.address,
    ui_url: state.ui_url,
    restarts: state.restarts,
    started_at: state.started_at,
    last_exit: state.last_exit === null ? null : { code: state.last_exit.code, signal: state.last_exit.signal, at: state.last_exit.at },
  };
  try {
    writeFileSync(temporary, `${JSON.stringify(document)}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(temporary, path);
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {
      // never created, or already renamed
    }
    throw error;
  }
}
