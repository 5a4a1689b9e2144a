import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ProfilePaths } from '../home/stack-home.js';

/*
 * The workflow engine a generation's executor runs on, as the operator needs to see it (`stack
 * start`, `stack status`, the console): its mode, where it answers and its web UI. Read from the
 * generation's executor.json by hand — no zod, no generation store — because `stack status` must
 * start fast; anything damaged reads as nothing. Addresses only: an engine setting holds no secret.
 */

export type EngineMode = 'embedded' | 'managed_local' | 'external';

export interface GenerationEngine {
  readonly mode: EngineMode;
  /** `grpc://host:port` (or `grpcs://`) of the Temporal frontend; null for the embedded engine. */
  readonly address: string | null;
  /** The Temporal web UI: the one a managed_local executor runs, or an external profile's `ui_url`; null when none. */
  readonly ui_url: string | null;
}

const MODES = new Set<string>(['embedded', 'managed_local', 'external']);
const isPort = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0 && (value as number) < 65_536;
/** A URL of one of `schemes`, printable, without credentials; anything else is not shown. */
function shownUrl(value: unknown, schemes: readonly string[]): string | null {
  if (typeof value !== 'string' || value.length > 512 || /[\s\p{Cc}]/u.test(value)) return null;
  try {
    const url = new URL(value);
    return schemes.includes(url.protocol) && url.username === '' && url.password === '' ? value : null;
  } catch {
    return null;
  }
}

/** The engine of generation `id`, or null when its executor.json is missing or damaged. */
export async function generationEngine(paths: ProfilePaths, id: string): Promise<GenerationEngine | null> {
  let engine: Record<string, unknown>;
  try {
    const document = JSON.parse(await readFile(join(paths.generationsDir, id, 'executor.json'), 'utf8')) as { workflow_engine?: unknown };
    if (typeof document.workflow_engine !== 'object' || document.workflow_engine === null) return null;
    engine = document.workflow_engine as Record<string, unknown>;
  } catch {
    return null;
  }
  const { mode } = engine;
  if (typeof mode !== 'string' || !MODES.has(mode)) return null;
  if (mode === 'embedded') return { mode, address: null, ui_url: null };
  if (mode === 'managed_local') {
    const { port, ui_port: uiPort } = engine;
    return { mode, address: isPort(port) ? `grpc://127.0.0.1:${port}` : null, ui_url: isPort(uiPort) ? `http://127.0.0.1:${uiPort}` : null };
  }
  return { mode: 'external', address: shownUrl(engine.address, ['grpc:', 'grpcs:']), ui_url: shownUrl(engine.ui_url, ['http:', 'https:']) };
}
