import { tmpdir } from 'node:os';
import type { z } from 'zod';
import type { faultSchema, FaultView } from '../../src/provider/sandbox/sandbox-faults.js';
import type { SubmissionRecord } from '../../src/provider/sandbox/sandbox-state.js';
import { spawnServerProcess } from './server-process.js';

/*
 * A real `lexec provider sandbox serve` child process, plus helpers for its control API and its
 * fal queue protocol. Later tests (the executor's provider adapter, the launcher) reuse these;
 * `sandboxControl` reaches the control API of a sandbox started by someone else (`stack start`).
 */

/** A fault as tests write it (defaults may be left out). */
export type SandboxFault = z.input<typeof faultSchema>;
export type { FaultView, SubmissionRecord };

export interface SandboxOptions {
  /** Flags as typed, e.g. `['--complete-after-ms', '500']`. `--port 0` is the default. */
  readonly args?: readonly string[];
  readonly startTimeoutMs?: number;
}

/** The control API of a running sandbox (`/__sandbox/…`), whoever started it. */
export interface SandboxControl {
  /** The sandbox's origin, e.g. `http://127.0.0.1:41234`: the executor's `providers.base_url`. */
  readonly url: string;
  /** Replaces every fault (`PUT /__sandbox/faults`); returns the faults now active. */
  setFaults(faults: readonly SandboxFault[]): Promise<FaultView[]>;
  /** Removes every fault, including those set at start (`DELETE /__sandbox/faults`). */
  clearFaults(): Promise<void>;
  faults(): Promise<FaultView[]>;
  /** Every submit received since this process started (`GET /__sandbox/submissions`). */
  submissions(): Promise<SubmissionRecord[]>;
}

export interface SandboxProcess extends SandboxControl {
  readonly port: number;
  /** stderr so far, as lines. */
  /** stdout so far, as lines (the human result once it stops). */
  readonly stdoutLines: () => string[];
  readonly stderrLines: () => string[];
  /** Parsed JSON log lines so far. */
  readonly events: () => Record<string, unknown>[];
  /** Sends `signal` (SIGKILL after 5 s) and waits for the exit code. Idempotent. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

async function control<T>(url: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`sandbox control ${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** Starts the sandbox and waits for its `sandbox_started` line (which carries the port). */
export async function spawnSandbox(options: SandboxOptions = {}): Promise<SandboxProcess> {
  const args = options.args ?? [];
  const server = await spawnServerProcess(['provider', 'sandbox', 'serve', ...(args.includes('--port') ? [] : ['--port', '0']), ...args], {
    startedEvent: 'sandbox_started',
    env: { PATH: process.env.PATH ?? '', HOME: tmpdir() },
    startTimeoutMs: options.startTimeoutMs,
  });
  return {
    ...sandboxControl(String(server.started.origin)),
    port: Number(server.started.port),
    stderrLines: server.stderrLines,
    stdoutLines: server.stdoutLines,
    events: server.events,
    stop: server.stop,
  };
}

/** The control API of the sandbox at `url` (e.g. the one a `stack start` supervises). */
export function sandboxControl(url: string): SandboxControl {
  return {
    url,
    async setFaults(faults) {
      return (await control<{ faults: FaultView[] }>(url, 'PUT', '/__sandbox/faults', { faults })).faults;
    },
    async clearFaults() {
      await control(url, 'DELETE', '/__sandbox/faults');
    },
    async faults() {
      return (await control<{ faults: FaultView[] }>(url, 'GET', '/__sandbox/faults')).faults;
    },
    async submissions() {
      return (await control<{ submissions: SubmissionRecord[] }>(url, 'GET', '/__sandbox/submissions')).submissions;
    },
  };
}

/** The default model of the sandbox tests. */
export const SANDBOX_MODEL = 'fal-ai/flux/schnell';
/** Its app id: fal's status, result and cancel URLs name the app, without the model's sub-path. */
export const SANDBOX_APP = 'fal-ai/flux';

export interface FalAnswer<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
  readonly text: string;
}

async function answerOf<T>(response: Response): Promise<FalAnswer<T>> {
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: callers look at `text`.
  }
  return { status: response.status, headers: response.headers, body: body as T, text };
}

export interface QueueSubmitted {
  readonly status: 'IN_QUEUE';
  readonly request_id: string;
  readonly queue_position: number;
  readonly status_url: string;
  readonly response_url: string;
  readonly cancel_url: string;
}

/** `POST {url}/{model}` with `Authorization: Key <key>` (null: no header) and a JSON body. */
export async function falSubmit(
  url: string,
  body: unknown,
  options: { model?: string; key?: string | null; signal?: AbortSignal } = {},
): Promise<FalAnswer<QueueSubmitted>> {
  const key = options.key === undefined ? 'sandbox-test-key' : options.key;
  const response = await fetch(`${url}/${options.model ?? SANDBOX_MODEL}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Key ${key}` }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: options.signal,
  });
  return answerOf<QueueSubmitted>(response);
}

/** `GET` or `PUT` of a queue URL (status, result, cancel) with the key. */
export async function falCall<T = Record<string, unknown>>(target: string, options: { method?: string; key?: string | null } = {}): Promise<FalAnswer<T>> {
  const key = options.key === undefined ? 'sandbox-test-key' : options.key;
  const response = await fetch(target, { method: options.method ?? 'GET', headers: key === null ? {} : { authorization: `Key ${key}` } });
  return answerOf<T>(response);
}

/** Polls `statusUrl` until COMPLETED (or the timeout); returns every status seen, in order. */
export async function pollUntilCompleted(statusUrl: string, timeoutMs = 30_000, intervalMs = 10): Promise<FalAnswer[]> {
  const seen: FalAnswer[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await falCall(statusUrl);
    seen.push(answer);
    if (answer.body.status === 'COMPLETED') return seen;
    if (Date.now() > deadline) throw new Error(`request not COMPLETED within ${timeoutMs} ms; last: ${answer.text}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
