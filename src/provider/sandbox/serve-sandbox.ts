import { closeSync, openSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAbsolute } from 'node:path';
import { pino } from 'pino';
import { readJsonDocument } from '../../config/read-json-document.js';
import { isLoopbackHost } from '../../config/schema-parts.js';
import { toFieldIssues } from '../../config/zod-issues.js';
import { errorCode, UsageError, UserError } from '../../errors.js';
import { limitConnections } from '../../http/connection-limits.js';
import { restrictProcessUmask, tightenOpenFile } from '../../storage/private-state.js';
import { composeSandbox } from './compose-sandbox.js';
import { openJobJournal, type JobJournal } from './job-journal.js';
import { faultSetSchema, type Fault } from './sandbox-faults.js';
import { stopSignal } from '../../process/stop-signal.js';

export interface SandboxServeOptions {
  readonly host: string;
  readonly port: number;
  readonly completeAfterMs: number;
  /** Models that take no `seed`: a submission with one is refused as fal refuses an unknown input. */
  readonly seedlessModels?: readonly string[];
  /** Added to every protocol answer (a persistent `latency` fault); 0 for none. */
  readonly latencyMs: number;
  /** Absolute path of a JSON-lines file every received submit is appended to. */
  readonly submissionsLogPath?: string;
  /** Absolute path of a fault set (the `PUT /__sandbox/faults` body) active from the start. */
  readonly faultsFilePath?: string;
  /** Absolute path of the jobs file (job-journal.ts): jobs survive a restart. */
  readonly jobsFilePath?: string;
}

export interface SandboxStopped {
  readonly status: 'stopped';
  readonly signal: string;
  /** Submits received during this run (the in-memory log, lost with the process). */
  readonly submissions: number;
}

async function loadFaultsFile(path: string): Promise<Fault[]> {
  const parsed = faultSetSchema.safeParse(await readJsonDocument(path, 'faults file'), { reportInput: true });
  if (parsed.success) return parsed.data.faults;
  throw new UserError('faults_invalid', `The faults file ${path} is not a valid fault set.`, {
    nextStep: 'Fix each field listed (docs/sandbox-provider.md describes every fault), then start again.',
    issues: toFieldIssues(parsed.error.issues),
  });
}

function openSubmissionsLog(path: string): number {
  if (!isAbsolute(path)) {
    throw new UsageError('invalid_flag_value', '--submissions-log must be an absolute path.', { nextStep: 'Pass the full path, for example "$PWD/submissions.jsonl".' });
  }
  try {
    const fd = openSync(path, 'a', 0o600);
    // A log an older release created 0644 becomes private too.
    tightenOpenFile(fd);
    return fd;
  } catch (error) {
    throw new UserError('submissions_log_unwritable', `The submissions log ${path} cannot be opened for appending (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check that its directory exists and is writable.',
    });
  }
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) => {
      reject(
        new UserError('listen_failed', `The sandbox provider cannot listen on port ${port} (${errorCode(error) ?? 'error'}).`, {
          nextStep: errorCode(error) === 'EADDRINUSE' ? 'Pick another --port, or 0 for any free port.' : 'Check --host and --port.',
        }),
      );
    });
    server.listen({ host, port }, () => {
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * Runs the sandbox provider until SIGINT or SIGTERM: a loopback server speaking the fal queue
 * protocol with fault injection (docs/sandbox-provider.md). On a signal it stops accepting,
 * closes withheld answers (hangs, latency) and idle connections, and returns.
 */
export async function serveSandbox(options: SandboxServeOptions): Promise<SandboxStopped> {
  restrictProcessUmask();
  if (!isLoopbackHost(options.host)) {
    throw new UsageError('invalid_flag_value', '--host must be a loopback address (127.0.0.1, ::1 or localhost).', {
      nextStep: 'The sandbox provider serves local tests only; run it on loopback.',
    });
  }
  const initial: Fault[] = options.latencyMs > 0 ? [{ kind: 'latency', ms: options.latencyMs }] : [];
  if (options.faultsFilePath !== undefined) initial.push(...(await loadFaultsFile(options.faultsFilePath)));
  const logFd = options.submissionsLogPath === undefined ? undefined : openSubmissionsLog(options.submissionsLogPath);
  let journal: JobJournal | undefined;
  try {
    journal = options.jobsFilePath === undefined ? undefined : openJobJournal(options.jobsFilePath);
    const logger = pino({ base: { service: 'sandbox-provider' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
    const server = createServer();
    // Idle and half-sent connections are shed, as on every lexec server (connection-limits.ts).
    limitConnections(server, {
      log: (event) => {
        logger.warn(event);
      },
    });
    const port = await listen(server, options.host, options.port);
    const hostPart = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
    const { app, state } = composeSandbox({
      origin: `http://${hostPart}:${port}`,
      completeAfterMs: options.completeAfterMs,
      ...(options.seedlessModels === undefined ? {} : { seedlessModels: options.seedlessModels }),
      initialFaults: initial,
      ...(logFd === undefined ? {} : { recordSubmission: (line: string) => void writeSync(logFd, line) }),
      ...(journal === undefined ? {} : { jobStore: journal }),
      logger,
    });
    server.on('request', app.handle);
    // Listened for before the start line (stop-signal.ts).
    const stopping = stopSignal();
    logger.info({
      event: 'sandbox_started',
      host: options.host,
      port,
      origin: `http://${hostPart}:${port}`,
      complete_after_ms: options.completeAfterMs,
      seedless_models: options.seedlessModels ?? [],
      initial_faults: initial.map((fault) => fault.kind),
      submissions_log: options.submissionsLogPath ?? null,
      jobs_file: options.jobsFilePath ?? null,
      jobs_restored: journal?.restored.length ?? 0,
    });
    const signal = await stopping;
    logger.info({ event: 'sandbox_stopping', signal });
    const closed = new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
    server.closeIdleConnections();
    // A connection still sending a request or finishing an answer gets a moment, then is cut.
    const force = setTimeout(() => {
      server.closeAllConnections();
    }, 1_000);
    await app.close();
    await closed;
    clearTimeout(force);
    logger.info({ event: 'sandbox_stopped', signal, submissions: state.submissions().length });
    return { status: 'stopped', signal, submissions: state.submissions().length };
  } finally {
    journal?.close();
    if (logFd !== undefined) closeSync(logFd);
  }
}
