import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { readManagedTemporalState } from '../../src/executor/engine/temporal/managed-temporal-state.js';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { terminateProcess } from '../../src/process/process-identity.js';
import { BIN, COMPILE_CACHE_ENV, makeTempDir, removeDir, runLexec } from './cli.js';
import { sandboxConfig, type JsonObject } from './config-fixtures.js';
import { executionRequest } from './executor.js';
import { freePorts } from './free-ports.js';
import { collectJsonLines } from './json-lines.js';
import { call, mintCredential } from './ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from './ledger-process.js';
import { spawnSandbox, type SandboxFault, type SandboxProcess } from './sandbox-process.js';
import { startDevServer, temporalCli, type DevServer } from './temporal.js';

/*
 * Durable execution between real processes: a real ledger, a real sandbox provider and a real
 * `lexec executor serve` on the engine a test chooses (embedded, or Temporal: a dev server the
 * test started, as an external engine, or one the executor starts itself, managed_local).
 * Recovery is proven by SIGKILLing the executor at the point in question and starting it again on
 * the same state. `durableHarness()` registers the per-test directory and clean-ups.
 */

/** The workflow engine a stack's executor runs on. */
export type EngineChoice =
  | { readonly mode: 'embedded' }
  /** `taskQueue`: default a random one per stack; null leaves it unset (the executor derives its installation's own). */
  | { readonly mode: 'external'; readonly url: string; readonly namespace?: string; readonly taskQueue?: string | null }
  | { readonly mode: 'managed_local'; readonly cli: string; readonly version: string; readonly port: number; readonly uiPort: number };

/** The `workflow_engine` section for a choice; an external engine gets a task queue of its own per stack. */
export function engineSection(engine: EngineChoice, dir: string): JsonObject {
  switch (engine.mode) {
    case 'embedded':
      return { mode: 'embedded' };
    case 'external':
      return {
        mode: 'external',
        address: engine.url,
        namespace: engine.namespace ?? 'default',
        ...(engine.taskQueue === null ? {} : { task_queue: engine.taskQueue ?? `lexec-test-${randomUUID().slice(0, 8)}` }),
        ui_url: 'http://127.0.0.1:8233',
      };
    case 'managed_local':
      return {
        mode: 'managed_local',
        temporal_cli: { path: engine.cli, version: engine.version },
        data_dir: join(dir, 'executor', 'temporal'),
        log_dir: join(dir, 'executor', 'logs'),
        port: engine.port,
        ui_port: engine.uiPort,
      };
  }
}

export interface Execution {
  execution_id: string;
  state: string;
  state_reason: string | null;
  provider_attempts: { checkpointed: boolean; state: string; exact_amount: string | null; scale: number | null; currency: string | null }[];
  receipt: { receipt_id: string; exact_amount: string; scale: string; receipt_shape: string; ledger_settlement_id: string | null } | null;
  artifact_count: number;
  recommended_action: { code: string };
}

export function spawnExecutor(configPath: string, dir: string, cleanups: (() => Promise<unknown>)[], options: { bin?: string; env?: Readonly<Record<string, string>> } = {}) {
  const child = spawn(process.execPath, [options.bin ?? BIN, 'executor', 'serve', '--config', configPath], {
    env: { ...COMPILE_CACHE_ENV, ...options.env, PATH: process.env.PATH ?? '', HOME: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const { lines, events } = collectJsonLines(child.stderr);
  let exited = false;
  const exit = new Promise<number>((resolve) => child.once('exit', (code) => {
    exited = true;
    resolve(code ?? 128);
  }));
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exit;
  };
  cleanups.push(() => kill());
  const url = () => {
    const started = events().find((event) => event.event === 'executor_started');
    return started === undefined ? '' : `http://127.0.0.1:${String(started.port)}`;
  };
  return { url, lines, events, kill, exited: () => exited };
}

/** The executor process exited while a test waited for it. */
class ExecutorExited extends Error {
  constructor() {
    super('the executor exited');
  }
}

/** Bound of an executor start until ready (or listening). */
const EXECUTOR_READY_TIMEOUT_MS = 120_000;

/**
 * Polls `probe` until it returns a value; a probe error counts as "not yet" unless `fatal` says
 * otherwise. The default deadline is a ceiling for a loaded 2-core machine, not an estimate.
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000, fatal: (error: unknown) => boolean = () => false): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch((error: unknown) => {
      if (fatal(error)) throw error;
      return undefined;
    });
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface Stack {
  ledger: LedgerProcess;
  sandbox: SandboxProcess;
  admin: string;
  reconciliation: string;
  caller: string;
  /** The executor reconciliation route's capability. */
  resolver: string;
  configPath: string;
  executor: ReturnType<typeof spawnExecutor>;
  /** Starts the executor again on the same state (after a kill). */
  restart(): Promise<void>;
  /** Replaces the ledger by a v4.5 one on the same database and port (an installation upgraded). */
  upgradeLedger(): Promise<void>;
  approvedToken(): Promise<string>;
  submit(tokenId: string, imageCount?: number): Promise<string>;
  execution(executionId: string): Promise<Execution>;
  waitFor(executionId: string, what: string, test: (execution: Execution) => boolean, timeoutMs?: number): Promise<Execution>;
  authorization(tokenId: string): Promise<{ status: string; settlement: { amount_units: string } | null }>;
}

export interface StackOptions {
    contractLevel?: 'v4.5' | 'v4.4';
    sandboxArgs?: string[];
    deadlineSeconds?: number;
    /** The provider request timeout (default 30 s). */
    requestTimeoutSeconds?: number;
    providersDisabled?: boolean;
    /** Put a relay between executor and ledger; returns the URL the executor should use. */
    relay?: (ledgerUrl: string) => Promise<string>;
    engine?: EngineChoice;
    /** false: return once the executor listens, ready or not. */
    waitUntilReady?: boolean;
    /** Another lexec build's bin/run.js for the executor (default: this checkout's). */
    executorBin?: string;
    /** More environment for the executor. */
    executorEnv?: Readonly<Record<string, string>>;
    /** Edits the executor configuration before it is written (targets, for example). */
    configure?: (config: JsonObject) => void;
}

async function stack(dir: string, cleanups: (() => Promise<unknown>)[], options: StackOptions = {}): Promise<Stack> {
  // A port of this worker's own, not 0: upgradeLedger() starts a ledger again on the same port,
  // and a port the kernel gave out could be given to another process in between (free-ports.ts).
  const [ledgerPort = 0] = await freePorts(1);
  const ledger = await spawnLedger(join(dir), ledgerConfig(join(dir, 'ledger'), { contract_level: options.contractLevel ?? 'v4.5', http: { host: '127.0.0.1', port: ledgerPort } }));
  cleanups.push(() => ledger.stop('SIGKILL'));
  const sandbox = await spawnSandbox({ args: options.sandboxArgs ?? ['--complete-after-ms', '200'] });
  cleanups.push(() => sandbox.stop('SIGKILL'));
  const admin = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();

  const config = sandboxConfig();
  config.http = { host: '127.0.0.1', port: 0 };
  (config.ledger as JsonObject).endpoint = options.relay === undefined ? ledger.url : await options.relay(ledger.url);
  config.credentials = { mode: 'managed', state_dir: join(dir, 'executor', 'credentials') };
  config.storage = {
    database_path: join(dir, 'executor', 'executor.db'),
    artifact_root: join(dir, 'executor', 'artifacts'),
    catalog_path: join(dir, 'executor', 'provider-catalog.json'),
  };
  config.providers = options.providersDisabled
    ? { mode: 'disabled' }
    : { mode: 'sandbox', base_url: sandbox.url, operation_deadline_seconds: options.deadlineSeconds ?? 600, ...(options.requestTimeoutSeconds === undefined ? {} : { request_timeout_seconds: options.requestTimeoutSeconds }) };
  config.workflow_engine = engineSection(options.engine ?? { mode: 'embedded' }, dir);
  config.development_allowance = true;
  options.configure?.(config);
  const configPath = join(dir, 'executor.json');
  await writeFile(configPath, JSON.stringify(config, null, 2));
  const bootstrap = await runLexec(['executor', 'credentials', 'bootstrap-managed', '--config', configPath, '--ledger-admin-capability', ledger.adminCapabilityPath], { home: dir });
  expect(bootstrap.exitCode, bootstrap.stderr).toBe(0);
  const managed = managedCredentialPaths(join(dir, 'executor', 'credentials'));
  const caller = (await readFile(managed.caller, 'utf8')).trim();
  const resolver = (await readFile(managed.reconciliation, 'utf8')).trim();

  const created = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: admin, body: { name: 'bot' } });
  const agent = await mintCredential({ url: ledger.url, adminToken: admin }, 'agent', created.body.agent.agent_id);
  const reconciliation = await mintCredential({ url: ledger.url, adminToken: admin }, 'reconciliation');

  // A start takes 1-2 s idle and can take tens of seconds on a loaded 2-core machine (a managed
  // Temporal server starts first): a generous ceiling, and no waiting on an executor that exited.
  const ready = async (executor: ReturnType<typeof spawnExecutor>) => {
    const what = options.waitUntilReady === false ? 'executor listening' : 'executor ready';
    try {
      await until(
        what,
        async () => {
          if (executor.exited()) throw new ExecutorExited();
          if (executor.url() === '') return undefined;
          return options.waitUntilReady === false || (await fetch(`${executor.url()}/readyz`)).status === 200 ? true : undefined;
        },
        EXECUTOR_READY_TIMEOUT_MS,
        (error) => error instanceof ExecutorExited,
      );
    } catch (error) {
      throw new Error(`${String(error)}; executor log tail:\n${executor.lines.slice(-8).join('\n')}`, { cause: error });
    }
  };

  const executorProcess = { bin: options.executorBin, env: options.executorEnv };
  const engine = options.engine ?? { mode: 'embedded' };
  if (engine.mode === 'managed_local') {
    // A SIGKILLed executor leaves its Temporal child behind: the test ends it, like the next start would.
    cleanups.push(async () => {
      const state = await readManagedTemporalState(join(dir, 'executor', 'temporal'));
      if (state?.pid != null) await terminateProcess(state.pid, state.pid_start_ticks, 3_000);
    });
  }

  const result: Stack = {
    ledger,
    sandbox,
    admin,
    reconciliation,
    caller,
    resolver,
    configPath,
    executor: spawnExecutor(configPath, dir, cleanups, executorProcess),
    async upgradeLedger() {
      await result.ledger.stop('SIGTERM');
      const port = Number(new URL(result.ledger.url).port);
      result.ledger = await spawnLedger(dir, ledgerConfig(join(dir, 'ledger'), { contract_level: 'v4.5', http: { host: '127.0.0.1', port } }), 'ledger-upgraded.json');
      const upgraded = result.ledger;
      cleanups.push(() => upgraded.stop('SIGKILL'));
    },
    async restart() {
      result.executor = spawnExecutor(configPath, dir, cleanups, executorProcess);
      await ready(result.executor);
    },
    async approvedToken() {
      const answer = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
        token: agent,
        body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
      });
      return answer.body.authorization.token_id;
    },
    async submit(tokenId, imageCount = 2) {
      const answer = await call<{ execution: { execution_id: string } }>(result.executor.url(), 'POST', '/v2/executions', {
        token: caller,
        body: executionRequest(tokenId, { input: { prompt: 'a lighthouse at dusk', image_count: imageCount, image_size: 'square_hd' } }),
      });
      expect(answer.status).toBe(201);
      return answer.body.execution.execution_id;
    },
    async execution(executionId) {
      return (await call<{ execution: Execution }>(result.executor.url(), 'GET', `/v1/executions/${executionId}`, { token: caller })).body.execution;
    },
    async waitFor(executionId, what, test, timeoutMs) {
      let last: Execution | undefined;
      try {
        return await until(what, async () => {
          last = await result.execution(executionId);
          return test(last) ? last : undefined;
        }, timeoutMs);
      } catch (error) {
        const tail = result.executor.lines.filter((line) => !line.includes('http_request') && !line.includes('dependency_probe')).slice(-8).join('\n');
        throw new Error(`${String(error)}; last state ${JSON.stringify(last)}; executor log tail:\n${tail}`, { cause: error });
      }
    },
    async authorization(tokenId) {
      return (await call<{ authorization: { status: string; settlement: { amount_units: string } | null } }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: admin })).body
        .authorization;
    },
  };
  await ready(result.executor);
  return result;
}

export async function openRecords(s: Stack) {
  return (await call<{ records: { token_id: string; reason: string; evidence: Record<string, unknown> }[] }>(s.ledger.url, 'GET', '/reconciliation-records?status=open', {
    token: s.reconciliation,
  })).body.records;
}

export const setFaults = (s: Stack, faults: SandboxFault[]) => s.sandbox.setFaults(faults);

/**
 * Admits one execution whose submission reaches the sandbox but is never answered, SIGKILLs the
 * executor there (before any checkpoint) and starts it again.
 */
export async function killDuringSubmission(s: Stack): Promise<{ tokenId: string; executionId: string }> {
  await setFaults(s, [{ kind: 'hang_submit', times: 1 }]);
  const tokenId = await s.approvedToken();
  const executionId = await s.submit(tokenId);
  await until('submission received', async () => ((await s.sandbox.submissions()).length === 1 ? true : undefined));
  await s.executor.kill('SIGKILL');
  await s.sandbox.clearFaults();
  await s.restart();
  return { tokenId, executionId };
}

/**
 * A loopback HTTP relay to the ledger that can hold (never answer) requests whose path matches,
 * to stop the executor at an exact point of a flow.
 */
async function ledgerRelay(target: string, cleanups: (() => Promise<unknown>)[]) {
  let hold: RegExp | null = null;
  let loseAnswers: { pattern: RegExp; left: number } | null = null;
  let downUntil = 0;
  let lost = 0;
  let refused = 0;
  const held: http.ServerResponse[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (Date.now() < downUntil) {
        // The ledger is down: the connection is cut before anything reaches it.
        refused += 1;
        response.socket?.destroy();
        return;
      }
      if (hold?.test(request.url ?? '')) {
        held.push(response);
        return;
      }
      const lose = loseAnswers !== null && loseAnswers.left > 0 && loseAnswers.pattern.test(request.url ?? '');
      if (lose && loseAnswers !== null) loseAnswers.left -= 1;
      const forward = http.request(`${target}${request.url ?? ''}`, { method: request.method, headers: request.headers }, (answer) => {
        if (lose) {
          // The ledger did the work; its answer never reaches the executor.
          answer.resume();
          answer.on('end', () => {
            lost += 1;
            response.socket?.destroy();
          });
          return;
        }
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      forward.on('error', () => response.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const response of held) response.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${String(port)}`,
    hold(pattern: RegExp | null) {
      hold = pattern;
    },
    heldCount: () => held.length,
    /** Forwards the next `times` requests matching `pattern` but cuts the connection instead of answering. */
    loseAnswers(pattern: RegExp, times = 1) {
      loseAnswers = { pattern, left: times };
    },
    lostCount: () => lost,
    /** Cuts every connection for `ms` (the ledger down), then forwards again. */
    down(ms: number) {
      downUntil = Date.now() + ms;
    },
    refusedCount: () => refused,
  };
}


/**
 * Per-test directory and clean-ups (reverse order), and the stack and relay bound to them;
 * `scope: 'file'` keeps one directory for the whole file (a stack built once in `beforeAll`).
 */
export function durableHarness(prefix = 'lexec-durable-', scope: 'test' | 'file' = 'test') {
  const state = { dir: '', cleanups: [] as (() => Promise<unknown>)[] };
  const [setUp, tearDown] = scope === 'test' ? [beforeEach, afterEach] : [beforeAll, afterAll];
  setUp(async () => {
    state.dir = await makeTempDir(prefix);
  });
  tearDown(async () => {
    for (const cleanup of state.cleanups.splice(0).reverse()) await cleanup();
    await removeDir(state.dir);
  });
  return {
    dir: () => state.dir,
    cleanups: state.cleanups,
    stack: (options: StackOptions = {}) => stack(state.dir, state.cleanups, options),
    ledgerRelay: (target: string) => ledgerRelay(target, state.cleanups),
  };
}

/**
 * The engines a file's durable tests run on: embedded, and — where the Temporal CLI is available —
 * a real Temporal server (external mode: one dev server for the file, started and stopped by the
 * hooks this registers; a task queue of its own per stack).
 */
export function durableEngines(only?: 'embedded' | 'Temporal'): [string, () => EngineChoice][] {
  const cli = only === 'embedded' ? null : temporalCli();
  let temporal: DevServer | undefined;
  beforeAll(async () => {
    if (cli !== null) temporal = await startDevServer(cli);
    // Seconds idle; sized for a loaded 2-core machine (startDevServer's own bound is 90 s a try).
  }, 300_000);
  afterAll(async () => {
    await temporal?.stop();
  });
  return [
    ...(only === 'Temporal' ? [] : ([['embedded', () => ({ mode: 'embedded' })]] as [string, () => EngineChoice][])),
    ...(cli === null ? [] : ([['Temporal', () => ({ mode: 'external', url: temporal?.url ?? '' })]] as [string, () => EngineChoice][])),
  ];
}
