import { connect, type Socket } from 'node:net';
import { errorCode } from '../errors.js';

/*
 * Readiness probes of a managed stack's components on 127.0.0.1: the ledger answers
 * GET /health, the executor GET /readyz, the sandbox provider is probed by a TCP connect (its
 * HTTP routes log every request; a bare connect logs nothing). One HTTP/1.1 GET is written by
 * hand on a socket instead of using fetch or node:http: `stack status` runs these probes and must
 * start nearly as fast as a bare oclif command, and those modules cost tens of milliseconds
 * to load. Both routes answer without credentials and their successes are not logged.
 */

/** A directory a server names (`disk_full`): absolute, no control characters. Shown only if it is one. */
export const SAFE_ABSOLUTE_PATH = /^\/\P{Cc}{0,1023}$/u;

export type ProbeResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

export type ProbedComponent = 'ledger' | 'executor' | 'sandbox';

/** What each component's readiness is, for messages: `GET /readyz → 200`. */
export const PROBE_DESCRIPTIONS: Readonly<Record<ProbedComponent, string>> = {
  ledger: 'GET /health → 200',
  executor: 'GET /readyz → 200',
  sandbox: 'TCP connect',
};

function describeSocketError(error: unknown): string {
  const code = errorCode(error) ?? 'error';
  if (code === 'ECONNREFUSED') return 'connection refused (nothing listens on the port yet)';
  if (code === 'ECONNRESET') return 'connection reset';
  return `socket error ${code}`;
}

/**
 * Where a component is probed when not on plain 127.0.0.1 (a ledger with `[ledger.http]`,
 * docs/deployment.md): its host and, for https, the CA PEM its certificate is verified against
 * (verified, never skipped: a probe that trusted anything could call a stranger's server ready).
 */
export interface ProbeTarget {
  readonly host: string;
  /** The CA certificate (PEM) of an https endpoint; null for plain http. */
  readonly ca: string | null;
}

/** The probe target of an endpoint URL (`https://10.0.0.5:7400`) with its CA PEM (https only). */
export function probeTargetOf(endpoint: string, ca: string | null): ProbeTarget {
  const url = new URL(endpoint);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, ca: url.protocol === 'https:' ? (ca ?? '') : null };
}

/** A plain TCP socket to 127.0.0.1 (or `target.host`), or a TLS one verified against `target.ca`. */
async function openSocket(port: number, target: ProbeTarget | undefined): Promise<Socket> {
  if (target?.ca === null || target === undefined) return connect({ host: target?.host ?? '127.0.0.1', port });
  // Loaded only here: `stack status` of a plain-loopback stack never pays for node:tls.
  const tls = await import('node:tls');
  const { isIP } = await import('node:net');
  return tls.connect({ host: target.host, port, ca: target.ca, rejectUnauthorized: true, ...(isIP(target.host) === 0 ? { servername: target.host } : {}) });
}

/**
 * One GET of `path` on 127.0.0.1:`port` (or `target`); ok for a 200. A non-200 answer reports its status and,
 * for a small JSON body, its `reason` or `status` field (the executor's /readyz says why it is
 * not ready) and the configuration `field` a reason points at; nothing else of the body is repeated.
 */
export async function probeHttp(port: number, path: string, timeoutMs: number, target?: ProbeTarget): Promise<ProbeResult> {
  const socket = await openSocket(port, target);
  const secure = target !== undefined && target.ca !== null;
  const hostHeader = target === undefined ? '127.0.0.1' : target.host.includes(':') ? `[${target.host}]` : target.host;
  return new Promise((resolve) => {
    let response = '';
    let settled = false;
    const finish = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      finish({ ok: false, error: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
    socket.setEncoding('latin1');
    socket.on(secure ? 'secureConnect' : 'connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostHeader}:${port}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: string) => {
      response += chunk;
      if (response.length > 16_384) finish(interpret(response));
    });
    socket.on('end', () => {
      finish(interpret(response));
    });
    socket.on('error', (error) => {
      finish({ ok: false, error: describeSocketError(error) });
    });
  });
}

function interpret(response: string): ProbeResult {
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(response)?.[1];
  if (status === undefined) return { ok: false, error: 'not an HTTP answer' };
  if (status === '200') return { ok: true };
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  let reason = '';
  try {
    // From the first "{" to the last "}": also right when the small body came chunked.
    const document = JSON.parse(body.slice(body.indexOf('{'), body.lastIndexOf('}') + 1)) as Record<string, unknown>;
    const said = document.reason ?? document.status;
    if (typeof said === 'string' && /^[a-z0-9_]{1,64}$/.test(said)) reason = ` (${said})`;
    // A reason that points at a setting (task_queue_shared) names the field to fix.
    const field = document.field;
    if (reason !== '' && typeof field === 'string' && /^[a-z0-9_.]{1,64}$/.test(field)) reason = ` (${String(said)}: ${field})`;
    // A full disk names the directory (disk_full): an absolute path of printable characters.
    const path = document.path;
    if (reason !== '' && typeof path === 'string' && SAFE_ABSOLUTE_PATH.test(path)) reason = ` (${String(said)}: ${path})`;
  } catch {
    // not JSON (a chunked or foreign body): the status alone says enough
  }
  return { ok: false, error: `HTTP ${status}${reason}` };
}

/** Whether something accepts TCP connections on `host` (default 127.0.0.1) at `port`. */
export function probeTcp(port: number, timeoutMs: number, host = '127.0.0.1'): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ ok: false, error: `no connection within ${timeoutMs} ms` });
    }, timeoutMs);
    socket.on('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ok: true });
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      resolve({ ok: false, error: describeSocketError(error) });
    });
  });
}

/** The readiness probe of one component (on 127.0.0.1 unless `target` says where). */
export function probeComponent(component: ProbedComponent, port: number, timeoutMs: number, target?: ProbeTarget): Promise<ProbeResult> {
  if (component === 'ledger') return probeHttp(port, '/health', timeoutMs, target);
  if (component === 'executor') return probeHttp(port, '/readyz', timeoutMs);
  return probeTcp(port, timeoutMs);
}
