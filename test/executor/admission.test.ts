import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LIVE_SPEND_ACKNOWLEDGEMENT } from '../../src/executor/config/executor-config-schema.js';
import { executionIdFor } from '../../src/executor/domain/execution-states.js';
import { call, mintCredential, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';
import { executionRequest, startTestExecutor, unknownToken, withoutTargetId, type TestExecutor } from '../support/executor.js';

interface ExecutionBody {
  execution: {
    execution_id: string;
    state: string;
    target_id: string;
    authorization: { account_id: string; agent_id: string; held_units: string; spend_auth_token_id: string };
    pricing_snapshot: { image_size: string; image_count: number; unit_price: { numerator: string; denominator: string } };
    recommended_action: { code: string };
  };
  error?: { code: string; reason_code?: string; fields?: string[]; retryable?: boolean };
}

let ledger: TestLedger;
let actors: Actors;
let executor: TestExecutor;

beforeEach(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
});

afterEach(async () => {
  await executor.close();
  await ledger.close();
});

async function approvedToken(amountUnits = '900000'): Promise<string> {
  const created = await call<{ authorization: { token_id: string; status: string } }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD' },
  });
  return created.body.authorization.token_id;
}

const submit = (body: unknown, options: { rawBody?: string; contentType?: string } = {}) =>
  call<ExecutionBody>(executor.url, 'POST', '/v2/executions', { token: executor.caller, body, ...options });

/**
 * How many times the ledger was asked about a token on the executor's routes (admission's
 * conditional claim resolves and claims in one call).
 */
const ledgerCalls = () => ledger.logs().filter((line) => typeof line.route === 'string' && line.route.startsWith('/executor/authorizations/')).length;

describe('admission of a new token', () => {
  beforeEach(async () => {
    executor = await startTestExecutor(ledger);
  });

  it('resolves and claims at the ledger in one call, persists the pending execution with its frozen pricing, and schedules it', async () => {
    const tokenId = await approvedToken();
    const result = await submit(executionRequest(tokenId));
    expect(result.status).toBe(201);
    const execution = result.body.execution;
    expect(execution).toMatchObject({
      execution_id: executionIdFor(tokenId),
      state: 'scheduled',
      target_id: 'lexec:target:v1:flux-schnell',
      authorization: { spend_auth_token_id: tokenId, agent_id: actors.agentId, held_units: '900000' },
      pricing_snapshot: { image_size: 'square_hd', image_count: 2, unit_price: { numerator: '3', denominator: '1000' } },
      recommended_action: { code: 'wait' },
    });
    const atLedger = await call<{ authorization: { status: string; execution_id: string; account_id: string } }>(ledger.url, 'GET', `/authorizations/${tokenId}`, {
      token: ledger.adminToken,
    });
    expect(atLedger.body.authorization).toMatchObject({ status: 'claimed', execution_id: execution.execution_id });
    // The ledger's answer is authoritative for account and agent.
    expect(execution.authorization.account_id).toBe(atLedger.body.authorization.account_id);
    expect(ledger.logs().filter((line) => typeof line.route === 'string' && line.route.startsWith('/executor/authorizations/')).map((line) => [line.method, line.route])).toEqual([
      ['POST', '/executor/authorizations/:token_id/claim'],
    ]);
    expect(executor.query('SELECT state, authorization_held_units, authorization_held_cents FROM executions')).toEqual([
      { state: 'scheduled', authorization_held_units: 900_000n, authorization_held_cents: 90n },
    ]);
  });

  it('replays an identical body locally — any key order or whitespace — without asking the ledger', async () => {
    const tokenId = await approvedToken();
    const body = executionRequest(tokenId);
    expect((await submit(body)).status).toBe(201);
    const asked = ledgerCalls();
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(body).reverse()), null, 4);
    const replay = await submit(undefined, { rawBody: reordered });
    expect(replay.status).toBe(200);
    expect(replay.body.execution.execution_id).toBe(executionIdFor(tokenId));
    expect(ledgerCalls()).toBe(asked);
  });

  it('a replay answers the execution as it is now: after it changes, the next replay and the detail read show the change', async () => {
    const tokenId = await approvedToken();
    const executionId = executionIdFor(tokenId);
    const headers = { authorization: `Bearer ${executor.caller}` };
    const body = JSON.stringify(executionRequest(tokenId));
    const replay = async () => {
      const response = await fetch(`${executor.url}/v2/executions`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
      return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
    };
    const stateOf = (text: string) => (JSON.parse(text) as ExecutionBody & { execution: { provider_attempts: unknown[] } }).execution;
    expect((await replay()).status).toBe(201);
    const scheduled = await replay();
    expect(scheduled).toMatchObject({ status: 200, type: 'application/json; charset=utf-8' });
    expect(stateOf(scheduled.text)).toMatchObject({ state: 'scheduled', provider_attempts: [] });

    executor.store.setRunning(executionId, 'submit_provider');
    executor.store.createAttempt('att_replay', executionId, 1, 'USD');
    expect(stateOf((await replay()).text)).toMatchObject({ state: 'running', provider_attempts: [{ attempt_id: 'att_replay', state: 'submitting' }] });

    executor.store.setAttemptOutcome('att_replay', 'not_transmitted', 'connection_refused');
    executor.store.setFinal(executionId, 'failed', 'not_transmitted');
    const failed = await replay();
    expect(stateOf(failed.text)).toMatchObject({ state: 'failed', state_reason: 'not_transmitted', provider_attempts: [{ state: 'not_transmitted' }] });
    // The replay and the detail read give the same bytes.
    const read = await fetch(`${executor.url}/v1/executions/${executionId}`, { headers });
    expect(read.headers.get('content-type')).toBe(failed.type);
    expect(await read.text()).toBe(failed.text);
  });

  it('a changed immutable field conflicts, naming the field', async () => {
    const tokenId = await approvedToken();
    await submit(executionRequest(tokenId));
    const changed = await submit(executionRequest(tokenId, { input: { prompt: 'something else', image_count: 2, image_size: 'square_hd' } }));
    expect(changed).toMatchObject({ status: 409, body: { error: { code: 'conflict', reason_code: 'immutable_field_changed', fields: ['input.prompt'] } } });
    expect(JSON.stringify(changed.body)).not.toContain('something else');
  });

  it('many concurrent identical requests create one execution with one ledger call', async () => {
    const tokenId = await approvedToken();
    const results = await Promise.all(Array.from({ length: 20 }, () => submit(executionRequest(tokenId))));
    expect(results.map((result) => result.status).sort()).toEqual([200, ...Array<number>(18).fill(200), 201].sort());
    expect(new Set(results.map((result) => result.body.execution.execution_id)).size).toBe(1);
    expect(ledgerCalls()).toBe(1);
    expect(executor.query('SELECT execution_id FROM executions')).toHaveLength(1);
  });

  it('repairs a crash between the ledger claim and the local insert: the retry claims again with the same id', async () => {
    const tokenId = await approvedToken();
    await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: executor.ledgerCredential, body: { execution_id: executionIdFor(tokenId) } });
    expect((await submit(executionRequest(tokenId))).status).toBe(201);
  });

  it('accepts the four legacy target fields in place of target_id', async () => {
    const tokenId = await approvedToken();
    const withoutTarget = withoutTargetId(executionRequest(tokenId));
    const result = await submit({ ...withoutTarget, provider: 'fal', model: 'fal-ai/flux/schnell', pricing_version: '2026-11-01', target_version: 'v1' });
    expect(result.status).toBe(201);
    expect(result.body.execution.target_id).toBe('lexec:target:v1:flux-schnell');
  });

  it('defaults image_size to the target’s first preset', async () => {
    const tokenId = await approvedToken();
    const result = await submit(executionRequest(tokenId, { input: { prompt: 'p', image_count: 1 } }));
    expect(result.body.execution.pricing_snapshot.image_size).toBe('square_hd');
  });
});

describe('admission refusals', () => {
  beforeEach(async () => {
    executor = await startTestExecutor(ledger);
  });

  it('target_not_selectable names target_id, or the legacy fields', async () => {
    const tokenId = await approvedToken();
    expect((await submit(executionRequest(tokenId, { target_id: 'lexec:target:v1:retired' }))).body).toEqual({
      error: { code: 'invalid_request', reason_code: 'target_not_selectable', fields: ['target_id'] },
    });
    const withoutTarget = withoutTargetId(executionRequest(tokenId));
    expect((await submit({ ...withoutTarget, provider: 'fal', model: 'fal-ai/other', pricing_version: '2026-11-01', target_version: 'v1' })).body).toEqual({
      error: { code: 'invalid_request', reason_code: 'target_not_selectable', fields: ['provider', 'model', 'pricing_version', 'target_version'] },
    });
    expect(ledgerCalls()).toBe(0);
  });

  it('pricing_selector_not_matched names input.image_size', async () => {
    const tokenId = await approvedToken();
    for (const size of ['square', 'huge']) {
      const result = await submit(executionRequest(tokenId, { input: { prompt: 'p', image_count: 1, image_size: size } }));
      expect(result.body).toEqual({ error: { code: 'invalid_request', reason_code: 'pricing_selector_not_matched', fields: ['input.image_size'] } });
    }
  });

  it('needs exactly one way of naming the target', async () => {
    const tokenId = await approvedToken();
    const withoutTarget = withoutTargetId(executionRequest(tokenId));
    expect((await submit(withoutTarget)).body).toEqual({ error: { code: 'invalid_request', reason_code: 'target_required', fields: ['target_id'] } });
    expect((await submit({ ...withoutTarget, provider: 'fal' })).body).toEqual({
      error: { code: 'invalid_request', reason_code: 'target_required', fields: ['model', 'pricing_version', 'target_version'] },
    });
    expect((await submit(executionRequest(tokenId, { model: 'fal-ai/flux/schnell' }))).body).toEqual({
      error: { code: 'invalid_request', reason_code: 'target_ambiguous', fields: ['target_id', 'model'] },
    });
  });

  it('refuses an authorization that is not usable, without claiming it', async () => {
    const pending = await approvedToken('2000000');
    expect((await submit(executionRequest(pending))).body).toEqual({
      error: { code: 'conflict', reason_code: 'authorization_requested', fields: ['spend_auth_token_id'] },
    });
    expect((await submit(executionRequest(unknownToken()))).body).toEqual({ error: { code: 'authorization_not_found', fields: ['spend_auth_token_id'] } });
    const elsewhere = await approvedToken();
    await call(ledger.url, 'POST', `/executor/authorizations/${elsewhere}/claim`, { token: actors.executor, body: { execution_id: 'exe_other' } });
    expect((await submit(executionRequest(elsewhere))).body).toEqual({
      error: { code: 'conflict', reason_code: 'authorization_claimed_elsewhere', fields: ['spend_auth_token_id'] },
    });
    // Another executor on this ledger, given the same token, claimed it first: it names the same
    // execution id (ids come from the token), yet this executor must not take it over.
    const taken = await approvedToken();
    const otherExecutor = await mintCredential(ledger, 'executor');
    expect((await call(ledger.url, 'POST', `/executor/authorizations/${taken}/claim`, { token: otherExecutor, body: { execution_id: executionIdFor(taken) } })).status).toBe(200);
    expect((await submit(executionRequest(taken))).body).toEqual({
      error: { code: 'conflict', reason_code: 'authorization_claimed_elsewhere', fields: ['spend_auth_token_id'] },
    });
    expect(executor.store.execution(executionIdFor(taken))).toBeUndefined();
  });

  it('refuses work that would cost more than the hold, before claiming', async () => {
    // 4 images at 3/1000 USD = 12 000 micro-units; hold 10 000.
    const tokenId = await approvedToken('10000');
    const result = await submit(executionRequest(tokenId, { input: { prompt: 'p', image_count: 4, image_size: 'square_hd' } }));
    expect(result).toMatchObject({ status: 422, body: { error: { code: 'authorization_insufficient', reason_code: 'cost_exceeds_hold' } } });
    const atLedger = await call<{ authorization: { status: string } }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: ledger.adminToken });
    expect(atLedger.body.authorization.status).toBe('approved');
  });

  it('answers 503 not_ready while readiness is withdrawn, without asking the ledger', async () => {
    const tokenId = await approvedToken();
    executor.readiness.withdraw('ledger_unavailable');
    const result = await submit(executionRequest(tokenId));
    expect(result).toEqual({ status: 503, body: { error: { code: 'not_ready', reason_code: 'readiness_withdrawn', retryable: true } } });
    expect(ledgerCalls()).toBe(0);
    expect((await call(executor.url, 'GET', '/readyz')).status).toBe(503);
    executor.readiness.restore();
    expect((await submit(executionRequest(tokenId))).status).toBe(201);
  });

  it('writes executor_admission_rejected once per reason, with field paths only', async () => {
    const tokenId = await approvedToken();
    for (let index = 0; index < 3; index += 1) await submit(executionRequest(tokenId, { target_id: 'lexec:target:v1:secret-target-MARKER' }));
    await submit(executionRequest(tokenId, { input: { prompt: 'p', image_count: 1, image_size: 'square' } }));
    await submit(executionRequest(tokenId, { input: { prompt: 'p', image_count: 99 } }));
    await submit(undefined, { rawBody: '{"malformed' });
    const events = executor.logs().filter((line) => line.event === 'executor_admission_rejected');
    expect(events.map((event) => [event.reason_code, event.fields, event.route, event.route_version, event.status, event.code])).toEqual([
      ['target_not_selectable', ['target_id'], 'create_execution', 2, 400, 'invalid_request'],
      ['pricing_selector_not_matched', ['input.image_size'], 'create_execution', 2, 400, 'invalid_request'],
      ['field_invalid', ['input.image_count'], 'create_execution', 2, 400, 'invalid_request'],
    ]);
    const text = JSON.stringify(executor.logs());
    expect(text).not.toContain('MARKER');
    expect(text).not.toContain(tokenId);
  });
});

describe('scheduling failure after the pending execution was created', () => {
  it('answers 503 not_ready; the identical retry reuses the execution without a second ledger call', async () => {
    let failures = 1;
    executor = await startTestExecutor(ledger, {
      scheduler: {
        schedule() {
          if (failures === 0) return Promise.resolve();
          failures -= 1;
          return Promise.reject(new Error('engine unavailable'));
        },
      },
    });
    const tokenId = await approvedToken();
    const first = await submit(executionRequest(tokenId));
    expect(first).toEqual({ status: 503, body: { error: { code: 'not_ready', reason_code: 'scheduling_failed', retryable: true } } });
    expect(executor.query('SELECT state FROM executions')).toEqual([{ state: 'pending' }]);
    const detail = await call<ExecutionBody>(executor.url, 'GET', `/v1/executions/${executionIdFor(tokenId)}`, { token: executor.caller });
    expect(detail.body.execution.recommended_action.code).toBe('retry_admission');

    const retry = await submit(executionRequest(tokenId));
    expect(retry.status).toBe(200);
    expect(retry.body.execution.state).toBe('scheduled');
    expect(ledgerCalls()).toBe(1);
    expect(executor.query('SELECT COUNT(*) AS n FROM executions')).toEqual([{ n: 1n }]);
  });
});

describe('live mode spend ceiling', () => {
  beforeEach(async () => {
    executor = await startTestExecutor(ledger, {
      change: (config) => {
        const target = (config.execution_targets as Record<string, unknown>[])[0] as Record<string, unknown>;
        target.presets = ['square_hd'];
        (target.pricing as Record<string, unknown>).by_image_size = { square_hd: { numerator: '3', denominator: '1000' } };
        config.providers = {
          mode: 'live',
          target_id: 'lexec:target:v1:flux-schnell',
          credential: { store: 'file', path: '/nonexistent/fal.key' },
          spend_ceiling: { amount_units: '10000', units_scale: 6, currency: 'USD' },
          acknowledgement: LIVE_SPEND_ACKNOWLEDGEMENT,
        };
      },
    });
  });

  it('admits live work only while the committed live spend stays within the ceiling, before claiming', async () => {
    // Each request: 2 images x 3/1000 USD = 6000 micro-units; ceiling 10 000.
    const tokens = await Promise.all(Array.from({ length: 5 }, () => approvedToken()));
    const results = await Promise.all(tokens.map((token) => submit(executionRequest(token))));
    expect(results.filter((result) => result.status === 201)).toHaveLength(1);
    const refused = results.filter((result) => result.status === 422);
    expect(refused).toHaveLength(4);
    for (const result of refused) expect(result.body.error).toEqual({ code: 'live_spend_ceiling_reached', fields: ['input.image_count'] });
    const claimed = await call<{ authorizations: unknown[] }>(ledger.url, 'GET', '/authorizations?status=claimed', { token: ledger.adminToken });
    expect(claimed.body.authorizations).toHaveLength(1);
    expect(executor.query("SELECT quoted_units, provider_mode FROM executions")).toEqual([{ quoted_units: 6000n, provider_mode: 'live' }]);
  });
});
