import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGrpcFaultProxy, type GrpcFaultProxy } from '../support/grpc-fault-proxy.js';
import { greeting, type GreetingActivities } from '../support/greeting-workflow.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';

/*
 * The fault proxy in front of a real Temporal dev server, driven by the real SDK: grpc-js (the
 * client) and tonic (the worker's Rust core). Unfaulted calls — unary, errors with binary
 * trailers, long polls, a whole workflow run — pass through unchanged; each fault gives the client
 * exactly the gRPC status the readiness rules must tell apart.
 */

const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;
const NOT_FOUND = 5;
const UNAVAILABLE = 14;
const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;

const cli = temporalCli();
let server: DevServer;
let bundle: WorkflowBundle;
let proxy: GrpcFaultProxy;
const closing: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  if (cli === null) return;
  // One SDK runtime per process (vitest gives this file its own fork); no signal handlers in a test.
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  [server, bundle] = await Promise.all([
    startDevServer(cli),
    bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('../support/greeting-workflow.ts', import.meta.url)), logger: new DefaultLogger('WARN') }),
  ]);
  // A bundle (webpack) and a server start: seconds idle, minutes on a loaded 2-core machine.
}, 300_000);

afterAll(async () => {
  // Unset when the server did not start (beforeAll reports why).
  await (server as DevServer | undefined)?.stop();
});

beforeEach(async () => {
  if (cli !== null) proxy = await startGrpcFaultProxy({ upstream: server.address });
});

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
  if (cli !== null) await proxy.close();
});

/** A grpc-js connection; `retries: false` drops the SDK's retry of UNAVAILABLE, to see the raw status. */
async function clientConnection(address: string, { retries = true } = {}): Promise<Connection> {
  const connection = await Connection.connect({ address, ...(retries ? {} : { interceptors: [] }) });
  closing.push(() => connection.close());
  return connection;
}

async function nativeConnection(address: string): Promise<NativeConnection> {
  const connection = await NativeConnection.connect({ address });
  closing.push(() => connection.close());
  return connection;
}

function describeTaskQueueRequest(taskQueue = 'q') {
  return { namespace: 'default', taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW };
}

function describeTaskQueue(connection: Connection, taskQueue = 'q') {
  return connection.workflowService.describeTaskQueue(describeTaskQueueRequest(taskQueue));
}

/** The gRPC status code a call ended with: 0 when it succeeded. */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 0;
  } catch (error) {
    if (isGrpcServiceError(error)) return error.code;
    throw error;
  }
}

async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function greetingWorker(connection: NativeConnection, taskQueue: string): Promise<Worker> {
  const activities: GreetingActivities = { greetingText: (name) => Promise.resolve(`hello, ${name}`) };
  return Worker.create({ connection, taskQueue, workflowBundle: bundle, activities });
}

describe.skipIf(cli === null)('grpc fault proxy: pass-through', () => {
  it('forwards a unary call, and an error with its status, message and binary trailer, unchanged', async () => {
    const direct = await clientConnection(server.address);
    const proxied = await clientConnection(proxy.address);

    const answer = await describeTaskQueue(proxied);
    expect(answer.pollers).toEqual([]);
    expect(proxy.calls('DescribeTaskQueue')).toBe(1);

    const missing = { namespace: `missing-${randomUUID()}` };
    const [viaServer, viaProxy] = await Promise.all([
      direct.workflowService.describeNamespace(missing).catch((error: unknown) => error),
      proxied.workflowService.describeNamespace(missing).catch((error: unknown) => error),
    ]);
    if (!isGrpcServiceError(viaServer) || !isGrpcServiceError(viaProxy)) throw new Error('expected gRPC errors');
    expect(viaProxy.code).toBe(NOT_FOUND);
    expect(viaProxy.details).toBe(viaServer.details);
    const details = viaProxy.metadata.get('grpc-status-details-bin');
    expect(details).toHaveLength(1);
    expect(details).toEqual(viaServer.metadata.get('grpc-status-details-bin'));
  });

  it('runs a workflow to completion with both the client (grpc-js) and the worker (tonic) going through the proxy', async () => {
    const taskQueue = `proxied-${randomUUID()}`;
    const client = new Client({ connection: await clientConnection(proxy.address) });
    const worker = await greetingWorker(await nativeConnection(proxy.address), taskQueue);

    const result = await worker.runUntil(client.workflow.execute(greeting, { taskQueue, workflowId: randomUUID(), args: ['proxy'] }));

    expect(result).toBe('hello, proxy');
    expect(proxy.calls('StartWorkflowExecution')).toBe(1);
    expect(proxy.calls('GetWorkflowExecutionHistory')).toBeGreaterThanOrEqual(1);
    for (const method of ['PollWorkflowTaskQueue', 'RespondWorkflowTaskCompleted', 'PollActivityTaskQueue', 'RespondActivityTaskCompleted']) {
      expect(proxy.calls(method), method).toBeGreaterThanOrEqual(1);
    }
  });
});

describe.skipIf(cli === null)('grpc fault proxy: faults', () => {
  it('a status fault answers CANCELLED for exactly `times` calls, which never reach the server, then passes calls through again', async () => {
    const connection = await clientConnection(proxy.address);
    proxy.setFault('DescribeTaskQueue', { kind: 'status', code: CANCELLED, times: 2 });

    const failed = await describeTaskQueue(connection).catch((error: unknown) => error);
    const codes = [isGrpcServiceError(failed) ? failed.code : 0, await statusOf(describeTaskQueue(connection)), await statusOf(describeTaskQueue(connection))];

    expect(codes).toEqual([CANCELLED, CANCELLED, 0]);
    expect(isGrpcServiceError(failed) && failed.details).toBe('fault injected by grpc-fault-proxy');
    // The SDK does not retry CANCELLED: one call, one arrival.
    expect(proxy.calls('DescribeTaskQueue')).toBe(3);
    // Other methods are untouched while the fault is set.
    proxy.setFault('DescribeTaskQueue', { kind: 'status', code: CANCELLED });
    expect(await statusOf(connection.workflowService.getSystemInfo({}))).toBe(0);
    proxy.clearFaults();
    expect(await statusOf(describeTaskQueue(connection))).toBe(0);
  });

  it('a hung call fails with DEADLINE_EXCEEDED at its 500 ms deadline, and its stream is released when the client cancels it', async () => {
    const connection = await clientConnection(proxy.address);
    proxy.setFault('DescribeTaskQueue', { kind: 'hang', times: 1 });

    const started = Date.now();
    const code = await statusOf(connection.withDeadline(Date.now() + 500, () => describeTaskQueue(connection)));
    const elapsed = Date.now() - started;

    expect(code).toBe(DEADLINE_EXCEEDED);
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(2_000);
    await until(() => proxy.openStreams() === 0);
    expect(await statusOf(describeTaskQueue(connection))).toBe(0);
  });

  it('the Rust client (tonic) gets a status fault as that status, but reports its own deadline over a hung call as CANCELLED, not DEADLINE_EXCEEDED', async () => {
    const connection = await nativeConnection(proxy.address);
    const request = describeTaskQueueRequest();
    proxy.setFault('DescribeTaskQueue', { kind: 'status', code: CANCELLED, times: 1 });
    expect(await statusOf(connection.workflowService.describeTaskQueue(request))).toBe(CANCELLED);
    expect(await statusOf(connection.workflowService.describeTaskQueue(request))).toBe(0);

    // tonic turns its request timeout into Status::cancelled("Timeout expired"): through the
    // native connection a hung engine looks like the CANCELLED answer the readiness rules set apart.
    proxy.setFault('DescribeTaskQueue', { kind: 'hang', times: 1 });
    const hung = await connection.withDeadline(Date.now() + 500, () => connection.workflowService.describeTaskQueue(request)).catch((error: unknown) => error);
    expect(isGrpcServiceError(hung) && { code: hung.code, message: hung.message }).toEqual({ code: CANCELLED, message: 'Timeout expired' });
    await until(() => proxy.openStreams() === 0);
  });

  it('a delay fault forwards the call after the delay', async () => {
    const connection = await clientConnection(proxy.address);
    proxy.setFault('DescribeTaskQueue', { kind: 'delay', ms: 300, times: 1 });

    const started = Date.now();
    await describeTaskQueue(connection);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('a stopped upstream answers UNAVAILABLE to calls in flight and to new calls; once resumed, a retrying client call begun while it was down succeeds', async () => {
    const raw = await clientConnection(proxy.address, { retries: false });
    const retrying = await clientConnection(proxy.address);
    // A long poll on an idle queue is in flight at the server when the upstream goes away (the server requires a deadline).
    const idle = { namespace: 'default', taskQueue: { name: `idle-${randomUUID()}`, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, identity: 'proxy-test' };
    const poll = statusOf(raw.withDeadline(Date.now() + 20_000, () => raw.workflowService.pollWorkflowTaskQueue(idle)));
    await until(() => proxy.calls('PollWorkflowTaskQueue') === 1);

    proxy.stopUpstream();
    expect(await poll).toBe(UNAVAILABLE);
    expect(await statusOf(describeTaskQueue(raw))).toBe(UNAVAILABLE);
    const later = describeTaskQueue(retrying);
    // The SDK retries UNAVAILABLE with backoff: its second attempt arrives while still down.
    await until(() => proxy.calls('DescribeTaskQueue') >= 3);
    proxy.resumeUpstream();

    await expect(later).resolves.toMatchObject({ pollers: [] });
    expect(await statusOf(describeTaskQueue(raw))).toBe(0);
  });

  it("a worker's long polls stay open and deliver work through the proxy while DescribeTaskQueue is faulted", async () => {
    const taskQueue = `long-poll-${randomUUID()}`;
    const direct = await clientConnection(server.address);
    const proxied = await clientConnection(proxy.address);
    const worker = await greetingWorker(await nativeConnection(proxy.address), taskQueue);
    const running = worker.run();
    try {
      await until(() => proxy.calls('PollWorkflowTaskQueue') >= 1 && proxy.calls('PollActivityTaskQueue') >= 1);
      const pollCount = () => proxy.calls('PollWorkflowTaskQueue') + proxy.calls('PollActivityTaskQueue');
      // The core opens its pollers over a few moments: wait until their number holds still.
      let polls = -1;
      while (polls !== pollCount()) {
        polls = pollCount();
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const open = proxy.openStreams();

      proxy.setFault('DescribeTaskQueue', { kind: 'status', code: CANCELLED });
      const codes = [];
      for (let i = 0; i < 3; i += 1) codes.push(await statusOf(describeTaskQueue(proxied, taskQueue)));
      proxy.setFault('DescribeTaskQueue', { kind: 'hang' });
      codes.push(await statusOf(proxied.withDeadline(Date.now() + 300, () => describeTaskQueue(proxied, taskQueue))));
      expect(codes).toEqual([CANCELLED, CANCELLED, CANCELLED, DEADLINE_EXCEEDED]);

      // No poll was answered or opened again meanwhile: the same long polls are still waiting.
      expect(pollCount()).toBe(polls);
      // The hung call's stream closes once its client's cancellation arrives.
      await until(() => proxy.openStreams() === open);
      const seen = await describeTaskQueue(direct, taskQueue);
      expect(seen.pollers.map((poller) => poller.identity)).toContain(worker.options.identity);

      const result = await new Client({ connection: direct }).workflow.execute(greeting, { taskQueue, workflowId: randomUUID(), args: ['long poll'] });
      expect(result).toBe('hello, long poll');
      expect(proxy.calls('RespondActivityTaskCompleted')).toBe(1);
    } finally {
      worker.shutdown();
      await running;
    }
  });
});
