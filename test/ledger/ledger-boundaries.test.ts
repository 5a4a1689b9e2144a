import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { MAX_JSON_DEPTH } from '../../src/config/json-depth.js';
import { nestedJson, shapeLevels, tooDeepPath, type Shape } from '../support/nested-json.js';
import { call, preciseReceipt, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

let ledger: TestLedger;
let actors: Actors;

beforeAll(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
});

afterAll(async () => {
  await ledger.close();
});

type Kind = 'admin' | 'agent' | 'approver' | 'executor' | 'reconciliation';
const token = (kind: Kind) => (kind === 'admin' ? ledger.adminToken : actors[kind]);
const KINDS: Kind[] = ['admin', 'agent', 'approver', 'executor', 'reconciliation'];

/** Every protected route with the credential kinds it admits. */
function routes(): { method: string; path: string; allowed: Kind[]; body?: unknown }[] {
  const id = randomUUID();
  return [
    { method: 'GET', path: '/agents', allowed: ['admin', 'executor'] },
    { method: 'POST', path: '/agents', allowed: ['admin'], body: {} },
    { method: 'GET', path: `/agents/${actors.agentId}/policy`, allowed: ['admin'] },
    { method: 'PUT', path: `/agents/${actors.agentId}/policy`, allowed: ['admin'], body: {} },
    { method: 'PUT', path: '/credentials/cred_x', allowed: ['admin'], body: {} },
    { method: 'POST', path: '/authorizations', allowed: ['agent'], body: {} },
    { method: 'GET', path: '/authorizations', allowed: ['admin'] },
    { method: 'GET', path: `/authorizations/${id}`, allowed: ['admin', 'approver', 'agent'] },
    { method: 'GET', path: '/agent/spending', allowed: ['agent'] },
    { method: 'GET', path: `/agents/${actors.agentId}/spending`, allowed: ['admin'] },
    { method: 'GET', path: '/approvals', allowed: ['approver'] },
    { method: 'POST', path: `/authorizations/${id}/approve`, allowed: ['approver'], body: {} },
    { method: 'POST', path: `/authorizations/${id}/deny`, allowed: ['approver'], body: {} },
    { method: 'GET', path: `/executor/authorizations/${id}`, allowed: ['executor'] },
    { method: 'POST', path: `/executor/authorizations/${id}/claim`, allowed: ['executor'], body: {} },
    { method: 'POST', path: `/executor/authorizations/${id}/settle`, allowed: ['executor'], body: {} },
    { method: 'POST', path: `/executor/authorizations/${id}/release`, allowed: ['executor'], body: {} },
    { method: 'POST', path: `/executor/authorizations/${id}/reconciliation`, allowed: ['executor'], body: {} },
    { method: 'GET', path: '/reconciliation-records', allowed: ['reconciliation'] },
    { method: 'POST', path: `/reconciliation-records/rec_${id}/resolve`, allowed: ['reconciliation'], body: {} },
  ];
}

describe('credential kinds per route', () => {
  it('each route admits exactly its kinds; every other caller gets a bare 401', async () => {
    for (const route of routes()) {
      for (const kind of KINDS) {
        const result = await call(ledger.url, route.method, route.path, { token: token(kind), body: route.body });
        if (route.allowed.includes(kind)) expect(result.status, `${kind} ${route.method} ${route.path}`).not.toBe(401);
        else expect(result, `${kind} ${route.method} ${route.path}`).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
      }
    }
  });

  it('no credential, a malformed one, an unknown one, or another scheme: the same bare 401', async () => {
    const headersList: Record<string, string>[] = [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Bearer not-a-capability' },
      { authorization: `Bearer ${generateCapability('admin')}` },
      { authorization: `Basic ${Buffer.from(`admin:${ledger.adminToken}`).toString('base64')}` },
      { authorization: `Bearer ${ledger.adminToken} extra` },
    ];
    for (const headers of headersList) {
      const response = await fetch(`${ledger.url}/agents`, { headers });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ error: { code: 'unauthorized' } });
    }
  });

  it('matches the Bearer scheme case-insensitively (RFC 9110): bearer and BEARER are Bearer', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const response = await fetch(`${ledger.url}/agents`, { headers: { authorization: `${scheme} ${ledger.adminToken}` } });
      expect(response.status, scheme).toBe(200);
    }
  });

  it('a key twice in one object is refused with its path, as the configuration loader does', async () => {
    const result = await call(ledger.url, 'POST', '/authorizations', {
      token: actors.agent,
      rawBody: '{"amount_units":"1000","amount_units":"9000000","units_scale":6,"currency":"USD"}',
    });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'duplicate_keys', fields: ['amount_units'] } } });
    expect(ledger.query('SELECT * FROM authorizations')).toHaveLength(0);
  });

  it('a caller without the route\'s credential is refused before its body is parsed: deep, malformed or of another type alike', async () => {
    const bodies: [string, string][] = [
      [nestedJson(shapeLevels('mixed', 5000)), 'application/json'],
      ['{"amount_units": ', 'application/json'],
      ['amount_units=1', 'text/plain'],
    ];
    for (const route of routes().filter((candidate) => candidate.body !== undefined)) {
      for (const [rawBody, contentType] of bodies) {
        for (const kind of KINDS.filter((candidate) => !route.allowed.includes(candidate))) {
          const result = await call(ledger.url, route.method, route.path, { token: token(kind), rawBody, contentType });
          expect(result, `${kind} ${route.method} ${route.path}`).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
        }
        expect((await call(ledger.url, route.method, route.path, { rawBody, contentType })).status).toBe(401);
      }
    }
    expect(ledger.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
  });

  it('health and version are public and expose safe status only', async () => {
    expect(await call(ledger.url, 'GET', '/health')).toEqual({ status: 200, body: { status: 'ok' } });
    const version = await call(ledger.url, 'GET', '/version');
    expect(Object.keys(version.body).sort()).toEqual(['build_kind', 'commit', 'contract_level', 'contract_version', 'product', 'product_version']);
  });
});

describe('bad input is refused with field paths, never echoed, and writes nothing', () => {
  const marker = 'MARKER-5f1e';
  const rowCount = () => ledger.query<{ n: bigint }>('SELECT (SELECT COUNT(*) FROM authorizations) + (SELECT COUNT(*) FROM agents) AS n')[0]?.n;

  const badRequests: [string, unknown, string[]][] = [
    ['a float amount', { amount_units: 1.5, units_scale: 6, currency: 'USD' }, ['amount_units']],
    ['a decimal string amount', { amount_units: '1.5', units_scale: 6, currency: 'USD' }, ['amount_units']],
    ['a negative amount', { amount_units: '-100', units_scale: 6, currency: 'USD' }, ['amount_units']],
    ['a zero amount', { amount_units: '0', units_scale: 6, currency: 'USD' }, ['amount_units']],
    ['an unsafe JSON integer', { amount_units: Number.MAX_SAFE_INTEGER + 1, units_scale: 6, currency: 'USD' }, ['amount_units']],
    ['an unknown currency', { amount_units: '100', units_scale: 6, currency: 'EUR' }, ['currency']],
    ['a wrong scale', { amount_units: '100', units_scale: 2, currency: 'USD' }, ['units_scale']],
    ['a missing amount', { units_scale: 6, currency: 'USD' }, ['amount_units']],
    ['an unknown field, named by its path', { amount_units: '100', units_scale: 6, currency: 'USD', extra_field: marker }, ['extra_field']],
    ['an unknown key that is not a plain name, not echoed', { amount_units: '100', units_scale: 6, currency: 'USD', [`${marker} x`]: 1 }, ['[?]']],
    ['a known-shaped unknown field', { amount_units: '100', units_scale: 6, currency: 'USD', agent_id: marker }, ['agent_id']],
    ['a string body', 'hello', ['(document)']],
    ['an array body', [1, 2], ['(document)']],
  ];

  it.each(badRequests)('%s → 400 with its field paths', async (_name, body, fields) => {
    const before = rowCount();
    const result = await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, body });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', fields } } });
    expect(JSON.stringify(result.body)).not.toContain(marker);
    expect(rowCount()).toBe(before);
  });

  it.each<Shape>(['object', 'array', 'mixed'])(
    'a body of %s nesting: deeper than the bound → 400 nesting_too_deep naming the first too-deep value, never a 500 or an error line',
    async (shape) => {
      const before = rowCount();
      for (const depth of [MAX_JSON_DEPTH + 1, 1000, 5000]) {
        const levels = shapeLevels(shape, depth, 'purpose');
        const result = await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, rawBody: nestedJson(levels, `"${marker}"`) });
        expect(result, `depth ${String(depth)}`).toEqual({
          status: 400,
          body: { error: { code: 'invalid_request', reason_code: 'nesting_too_deep', fields: [tooDeepPath(levels, MAX_JSON_DEPTH)] } },
        });
      }
      // At the bound the body is parsed and refused for what it says.
      const atBound = await call<{ error: { reason_code?: string } }>(ledger.url, 'POST', '/authorizations', {
        token: actors.agent,
        rawBody: nestedJson(shapeLevels(shape, MAX_JSON_DEPTH, 'purpose')),
      });
      expect(atBound.status).toBe(400);
      expect(atBound.body.error.reason_code).toBeUndefined();
      expect(rowCount()).toBe(before);
      expect(ledger.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
    },
  );

  it('malformed JSON → 400 malformed_json', async () => {
    const result = await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, rawBody: `{"amount_units": "${marker}` });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'malformed_json' } } });
  });

  it('a wrong content type → 415', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const result = await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, rawBody: 'amount_units=100', contentType });
      expect(result.status).toBe(415);
      expect(result.body).toEqual({ error: { code: 'unsupported_media_type', reason_code: 'application_json_required' } });
    }
  });

  it('an oversize body → 413 without reading it', async () => {
    const before = rowCount();
    const result = await call(ledger.url, 'POST', '/authorizations', {
      token: actors.agent,
      body: { amount_units: '100', units_scale: 6, currency: 'USD', purpose: 'x'.repeat(70 * 1024) },
    });
    expect(result).toEqual({ status: 413, body: { error: { code: 'payload_too_large' } } });
    expect(rowCount()).toBe(before);
  });

  it('a non-UUID token id → 400 naming token_id', async () => {
    const result = await call(ledger.url, 'GET', `/executor/authorizations/${marker}`, { token: actors.executor });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', fields: ['token_id'] } } });
  });

  it('a receipt of neither shape, or with a bad snapshot, names the receipt fields', async () => {
    const created = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
      token: actors.agent,
      body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
    });
    const tokenId = created.body.authorization.token_id;
    await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: { execution_id: 'exe_bad' } });
    const settle = (receipt: unknown) =>
      call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/settle`, { token: actors.executor, body: { execution_id: 'exe_bad', receipt } });

    expect((await settle({ receipt_id: 'r1' })).body).toEqual({
      error: { code: 'invalid_request', reason_code: 'invalid_receipt', fields: ['receipt.amount_units'] },
    });
    const incomplete = preciseReceipt(10n);
    const snapshot: Record<string, unknown> = { ...incomplete.price_model_snapshot };
    delete snapshot.unit_price;
    const result = await settle({ ...incomplete, price_model_snapshot: snapshot });
    expect(result.body).toEqual({ error: { code: 'invalid_request', fields: ['receipt.price_model_snapshot.unit_price'] } });
    expect((await settle({ ...preciseReceipt(10n), amount_units: 0.5 })).body).toMatchObject({ error: { fields: ['receipt.amount_units'] } });
    expect(ledger.query('SELECT * FROM settlements WHERE token_id = ?', tokenId)).toEqual([]);
  });

  it('an unknown route → 404 not_found', async () => {
    expect(await call(ledger.url, 'GET', '/nope')).toEqual({ status: 404, body: { error: { code: 'not_found' } } });
  });

  it('an invalid policy is refused with paths and leaves the policy unchanged', async () => {
    const path = `/agents/${actors.agentId}/policy`;
    const result = await call(ledger.url, 'PUT', path, {
      token: ledger.adminToken,
      body: { per_authorization_cap_units: '30000000', daily_cap_units: '20000000', approval_threshold_units: '-1', units_scale: 6, currency: 'USD' },
    });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', fields: ['approval_threshold_units'] } } });
    const capAboveDaily = await call(ledger.url, 'PUT', path, {
      token: ledger.adminToken,
      body: { per_authorization_cap_units: '30000000', daily_cap_units: '20000000', approval_threshold_units: '0', units_scale: 6, currency: 'USD' },
    });
    expect(capAboveDaily.body).toEqual({ error: { code: 'invalid_request', fields: ['per_authorization_cap_units'] } });
    const policy = await call<{ policy: { version: string } }>(ledger.url, 'GET', path, { token: ledger.adminToken });
    expect(policy.body.policy.version).toBe('1');
  });
});

describe('credential registration', () => {
  it('is idempotent for the same digest and fails closed for a different one', async () => {
    const digest = 'a'.repeat(64);
    const put = (body: unknown) => call(ledger.url, 'PUT', '/credentials/cred_fixed', { token: ledger.adminToken, body });
    expect((await put({ kind: 'approver', digest_sha256: digest })).status).toBe(201);
    expect(await put({ kind: 'approver', digest_sha256: digest })).toMatchObject({ status: 200, body: { outcome: 'unchanged' } });
    expect(await put({ kind: 'approver', digest_sha256: 'b'.repeat(64) })).toMatchObject({ status: 409, body: { error: { reason_code: 'credential_exists' } } });
    expect(await put({ kind: 'executor', digest_sha256: digest })).toMatchObject({ status: 409 });
    expect(await put({ kind: 'admin', digest_sha256: 'c'.repeat(64) })).toMatchObject({ status: 400, body: { error: { fields: ['kind'] } } });
  });

  it('an agent credential needs an existing agent', async () => {
    const result = await call(ledger.url, 'PUT', '/credentials/cred_agentless', {
      token: ledger.adminToken,
      body: { kind: 'agent', digest_sha256: 'd'.repeat(64) },
    });
    expect(result).toMatchObject({ status: 422, body: { error: { fields: ['agent_id'] } } });
  });
});
