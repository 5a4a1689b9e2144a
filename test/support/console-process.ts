import { spawn } from 'node:child_process';
import { expect } from 'vitest';
import { request } from 'node:http';
import { BIN, COMPILE_CACHE_ENV } from './cli.js';
import type { RunningStack } from './running-stack.js';

/*
 * `lexec stack console --port 0 --json` as a real child process against a running stack, and a
 * raw HTTP client for it (node:http, so Host, Origin, Cookie and the session header are exactly
 * what a test sets).
 */

export interface ConsoleProcess {
  readonly origin: string;
  /** The one-time login link printed at start. */
  readonly loginUrl: string;
  /** Everything the process wrote so far. */
  output(): { stdout: string; stderr: string };
  /** Every login link it printed so far (at start, then one per SIGUSR1). */
  loginUrls(): string[];
  /** SIGUSR1: resolves with the new login link it prints. */
  newLogin(): Promise<string>;
  /** SIGTERM (or `signal`); resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startConsoleProcess(stack: RunningStack, args: readonly string[] = []): Promise<ConsoleProcess> {
  const child = spawn(process.execPath, [BIN, 'stack', 'console', '--port', '0', '--json', ...args], {
    env: { ...COMPILE_CACHE_ENV, PATH: process.env.PATH ?? '', HOME: stack.home, ...stack.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => { resolve(code); }));
  const lines = async (count: number): Promise<string[]> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const complete = stdout.split('\n').slice(0, -1);
      if (complete.length >= count) return complete;
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`lexec stack console printed no address:\n${stdout}${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const [first = ''] = await lines(1);
  const started = JSON.parse(first) as { ok: boolean; result: { address: string; login_url: string } };
  return {
    origin: started.result.address,
    loginUrl: started.result.login_url,
    output: () => ({ stdout, stderr }),
    loginUrls: () =>
      stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as { result: { login_url: string } }).result.login_url),
    async newLogin() {
      const before = stdout.split('\n').length - 1;
      child.kill('SIGUSR1');
      const all = await lines(before + 1);
      return (JSON.parse(all[before] ?? '') as { result: { login_url: string } }).result.login_url;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One request to the console with exactly these headers (Host defaults to the console's own). */
export function rawRequest(origin: string, method: string, path: string, options: { headers?: Record<string, string>; body?: unknown; rawBody?: string } = {}): Promise<RawResponse> {
  const url = new URL(path, origin);
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: `${url.pathname}${url.search}`,
        headers: { host: url.host, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
        setHost: false,
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text });
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** The `error` of a console answer: its code, reason code and field paths. */
export const errorOf = (response: RawResponse) => (JSON.parse(response.body) as { error: { code: string; reason_code?: string; fields?: string[] } }).error;

/** Signs in with a login link as `name` (the named approver the session decides as); answers the session secret. */
export async function signIn(origin: string, loginUrl: string, name = 'Test Operator'): Promise<string> {
  const token = new URL(loginUrl).hash.slice(1);
  const login = await rawRequest(origin, 'POST', '/api/login', { headers: { origin }, body: { token, name } });
  if (login.status !== 200) throw new Error(`login failed: ${String(login.status)} ${login.body}`);
  return (JSON.parse(login.body) as { session: string }).session;
}

/**
 * Stops the console (it must exit 0), then the stack; then neither `texts` (what the tests
 * received) nor the console's own output holds one of the stack's capabilities or anything shaped
 * like one. Answers that output, for a test's further checks.
 */
export async function stopWithoutSecrets(stack: RunningStack, consoleProcess: ConsoleProcess, texts: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  const secrets = await Promise.all((['admin', 'agent', 'approver', 'caller', 'reconciliation'] as const).map((role) => stack.capability(role)));
  const code = await consoleProcess.stop();
  const output = consoleProcess.output();
  await stack.stop();
  expect(code).toBe(0);
  for (const text of [...texts, output.stdout, output.stderr]) {
    expect(text).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{43}/);
    for (const secret of secrets) expect(text).not.toContain(secret);
  }
  return output;
}
