import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createExecutionChanges } from '../../src/executor/execution-changes.js';
import { admitOne, startTestExecutor, type TestExecutor } from '../support/executor.js';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/** Well below the 30 s the waits ask for, and far above any busy machine's delay: an answer this late waited the wait out. */
const WAITED_OUT_MS = 20_000;

/*
 * Waiting for an execution's next change (issue 15 item 1; docs/executor.md "Waiting for a
 * change"): the notifier on a fake clock, and the detail route's long-poll on a real executor
 * app and SQLite file — woken by the change itself, ended at its bound and by the server's stop.
 * No stopwatch: a wait that was not woken would outlast the test's own timeout.
 */

describe('the change notifier', () => {
  it('wakes every waiter of an execution at its change, and only those', async () => {
    const changes = createExecutionChanges();
    const woken: string[] = [];
    const a = changes.wait('exe_a', 60_000).then(() => woken.push('a'));
    const b = changes.wait('exe_a', 60_000).then(() => woken.push('a2'));
    void changes.wait('exe_b', 60_000).then(() => woken.push('b'));
    expect(changes.waiting()).toBe(3);
    changes.notify('exe_a');
    await Promise.all([a, b]);
    expect(woken.sort()).toEqual(['a', 'a2']);
    expect(changes.waiting()).toBe(1);
    changes.close();
  });

  it('ends a wait at its bound (fake clock)', async () => {
    vi.useFakeTimers();
    try {
      const changes = createExecutionChanges();
      let ended = false;
      void changes.wait('exe_a', 5_000).then(() => (ended = true));
      await vi.advanceTimersByTimeAsync(4_999);
      expect(ended).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(ended).toBe(true);
      expect(changes.waiting()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('is bounded: past maxWaiters, and after close, a wait answers at once without waiting', async () => {
    const changes = createExecutionChanges({ maxWaiters: 2 });
    void changes.wait('exe_a', 60_000);
    void changes.wait('exe_b', 60_000);
    expect(await changes.wait('exe_c', 60_000)).toBe(false);
    const pending = changes.wait('exe_a', 60_000);
    changes.close();
    expect(changes.waiting()).toBe(0);
    expect(await pending).toBe(false);
    expect(await changes.wait('exe_a', 60_000)).toBe(false);
  });
});

describe('GET /v1/executions/{id}?wait_seconds=…&state=…&phase=… (long-poll)', () => {
  let ledger: TestLedger;
  let actors: Actors;
  let executor: TestExecutor;
  let executionId = '';

  beforeAll(async () => {
    ledger = await startTestLedger();
    actors = await setUpActors(ledger);
    executor = await startTestExecutor(ledger);
    const admitted = await admitOne(ledger, actors.agent, executor);
    executionId = admitted.execution.execution_id;
    expect(admitted.execution.state).toBe('scheduled');
  });

  let closed = false;
  afterAll(async () => {
    if (!closed) await executor.close();
    await ledger.close();
  });

  const detail = (query: string) => call<{ execution: { state: string; phase: string | null }; error?: unknown }>(executor.url, 'GET', `/v1/executions/${executionId}?${query}`, { token: executor.caller });

  it('answers at once when the execution already differs from what the caller saw', async () => {
    const asked = Date.now();
    const answer = await detail('wait_seconds=30&state=pending&phase=');
    expect(answer.body.execution.state).toBe('scheduled');
    expect(Date.now() - asked, 'answered before its 30 s wait ran out').toBeLessThan(WAITED_OUT_MS);
  });

  it('is woken by the change itself: a phase change answers a 30 s wait at once', async () => {
    const asked = Date.now();
    const waiting = detail('wait_seconds=30&state=scheduled&phase=');
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The same phase again changes nothing the caller sees: the wait goes on.
    executor.store.setRunning(executionId, 'submit_provider');
    const answer = await waiting;
    expect(answer.body.execution).toMatchObject({ state: 'running', phase: 'submit_provider' });
    const next = detail('wait_seconds=30&state=running&phase=submit_provider');
    await new Promise((resolve) => setTimeout(resolve, 100));
    executor.store.setRunning(executionId, 'submit_provider');
    // Woken by a write that changed nothing the caller sees, the wait goes on.
    expect(await Promise.race([next.then(() => 'answered'), new Promise((resolve) => setTimeout(() => { resolve('still waiting'); }, 300))])).toBe('still waiting');
    executor.store.setRunning(executionId, 'poll_provider_operation');
    expect((await next).body.execution).toMatchObject({ state: 'running', phase: 'poll_provider_operation' });
    expect(Date.now() - asked, 'both waits answered before their 30 s ran out').toBeLessThan(WAITED_OUT_MS);
  });

  it('ends at its bound with the execution as it is', async () => {
    const answer = await detail('wait_seconds=1&state=running&phase=poll_provider_operation');
    expect(answer.status).toBe(200);
    expect(answer.body.execution).toMatchObject({ state: 'running', phase: 'poll_provider_operation' });
  });

  it('refuses a bad wait with the field paths, never the values', async () => {
    for (const query of ['wait_seconds=0&state=running', 'wait_seconds=31&state=running', 'wait_seconds=2&state=flying', 'wait_seconds=2&state=running&phase=dancing']) {
      const answer = await detail(query);
      expect(answer.status, query).toBe(400);
      expect(JSON.stringify(answer.body)).not.toMatch(/flying|dancing/);
    }
  });

  it('a stopping server answers its long-polls at once instead of holding the stop for them', async () => {
    const asked = Date.now();
    const waiting = detail('wait_seconds=30&state=running&phase=poll_provider_operation');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = executor.close();
    closed = true;
    const answer = await waiting;
    expect(answer.status).toBe(200);
    // And the stop is not held by the long-poll's kept-alive connection either.
    await closing;
    expect(Date.now() - asked, 'answered and stopped before the 30 s wait ran out').toBeLessThan(WAITED_OUT_MS);
  });
});
