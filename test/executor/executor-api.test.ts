import { randomUUID } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { createArtifactStore } from '../../src/executor/artifact-store.js';
import { executionIdFor } from '../../src/executor/domain/execution-states.js';
import { MAX_JSON_DEPTH } from '../../src/config/json-depth.js';
import { nestedJson, shapeLevels, tooDeepPath, type Shape } from '../support/nested-json.js';
import { distinctive, secretShapeExamples } from '../support/secret-shapes.js';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';
import { admitOne, executionRequest, startTestExecutor, type TestExecutor } from '../support/executor.js';

let ledger: TestLedger;
let actors: Actors;
let executor: TestExecutor;
let executionId: string;
let tokenId: string;

beforeAll(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
  executor = await startTestExecutor(ledger);
  const admitted = await admitOne(ledger, actors.agent, executor);
  tokenId = admitted.tokenId;
  executionId = admitted.execution.execution_id;
});

afterAll(async () => {
  await executor.close();
  await ledger.close();
});

const get = <T = Record<string, unknown>>(path: string, token: string | undefined = executor.caller) => call<T>(executor.url, 'GET', path, { token });

describe('authentication', () => {
  const protectedRoutes = () => [
    ['GET', '/v1/provider-catalog'],
    ['GET', '/v2/execution-targets'],
    ['POST', '/v2/executions'],
    ['GET', `/v1/executions/${executionId}`],
    ['GET', `/v1/executions/${executionId}/artifacts`],
    ['GET', `/v1/executions/${executionId}/artifacts/art_${randomUUID()}/content`],
  ];

  it('every execution, artifact, catalog and targets route needs the caller capability', async () => {
    for (const [method, path] of protectedRoutes()) {
      for (const token of [undefined, 'nonsense', generateCapability('caller'), ledger.adminToken, actors.executor]) {
        const result = await call(executor.url, method ?? 'GET', path ?? '/', { token, body: method === 'POST' ? executionRequest(tokenId) : undefined });
        expect(result, `${method ?? ''} ${path ?? ''}`).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
      }
    }
  });

  it('a caller without the route\'s capability is refused before its body is parsed: deep, malformed or of another type alike', async () => {
    const bodies: [string, string][] = [
      [nestedJson(shapeLevels('mixed', 5000)), 'application/json'],
      ['{"schema_version": ', 'application/json'],
      ['schema_version=2', 'text/plain'],
    ];
    const routes = [`/v2/executions`, `/v1/reconciliation/executions/${executionId}/resolve`];
    for (const path of routes) {
      for (const [rawBody, contentType] of bodies) {
        for (const token of [undefined, 'nonsense', generateCapability('caller'), ledger.adminToken, path === '/v2/executions' ? executor.reconciliation : executor.caller]) {
          const result = await call(executor.url, 'POST', path, { token, rawBody, contentType });
          expect(result, `${path} ${contentType}`).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
        }
      }
    }
    expect(executor.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
  });

  it('/livez, /readyz and /version are public and expose safe status only', async () => {
    expect(await get('/livez', undefined)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await get('/readyz', undefined)).toEqual({ status: 200, body: { status: 'ready' } });
    const version = await get('/version', undefined);
    expect(Object.keys(version.body).sort()).toEqual(['build_kind', 'commit', 'contract_version', 'product', 'product_version']);
  });
});

describe('reads', () => {
  it('execution detail has explicit state, target, authorization, pricing, attempts, receipt and an action — no URLs or paths', async () => {
    const detail = await get<{ execution: Record<string, unknown> }>(`/v1/executions/${executionId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.execution).toMatchObject({
      execution_id: executionId,
      workflow_id: `lexec-execution-${executionId}`,
      state: 'scheduled',
      phase: null,
      target_id: 'lexec:target:v1:flux-schnell',
      input: { prompt: 'a lighthouse at dusk', image_count: 2, image_size: 'square_hd' },
      authorization: { spend_auth_token_id: tokenId, agent_id: actors.agentId, held_units: '900000', units_scale: 6, held_cents: '90', currency: 'USD' },
      provider_attempts: [],
      receipt: null,
      artifact_count: 0,
      recommended_action: { code: 'wait' },
    });
    const text = JSON.stringify(detail.body);
    expect(text).not.toMatch(/https?:\/\//);
    expect(text).not.toContain(executor.dir);
  });

  it('a prompt stored by an older version with a capability in it is shown with the capability replaced', async () => {
    const other = await admitOne(ledger, actors.agent, executor);
    const capability = generateCapability('caller');
    const db = new Database(executor.config.storage.database_path);
    try {
      const row = db.prepare('SELECT request_json FROM executions WHERE execution_id = ?').get(other.execution.execution_id) as { request_json: string };
      const request = JSON.parse(row.request_json) as { input: { prompt: string } };
      request.input.prompt = `a fox ${capability}`;
      db.prepare('UPDATE executions SET request_json = ? WHERE execution_id = ?').run(JSON.stringify(request), other.execution.execution_id);
    } finally {
      db.close();
    }
    const detail = await get<{ execution: { input: { prompt: string } } }>(`/v1/executions/${other.execution.execution_id}`);
    expect(detail.body.execution.input.prompt).toBe('a fox [redacted]');
  });

  it('reads do not depend on readiness', async () => {
    executor.readiness.withdraw('ledger_unavailable');
    try {
      expect((await get(`/v1/executions/${executionId}`)).status).toBe(200);
      expect((await get(`/v1/executions/${executionId}/artifacts`)).status).toBe(200);
      expect((await get('/v1/provider-catalog')).status).toBe(200);
      expect((await get('/readyz', undefined)).body).toEqual({ status: 'not_ready', reason: 'ledger_unavailable' });
    } finally {
      executor.readiness.restore();
    }
  });

  it('unknown or malformed ids are 404 or 400 with the field', async () => {
    expect(await get(`/v1/executions/${executionIdFor(randomUUID())}`)).toEqual({ status: 404, body: { error: { code: 'not_found' } } });
    expect(await get('/v1/executions/not-an-id')).toEqual({ status: 400, body: { error: { code: 'invalid_request', fields: ['execution_id'] } } });
    expect((await get(`/v1/executions/${executionIdFor(randomUUID())}/artifacts`)).status).toBe(404);
  });

  it('lists artifacts and serves their bytes; storage paths never leave the process', async () => {
    const store = createArtifactStore(executor.config.storage.artifact_root);
    const bytes = new Uint8Array(Buffer.from('\x89PNG\r\n\x1a\nnot really a png, but bytes'));
    const stored = await store.write(executionId, 0, 'image/png', bytes);
    const artifactId = `art_${randomUUID()}`;
    executor.store.insertArtifact({
      artifact_id: artifactId,
      execution_id: executionId,
      ordinal: 0n,
      media_type: 'image/png',
      size_bytes: BigInt(stored.sizeBytes),
      sha256: stored.sha256,
      storage_key: stored.storageKey,
      width: 1024n,
      height: 1024n,
    });
    const listing = await get<{ artifacts: Record<string, unknown>[] }>(`/v1/executions/${executionId}/artifacts`);
    expect(listing.body.artifacts).toEqual([
      expect.objectContaining({
        artifact_id: artifactId,
        // Counts, sizes and ordinals are JSON integers; amounts alone are digit strings.
        ordinal: 0,
        media_type: 'image/png',
        size_bytes: bytes.byteLength,
        sha256: stored.sha256,
        width: 1024,
        height: 1024,
        content_path: `/v1/executions/${executionId}/artifacts/${artifactId}/content`,
      }),
    ]);
    expect(JSON.stringify(listing.body)).not.toContain(stored.storageKey);

    const response = await fetch(`${executor.url}/v1/executions/${executionId}/artifacts/${artifactId}/content`, {
      headers: { authorization: `Bearer ${executor.caller}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('etag')).toBe(`"sha256-${stored.sha256}"`);
    expect(Buffer.from(await response.arrayBuffer())).toEqual(Buffer.from(bytes));
  });
});

describe('the list of executions (GET /v1/executions)', () => {
  type Page = { executions: { execution_id: string; state: string }[]; next_before: string | null };
  const list = (query: string, token: string | null = executor.reconciliation) => call<Page>(executor.url, 'GET', `/v1/executions${query}`, { token: token ?? undefined });

  it('is an operator view: the reconciliation capability lists every execution, an agent\'s caller capability gets a bare 401', async () => {
    expect(await list('', executor.caller)).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
    expect(await list('', null)).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
    expect((await list('')).status).toBe(200);
  });

  it('pages newest first by admission, ties broken by execution id, without repeating or skipping a row, in one state or all', async () => {
    const admitted: string[] = [];
    for (let index = 0; index < 3; index += 1) admitted.push((await admitOne(ledger, actors.agent, executor)).execution.execution_id);
    // Two executions admitted in the same millisecond: the id decides their order.
    const db = new Database(executor.config.storage.database_path);
    try {
      const at = (db.prepare('SELECT created_at FROM executions WHERE execution_id = ?').get(admitted[2]) as { created_at: number }).created_at;
      db.prepare('UPDATE executions SET created_at = ? WHERE execution_id = ?').run(at, admitted[1]);
    } finally {
      db.close();
    }
    const rows = executor.query<{ execution_id: string; created_at: bigint }>('SELECT execution_id, created_at FROM executions');
    const expected = [...rows]
      .sort((a, b) => (a.created_at === b.created_at ? (a.execution_id < b.execution_id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
      .map((row) => row.execution_id);
    const seen: string[] = [];
    let before: string | null = null;
    do {
      const page: { status: number; body: Page } = await list(`?limit=2${before === null ? '' : `&before=${before}`}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.executions.map((execution) => execution.execution_id));
      before = page.body.next_before;
    } while (before !== null && seen.length <= expected.length);
    expect(seen).toEqual(expected);
    const last = await list(`?limit=${expected.length}`);
    expect(last.body.next_before).toBe(expected.at(-1));
    expect((await list(`?limit=2&before=${expected.at(-1) ?? ''}`)).body).toEqual({ executions: [], next_before: null });
    const states = executor.query<{ execution_id: string; state: string }>('SELECT execution_id, state FROM executions');
    const state = states.find((row) => row.execution_id === admitted[0])?.state ?? '';
    const inState = await list(`?state=${state}&limit=100`);
    expect(inState.body.executions.map((execution) => execution.execution_id)).toEqual(expected.filter((id) => states.find((row) => row.execution_id === id)?.state === state));
    expect(inState.body.executions.map((execution) => execution.execution_id)).toContain(admitted[0]);
    expect((await list('?state=reconciliation&limit=100')).body.executions.filter((execution) => admitted.includes(execution.execution_id))).toEqual([]);
  });

  it('refuses an unknown cursor and a limit that is not plain decimal digits, naming the field', async () => {
    expect(await list(`?before=exe_${'0'.repeat(32)}`)).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'unknown_cursor', fields: ['before'] } } });
    for (const limit of ['0x19', '1e1', '%205', '0', '101', '-1']) {
      expect(await list(`?limit=${limit}`), limit).toEqual({ status: 400, body: { error: { code: 'invalid_request', fields: ['limit'] } } });
    }
  });
});

describe('artifact store', () => {
  it('writes atomically under the root with size, sha256 and private modes, leaving no temporary file', async () => {
    const store = createArtifactStore(join(executor.dir, 'other-artifacts'));
    const id = executionIdFor(randomUUID());
    const stored = await store.write(id, 3, 'image/png', new Uint8Array([1, 2, 3]));
    const path = join(executor.dir, 'other-artifacts', stored.storageKey);
    expect(await readFile(path)).toEqual(Buffer.from([1, 2, 3]));
    expect(stored).toMatchObject({ sizeBytes: 3, sha256: '039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81' });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readdir(join(executor.dir, 'other-artifacts', id))).toEqual([stored.storageKey.split('/')[1]]);
  });

  it('refuses a storage key outside the root', () => {
    const store = createArtifactStore(join(executor.dir, 'artifacts'));
    expect(() => store.read('../executor.db')).toThrow(/outside the artifact root/);
  });
});

describe('catalog and targets', () => {
  it('the provider catalog is schema v1 with four independent facts and no secrets', async () => {
    const catalog = await get('/v1/provider-catalog');
    expect(catalog.body).toMatchObject({
      catalog_schema_version: 1,
      providers_mode: 'sandbox',
      facts: {
        configured: true,
        credential_reference_present: false,
        production_validated: false,
        live_qualified: false,
        live_qualified_reason: 'not_performed',
      },
      targets: [{ target_id: 'lexec:target:v1:flux-schnell', model: 'fal-ai/flux/schnell', policy_versions: { pricing: '2026-11-01', target: 'v1' } }],
    });
    expect(JSON.stringify(catalog.body)).not.toMatch(/store|keychain|capability/);
  });

  it('execution targets list the selectable choices with only priced presets', async () => {
    const targets = await get<{ targets: { target_id: string; presets: string[]; default_image_size: string }[] }>('/v2/execution-targets');
    expect(targets.body.targets).toHaveLength(1);
    expect(targets.body.targets[0]).toMatchObject({ target_id: 'lexec:target:v1:flux-schnell', default_image_size: 'square_hd' });
    expect(targets.body.targets[0]?.presets).not.toContain('square');
  });
});

describe('bad admission input: 400/413/415 with field paths, never the value, never a 500', () => {
  const marker = 'VALUE-MARKER-77';
  const cases: [string, unknown, string[]][] = [
    ['missing fields', {}, ['input', 'input_schema_version', 'schema_version', 'spend_auth_token_id']],
    ['a wrong schema version', { schema_version: 3 }, ['schema_version']],
    ['a non-UUID token id', { spend_auth_token_id: marker }, ['spend_auth_token_id']],
    ['a huge prompt', { input: { prompt: 'x'.repeat(4001), image_count: 1 } }, ['input.prompt']],
    ['an empty prompt', { input: { prompt: '', image_count: 1 } }, ['input.prompt']],
    ['zero images', { input: { prompt: 'p', image_count: 0 } }, ['input.image_count']],
    ['too many images', { input: { prompt: 'p', image_count: 5 } }, ['input.image_count']],
    ['a fractional image count', { input: { prompt: 'p', image_count: 1.5 } }, ['input.image_count']],
    ['a string image count', { input: { prompt: 'p', image_count: '2' } }, ['input.image_count']],
    ['an unknown field', { surprise: marker }, ['surprise']],
    ['an unknown input field', { input: { prompt: 'p', image_count: 1, seed: 7 } }, ['input.seed']],
    ['a wrong target type', { target_id: 7 }, ['target_id']],
  ];

  it.each(cases)('%s', async (_name, change, fields) => {
    const body = Object.keys(change as object).length === 0 ? {} : { ...executionRequest(randomUUID()), ...(change as object) };
    const result = await call<{ error: { fields: string[] } }>(executor.url, 'POST', '/v2/executions', { token: executor.caller, body });
    expect(result.status).toBe(400);
    expect(result.body.error.fields.sort()).toEqual(fields);
    expect(JSON.stringify(result.body)).not.toContain(marker);
  });

  it.each<Shape>(['object', 'array', 'mixed'])(
    'a body of %s nesting deeper than the bound → 400 nesting_too_deep naming the first too-deep value, never a 500 or an error line',
    async (shape) => {
      for (const depth of [MAX_JSON_DEPTH + 1, 1000, 5000]) {
        const levels = shapeLevels(shape, depth, 'input');
        const result = await call(executor.url, 'POST', '/v2/executions', { token: executor.caller, rawBody: nestedJson(levels, `"${marker}"`) });
        expect(result, `depth ${String(depth)}`).toEqual({
          status: 400,
          body: { error: { code: 'invalid_request', reason_code: 'nesting_too_deep', fields: [tooDeepPath(levels, MAX_JSON_DEPTH)] } },
        });
      }
      const atBound = await call<{ error: { reason_code?: string } }>(executor.url, 'POST', '/v2/executions', {
        token: executor.caller,
        rawBody: nestedJson(shapeLevels(shape, MAX_JSON_DEPTH, 'input')),
      });
      expect(atBound.status).toBe(400);
      expect(atBound.body.error.reason_code).toBe('field_invalid');
      expect(executor.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
    },
  );

  it('malformed JSON, a wrong content type and an oversize body', async () => {
    const post = (rawBody: string, contentType?: string) => call(executor.url, 'POST', '/v2/executions', { token: executor.caller, rawBody, contentType });
    expect(await post('{"schema_version": 2,')).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'malformed_json' } } });
    expect((await post('schema_version=2', 'application/x-www-form-urlencoded')).status).toBe(415);
    expect((await post(JSON.stringify({ ...executionRequest(randomUUID()), pad: 'x'.repeat(70_000) }))).status).toBe(413);
    expect((await post('[]')).status).toBe(400);
    expect((await post('null')).status).toBe(400);
  });

  it('a prompt holding a capability, an API key or a bearer token → 400 secret_shaped_text naming input.prompt; nothing claimed, stored or logged', async () => {
    const created = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
      token: actors.agent,
      body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
    });
    const token = created.body.authorization.token_id;
    // Issue 24 item 8: `Authorization: Bearer sk-…` was accepted, stored and shown back.
    for (const [name, secret] of secretShapeExamples()) {
      const body = executionRequest(token, { input: { prompt: `a lighthouse, ${secret}`, image_count: 1 } });
      const result = await call(executor.url, 'POST', '/v2/executions', { token: executor.caller, body });
      expect(result, name).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['input.prompt'] } } });
      expect(JSON.stringify(executor.logs())).not.toContain(distinctive(secret));
    }
    expect(executor.query('SELECT COUNT(*) AS n FROM executions WHERE spend_auth_token_id = ?', token)).toEqual([{ n: 0n }]);
    expect(ledger.query('SELECT status, execution_id FROM authorizations WHERE token_id = ?', token)).toEqual([{ status: 'approved', execution_id: null }]);
    expect(executor.logs()).toContainEqual(expect.objectContaining({ event: 'executor_admission_rejected', reason_code: 'secret_shaped_text', fields: ['input.prompt'] }));
  });

  it('a key twice in one object is refused with its path; nothing is admitted', async () => {
    const request = JSON.stringify(executionRequest(randomUUID()));
    const duplicated = request.replace('"image_count":2', '"image_count":2,"image_count":4');
    expect(duplicated).not.toBe(request);
    const result = await call(executor.url, 'POST', '/v2/executions', { token: executor.caller, rawBody: duplicated });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'duplicate_keys', fields: ['input.image_count'] } } });
  });
});
