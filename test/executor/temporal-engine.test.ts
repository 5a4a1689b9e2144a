import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../support/ledger.js';
import { executionRequest } from '../support/executor.js';
import { executionIdFor } from '../../src/executor/domain/execution-states.js';
import { durableHarness, until, type Stack } from '../support/durable-stack.js';
import { freePorts } from '../support/free-ports.js';
import { startGrpcFaultProxy, type GrpcFaultProxy } from '../support/grpc-fault-proxy.js';
import { connectedDevServer, startDevServer, temporalCli, untilPortOpen } from '../support/temporal.js';

/*
 * The executor on a real Temporal server (issue 11): a dev server started by the test stands in
 * for an external cluster, and the executor reaches it through a loopback gRPC proxy that passes
 * everything through until a test injects a fault a real server cannot produce on demand (a
 * CANCELLED answer, a hung RPC, a refused workflow start). Recovery dispositions on Temporal are
 * in durable-execution.test.ts; this file holds what is Temporal's own: the workflow's payloads
 * and ids, scheduling twice, a lost start, readiness on the real engine, and an engine that goes
 * away and comes back.
 */

const cli = temporalCli();
const harness = durableHarness('lexec-temporal-');
let proxy: GrpcFaultProxy;
const dev = connectedDevServer(cli, 300_000);

afterEach(async () => {
  if (cli !== null) await (proxy as GrpcFaultProxy | undefined)?.close();
});

/** A stack whose executor reaches the dev server through a fresh fault proxy. */
async function stackBehindProxy(options: Parameters<typeof harness.stack>[0] = {}): Promise<Stack> {
  proxy = await startGrpcFaultProxy({ upstream: dev.server.address });
  return harness.stack({ engine: { mode: 'external', url: `grpc://${proxy.address}` }, ...options });
}

const readyz = async (s: Stack) => {
  const response = await fetch(`${s.executor.url()}/readyz`);
  return { status: response.status, body: (await response.json()) as { status: string; reason?: string } };
};


const probeEvents = (s: Stack) => s.executor.events().filter((event) => event.event === 'executor_dependency_probe' && event.dependency === 'workflow_engine');

/** Every payload in a history, decoded (the payload converter writes JSON). */
function decodedPayloads(json: string): string[] {
  const found: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === 'object' && value !== null) {
      const record = value as Record<string, unknown>;
      if (typeof record.data === 'string' && typeof record.metadata === 'object') found.push(Buffer.from(record.data, 'base64').toString('utf8'));
      Object.values(record).forEach(walk);
    }
  };
  walk(JSON.parse(json));
  return found;
}

describe.skipIf(cli === null)('the workflow on a real Temporal server', () => {
  it('one workflow per execution at lexec-execution-<id>, whose history carries only the execution id, the phase and outcomes', async () => {
    const s = await stackBehindProxy();
    const executionId = await s.submit(await s.approvedToken(), 2);
    await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    const handle = dev.client.workflow.getHandle(`lexec-execution-${executionId}`);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    const json = historyToJSON(await handle.fetchHistory());
    const payloads = new Set(decodedPayloads(json));
    expect(payloads).toContain(JSON.stringify({ execution_id: executionId, phase: 'submit_provider' }));
    expect(payloads).toContain(JSON.stringify(executionId));
    // The other payloads: the two patches (their markers, and the patch list the SDK keeps as a
    // search attribute), and each local activity's bookkeeping (sequence, attempt, type, times).
    const patches = ['lexec-submit-provider-activity', 'lexec-local-phase-activities'];
    const parsed = [...payloads].map((payload) => ({ payload, value: JSON.parse(payload) as unknown }));
    const patchPayloads = parsed.filter(({ payload }) => patches.some((patch) => payload.includes(patch)));
    expect(patchPayloads.map(({ value }) => value)).toEqual(expect.arrayContaining([{ id: patches[0], deprecated: false }, { id: patches[1], deprecated: false }]) as unknown[]);
    for (const { value } of patchPayloads) {
      if (Array.isArray(value)) expect(value.every((entry) => patches.includes(entry as string))).toBe(true);
      else expect(patches).toContain((value as { id: string }).id);
    }
    const localActivities = parsed.filter(({ value }) => typeof value === 'object' && value !== null && 'activity_type' in value);
    for (const { value } of localActivities) expect(Object.keys(value as object).sort()).toEqual(['activity_id', 'activity_type', 'attempt', 'backoff', 'complete_time', 'original_schedule_time', 'seq']);
    for (const { payload } of parsed) {
      if (patchPayloads.some((entry) => entry.payload === payload) || localActivities.some((entry) => entry.payload === payload)) continue;
      expect(payload).toMatch(/^("exe_[0-9a-f]{32}"|\{"execution_id":"exe_[0-9a-f]{32}","phase":"[a-z_]+"\}|\{"kind":"(done|next|later)"(,"phase":"[a-z_]+"|,"delayMs":\d+)?\})$/);
    }
    // The phases, in order: the submission is an activity of its own (the first patch); the others
    // run as local activities (the second).
    const events = (JSON.parse(json) as { events: { activityTaskScheduledEventAttributes?: { activityType: { name: string } } }[] }).events;
    const scheduled = events.flatMap((event) => (event.activityTaskScheduledEventAttributes === undefined ? [] : [event.activityTaskScheduledEventAttributes.activityType.name]));
    expect(scheduled).toEqual(['submit_provider']);
    const local = localActivities.map(({ value }) => (value as { seq: number; activity_type: string })).sort((x, y) => x.seq - y.seq).map((entry) => entry.activity_type);
    expect(local[0]).toBe('poll_provider_operation');
    expect(local.slice(-2)).toEqual(['store_artifacts', 'settle']);
    for (const forbidden of [s.caller, s.admin, s.resolver, 'lexec_', 'lighthouse', 'http:', harness.dir(), s.sandbox.url]) expect(json).not.toContain(forbidden);
  }, 120_000);

  it('scheduling again — an identical resubmission, a restart — never starts a second run', async () => {
    const s = await stackBehindProxy({ sandboxArgs: ['--complete-after-ms', '3000'] });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    const workflowId = `lexec-execution-${executionId}`;
    const firstRun = (await dev.client.workflow.getHandle(workflowId).describe()).runId;
    const replay = await call(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body: executionRequest(tokenId, { input: { prompt: 'a lighthouse at dusk', image_count: 1, image_size: 'square_hd' } }) });
    expect(replay.status).toBe(200);
    await s.executor.kill('SIGKILL');
    await s.restart();
    await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    const runs = [];
    for await (const run of dev.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(run.runId);
    expect(runs).toEqual([firstRun]);
    expect(await s.sandbox.submissions()).toHaveLength(1);
  }, 120_000);

  it('a workflow start that fails after the pending execution was created: 503 not_ready, then the identical retry schedules it, once', async () => {
    const s = await stackBehindProxy();
    proxy.setFault('StartWorkflowExecution', { kind: 'status', code: 13 });
    const tokenId = await s.approvedToken();
    const body = executionRequest(tokenId, { input: { prompt: 'a lighthouse at dusk', image_count: 1, image_size: 'square_hd' } });
    const refused = await call(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body });
    expect(refused).toMatchObject({ status: 503, body: { error: { code: 'not_ready', reason_code: 'scheduling_failed', retryable: true } } });
    // The execution is durable and pending; the ledger claim stands.
    expect((await s.execution(executionIdFor(tokenId))).state).toBe('pending');
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    proxy.clearFaults();
    const retried = await call<{ execution: { execution_id: string; state: string } }>(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body });
    expect(retried.status).toBe(200);
    const executionId = retried.body.execution.execution_id;
    await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('settled');
  }, 120_000);

  it('a pending execution whose workflow start was lost is scheduled at its stable id when the executor starts again', async () => {
    const s = await stackBehindProxy();
    proxy.setFault('StartWorkflowExecution', { kind: 'status', code: 13 });
    const tokenId = await s.approvedToken();
    const body = executionRequest(tokenId, { input: { prompt: 'a lighthouse at dusk', image_count: 1, image_size: 'square_hd' } });
    expect((await call(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body })).status).toBe(503);
    await s.executor.kill('SIGKILL');
    proxy.clearFaults();
    await s.restart();
    // No resubmission: the executor's own restart recovery starts the workflow.
    const executionId = executionIdFor(tokenId);
    await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    const runs = [];
    for await (const run of dev.client.workflow.list({ query: `WorkflowId = 'lexec-execution-${executionId}'` })) runs.push(run.runId);
    expect(runs).toHaveLength(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
  }, 120_000);
});

describe.skipIf(cli === null)('readiness on the real engine (spec §3), faults from the gRPC proxy', () => {
  /** Polls until `test` holds, returning what it returned (up to `timeoutMs`). */
  async function eventually<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const notReadyFor = async (s: Stack, reason: string) => eventually(`readyz 503 ${reason}`, async () => ((await readyz(s)).body.reason === reason ? true : undefined));
  const readyAgain = async (s: Stack) => eventually('ready again', async () => ((await readyz(s)).status === 200 ? true : undefined));

  it('startup needs this worker on the queue; an engine error withdraws at once, reads stay, and recovery restores readiness by itself', async () => {
    const s = await stackBehindProxy();
    // Rule 1: the first sample that made the executor ready saw this worker polling.
    const lines = s.executor.events();
    const ready = lines.findIndex((event) => event.event === 'executor_ready');
    expect(lines.slice(0, ready).some((event) => event.event === 'executor_dependency_probe' && event.dependency === 'workflow_engine' && Number(event.pollers) >= 1)).toBe(true);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');

    // Rule 7: UNAVAILABLE from the task-queue RPC withdraws readiness and admission at once.
    proxy.setFault('DescribeTaskQueue', { kind: 'status', code: 14 });
    await notReadyFor(s, 'workflow_engine_unavailable');
    expect(probeEvents(s).at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'UNAVAILABLE', consecutive_failures: 1 });
    const refused = await call(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body: executionRequest(await s.approvedToken()) });
    expect(refused).toMatchObject({ status: 503, body: { error: { code: 'not_ready' } } });
    // Rule 12: reads stay available.
    expect((await s.execution(executionId)).state).toBe('succeeded');
    // Rules 8 and 10: a healthy sample restores readiness, with nobody restarting anything.
    proxy.clearFaults();
    await readyAgain(s);

    // A hung RPC counts as failed at the probe's bound (10 s): DEADLINE_EXCEEDED.
    proxy.setFault('DescribeTaskQueue', { kind: 'hang' });
    await notReadyFor(s, 'workflow_engine_unavailable');
    expect(probeEvents(s).at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'DEADLINE_EXCEEDED' });
    proxy.clearFaults();
    await readyAgain(s);
    const later = await s.submit(await s.approvedToken(), 1);
    await s.waitFor(later, 'success', (e) => e.state === 'succeeded');
  }, 180_000);

  it('a Cancelled answer gets one immediate confirmation; cancellation alone keeps readiness only until the 30 s grace boundary', async () => {
    const s = await stackBehindProxy();
    // Rule 5: one cancelled RPC whose confirmation answers is a healthy sample.
    const before = proxy.calls('DescribeTaskQueue');
    proxy.setFault('DescribeTaskQueue', { kind: 'status', code: 1, times: 1 });
    const confirmed = await eventually('a confirmed sample', () => probeEvents(s).find((event) => event.confirmation === 'ok'));
    expect(confirmed).toMatchObject({ outcome: 'ok' });
    expect(proxy.calls('DescribeTaskQueue') - before).toBeGreaterThanOrEqual(2);
    expect((await readyz(s)).status).toBe(200);

    // An uninterrupted cancellation sequence: every sample is two cancelled RPCs counted once;
    // readiness (established with the poller proof) holds while the window is under 30 s.
    proxy.setFault('DescribeTaskQueue', { kind: 'status', code: 1 });
    const first = await eventually('a cancelled sample', () => probeEvents(s).find((event) => event.confirmation === 'cancelled'));
    expect(first).toMatchObject({ outcome: 'cancelled', grpc_status: 'CANCELLED', consecutive_failures: 1 });
    const windowStart = Date.parse(String(first.time));
    while (Date.now() < windowStart + 25_000) {
      expect((await readyz(s)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    const counts = probeEvents(s).filter((event) => event.confirmation === 'cancelled').map((event) => event.consecutive_failures);
    expect(counts.slice(0, 4)).toEqual([1, 2, 3, 4].slice(0, Math.min(4, counts.length)));
    // Rule 9: withdrawn at the grace boundary.
    await notReadyFor(s, 'workflow_engine_cancelled');
    expect(Date.now() - windowStart).toBeGreaterThanOrEqual(29_000);
    // Cancellation never restores readiness; an answered RPC does.
    proxy.clearFaults();
    await readyAgain(s);
  }, 180_000);
});

describe.skipIf(cli === null)('an external engine: never started or stopped by the executor', () => {
  it('goes away and comes back: readiness is withdrawn and restored, the execution under way finishes once, and the executor leaves the engine running', async () => {
    const own = await startDevServer(cli ?? '', { dir: harness.dir() });
    harness.cleanups.push(() => own.stop());
    const s = await harness.stack({ engine: { mode: 'external', url: own.url }, sandboxArgs: ['--complete-after-ms', '6000'] });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
    await own.stop();
    await until('withdrawn', async () => ((await readyz(s)).body.reason === 'workflow_engine_unavailable' ? true : undefined));
    expect((await s.execution(executionId)).state).toBe('running');
    await own.restart();
    await until('ready again', async () => ((await readyz(s)).status === 200 ? true : undefined), 30_000);
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded', 40_000);
    expect(execution.provider_attempts).toHaveLength(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('settled');
    // A stopped executor leaves the engine as it was.
    expect(await s.executor.kill('SIGTERM')).toBe(0);
    await untilPortOpen(own.port, 1_000);
  }, 120_000);

  it('an unknown namespace is never ready, and the log names workflow_engine.namespace', async () => {
    const s = await harness.stack({ engine: { mode: 'external', url: dev.server.url, namespace: 'no-such-namespace' }, waitUntilReady: false });
    const event = await until('the setting named', () => Promise.resolve(s.executor.events().find((entry) => entry.event === 'workflow_engine_setting_suspect')));
    expect(event).toMatchObject({ field: 'workflow_engine.namespace', grpc_status: 'NOT_FOUND' });
    expect((await readyz(s)).status).toBe(503);
  }, 120_000);

  it('an address where no engine answers is never ready, and the log and /readyz name workflow_engine.address', async () => {
    const [port = 0] = await freePorts(1);
    const s = await harness.stack({ engine: { mode: 'external', url: `grpc://127.0.0.1:${port}` }, waitUntilReady: false });
    const event = await until('the setting named', () => Promise.resolve(s.executor.events().find((entry) => entry.event === 'workflow_engine_setting_suspect')));
    expect(event).toMatchObject({ field: 'workflow_engine.address' });
    // /readyz names the engine that does not answer by its address (lexec run says it: docs/run.md).
    expect((await readyz(s)).body).toEqual({ status: 'not_ready', reason: 'workflow_engine_unavailable', address: `grpc://127.0.0.1:${port}` });
  }, 120_000);
});
