import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/config/json-depth.js';
import { MAX_BODY_BYTES } from '../../src/http/json-server.js';
import { nestedJson, tooDeepPath, type Level } from '../support/nested-json.js';
import { startTestExecutor, type TestExecutor } from '../support/executor.js';
import { setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Issue 14 item 6: generated malformed requests against the ledger's and the executor's real
 * routes (in-process apps on real loopback sockets and SQLite files). Every request carries a
 * canary — in a value, a header, a query, a path parameter, a key or broken JSON text — and
 * is broken in at least one way. Properties: no 5xx, the canary never comes back in an answer
 * (status line, headers, body) or in any log line, and the server is still ready afterwards.
 * A fixed seed in CI (LEXEC_FUZZ_SEED / LEXEC_FUZZ_RUNS change it by hand).
 *
 * Issue 24 item 7: generated nesting depth — objects, arrays and both mixed, at and around the
 * bound (MAX_JSON_DEPTH) and up to thousands deep — to every route that reads a body, with and
 * without the route's credential (LEXEC_FUZZ_DEPTH_RUNS changes the count).
 */

const SEED = Number(process.env.LEXEC_FUZZ_SEED ?? 20261125);
const RUNS = Number(process.env.LEXEC_FUZZ_RUNS ?? 10_000);
const DEPTH_RUNS = Number(process.env.LEXEC_FUZZ_DEPTH_RUNS ?? 400);
// Never a plain field name (it has `~`), never a valid id, name, token, amount or enum value.
const CANARY = 'lexec~canary~7f3a9c';

interface Route {
  readonly method: string;
  readonly path: string;
  /** The credential the route accepts (ledger): the fuzz mostly sends the right one, to get past the guard. */
  readonly as?: keyof Actors | 'admin';
}

const LEDGER_ROUTES: readonly Route[] = [
  { method: 'GET', path: '/agents', as: 'admin' },
  { method: 'POST', path: '/agents', as: 'admin' },
  { method: 'GET', path: '/agents/:agent/policy', as: 'admin' },
  { method: 'PUT', path: '/agents/:agent/policy', as: 'admin' },
  { method: 'POST', path: '/agents/:agent/suspend', as: 'admin' },
  { method: 'POST', path: '/agents/:agent/resume', as: 'admin' },
  { method: 'PUT', path: '/credentials/:id', as: 'admin' },
  { method: 'POST', path: '/authorizations', as: 'agent' },
  { method: 'GET', path: '/authorizations', as: 'admin' },
  { method: 'GET', path: '/authorizations/:token', as: 'admin' },
  { method: 'POST', path: '/authorizations/:token/approve', as: 'approver' },
  { method: 'POST', path: '/authorizations/:token/deny', as: 'approver' },
  { method: 'GET', path: '/agent/spending', as: 'agent' },
  { method: 'GET', path: '/approvals', as: 'approver' },
  { method: 'GET', path: '/executor/authorizations/:token', as: 'executor' },
  { method: 'POST', path: '/executor/authorizations/:token/claim', as: 'executor' },
  { method: 'POST', path: '/executor/authorizations/:token/settle', as: 'executor' },
  { method: 'POST', path: '/executor/authorizations/:token/release', as: 'executor' },
  { method: 'POST', path: '/executor/authorizations/:token/reconciliation', as: 'executor' },
  { method: 'GET', path: '/reconciliation-records', as: 'reconciliation' },
  { method: 'POST', path: '/reconciliation-records/:record/resolve', as: 'reconciliation' },
];

const EXECUTOR_ROUTES: readonly Route[] = [
  { method: 'GET', path: '/v1/provider-catalog' },
  { method: 'GET', path: '/v2/execution-targets' },
  { method: 'POST', path: '/v2/executions' },
  { method: 'GET', path: '/v1/executions/:execution' },
  { method: 'GET', path: '/v1/executions/:execution/artifacts' },
  { method: 'GET', path: '/v1/executions/:execution/artifacts/:artifact/content' },
  { method: 'GET', path: '/v1/reconciliation/executions' },
  { method: 'POST', path: '/v1/reconciliation/executions/:execution/resolve' },
];

/** Something that carries the canary: plain, wrapped in other text, or in JSON-looking text. */
const canaryText = fc.oneof(
  fc.constant(CANARY),
  fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })).map(([before, after]) => `${before}${CANARY}${after}`),
  fc.constant(`{"${CANARY}":`),
  fc.constant(`../${CANARY}/..`),
  fc.constant(`${CANARY}\u0000\u001b[2J`),
);

/** A JSON value with the canary planted at some depth, in a value or a (non-plain) key. */
const plantedValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    canaryText,
    fc.array(tie('value'), { maxLength: 3 }).map((items) => [...items, CANARY]),
    fc.dictionary(fc.string({ maxLength: 12 }), tie('value'), { maxKeys: 4 }).map((object) => ({ ...object, [`~${CANARY}`]: CANARY })),
  ),
})).value;

/** A body for a route: valid-looking fields with one broken into the canary, or garbage. */
const body = fc.oneof(
  // Field names the routes know, each value a canary or another JSON value; always one key too many.
  fc
    .dictionary(
      fc.constantFrom('amount_units', 'units_scale', 'currency', 'purpose', 'name', 'kind', 'agent_id', 'digest_sha256', 'reason', 'execution_id', 'receipt', 'require', 'evidence', 'resolution', 'note', 'schema_version', 'spend_auth_token_id', 'input', 'target_id', 'per_authorization_cap_units'),
      fc.oneof(plantedValue, fc.jsonValue({ maxDepth: 2 })),
      { maxKeys: 6 },
    )
    .map((object) => JSON.stringify({ ...object, [`~${CANARY}`]: true })),
  plantedValue.map((value) => JSON.stringify(value)),
  // Broken JSON text that carries the canary.
  canaryText.map((text) => `{"amount_units": "${text}`),
  fc.tuple(fc.jsonValue({ maxDepth: 2 }), canaryText).map(([value, text]) => `${JSON.stringify(value)}${text}`),
  // The same key twice: refused whatever its values.
  canaryText.map((text) => `{"reason":"${text}","reason":"${text}","execution_id":"exe_1"}`),
);

interface Generated {
  readonly route: Route;
  readonly param: string;
  readonly query: string;
  readonly auth: 'none' | 'canary' | 'valid' | 'scheme';
  readonly contentType: string | null;
  readonly extraHeader: boolean;
  readonly body: string | null;
}

function generated(routes: readonly Route[]): fc.Arbitrary<Generated> {
  return fc.record({
    route: fc.constantFrom(...routes),
    param: fc.oneof(canaryText, fc.constantFrom('agt_00000000-0000-0000-0000-000000000000', '00000000-0000-4000-8000-000000000000', 'exe_00000000000000000000000000000000')),
    query: fc.oneof(fc.constant(''), canaryText.map((text) => `?status=${encodeURIComponent(text)}&limit=${encodeURIComponent(text)}`), canaryText.map((text) => `?${encodeURIComponent(text)}=1`)),
    // Mostly a valid credential, so that most requests reach the routes' own parsing.
    auth: fc.oneof({ weight: 6, arbitrary: fc.constant('valid' as const) }, { weight: 1, arbitrary: fc.constantFrom('none' as const, 'canary' as const, 'scheme' as const) }),
    contentType: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8') },
      { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', null) },
    ),
    extraHeader: fc.boolean(),
    body: fc.option(body, { nil: null }),
  });
}

interface Target {
  readonly url: string;
  readonly validToken: (route: Route) => string;
  readonly logs: () => unknown[];
  readonly ready: () => Promise<boolean>;
}

async function fuzz(target: Target, routes: readonly Route[], seed: number): Promise<{ requests: number; statuses: Map<number, number> }> {
  const statuses = new Map<number, number>();
  let requests = 0;
  await fc.assert(
    fc.asyncProperty(generated(routes), async (request) => {
      const path = request.route.path.replace(/:[a-z]+/g, () => encodeURIComponent(request.param)) + request.query;
      const headers: Record<string, string> = {};
      if (request.auth === 'canary') headers.authorization = `Bearer ${request.param === CANARY ? CANARY : `lexec_agent_${CANARY}`}`;
      else if (request.auth === 'valid') headers.authorization = `Bearer ${target.validToken(request.route)}`;
      else if (request.auth === 'scheme') headers.authorization = `${CANARY} ${target.validToken(request.route)}`;
      if (request.contentType !== null && request.body !== null) headers['content-type'] = request.contentType;
      if (request.extraHeader) headers['x-lexec-canary'] = CANARY;
      const withBody = request.body !== null && request.route.method !== 'GET';
      const response = await fetch(`${target.url}${path}`, { method: request.route.method, headers, body: withBody ? request.body : undefined });
      const text = await response.text();
      requests += 1;
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, `${request.route.method} ${path}: ${text}`).toBeLessThan(500);
      expect(text, `${request.route.method} ${path}`).not.toContain(CANARY);
      expect(text).not.toContain('canary');
      for (const [name, value] of response.headers) expect(`${name}: ${value}`).not.toContain('canary');
    }),
    { seed, numRuns: RUNS, endOnFailure: true },
  );
  // No log line carries the canary either (each line as written, keys and values).
  for (const line of target.logs()) expect(JSON.stringify(line)).not.toContain('canary');
  expect(await target.ready()).toBe(true);
  return { requests, statuses };
}

/** A nesting: `pattern` repeated to `depth` levels around a scalar leaf. */
const nesting = fc.record({
  pattern: fc.array(
    fc.record({
      kind: fc.constantFrom('object' as const, 'array' as const),
      key: fc.constantFrom('a', 'input', 'evidence', '', `~${CANARY}`),
      siblings: fc.integer({ min: 0, max: 2 }),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  depth: fc.oneof(fc.integer({ min: MAX_JSON_DEPTH - 2, max: MAX_JSON_DEPTH + 2 }), fc.integer({ min: 1, max: 6000 })),
  leaf: fc.constantFrom('1', 'null', JSON.stringify(CANARY)),
  auth: fc.oneof({ weight: 4, arbitrary: fc.constant('valid' as const) }, { weight: 1, arbitrary: fc.constantFrom('none' as const, 'canary' as const) }),
});

/** Path parameters that parse, so that a route's body is what is judged. */
const PARAMS: Record<string, () => string> = {
  agent: () => 'agt_00000000-0000-0000-0000-000000000000',
  id: () => `cred_${randomUUID()}`,
  token: () => randomUUID(),
  record: () => `rec_${randomUUID()}`,
  execution: () => 'exe_00000000000000000000000000000000',
};

type DepthOutcome = 'unauthorized' | 'too_large' | 'too_deep' | 'parsed';

async function fuzzDepth(target: Target, routes: readonly Route[], seed: number): Promise<Map<DepthOutcome, number>> {
  const outcomes = new Map<DepthOutcome, number>();
  const withBody = routes.filter((route) => route.method !== 'GET');
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...withBody), nesting, async (route, generatedNesting) => {
      const levels: Level[] = Array.from({ length: generatedNesting.depth }, (_, index) => generatedNesting.pattern[index % generatedNesting.pattern.length] as Level);
      const text = nestedJson(levels, generatedNesting.leaf);
      const path = route.path.replace(/:([a-z]+)/g, (_, name: string) => (PARAMS[name] ?? (() => name))());
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (generatedNesting.auth === 'valid') headers.authorization = `Bearer ${target.validToken(route)}`;
      else if (generatedNesting.auth === 'canary') headers.authorization = `Bearer lexec_agent_${CANARY}`;
      const response = await fetch(`${target.url}${path}`, { method: route.method, headers, body: text });
      const answer = await response.text();
      const label = `${route.method} ${path} depth ${String(levels.length)}: ${answer.slice(0, 300)}`;
      expect(answer, label).not.toContain('canary');
      let outcome: DepthOutcome;
      if (generatedNesting.auth !== 'valid') {
        outcome = 'unauthorized';
        expect([response.status, answer], label).toEqual([401, '{"error":{"code":"unauthorized"}}']);
      } else if (Buffer.byteLength(text) > MAX_BODY_BYTES) {
        outcome = 'too_large';
        expect(response.status, label).toBe(413);
      } else if (levels.length > MAX_JSON_DEPTH) {
        outcome = 'too_deep';
        expect([response.status, JSON.parse(answer)], label).toEqual([
          400,
          { error: { code: 'invalid_request', reason_code: 'nesting_too_deep', fields: [tooDeepPath(levels, MAX_JSON_DEPTH)] } },
        ]);
      } else {
        outcome = 'parsed';
        expect(response.status, label).toBeLessThan(500);
        expect(answer, label).not.toContain('nesting_too_deep');
      }
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }),
    { seed, numRuns: DEPTH_RUNS, endOnFailure: true },
  );
  // Nothing was an internal error (the overflow was logged at error level), nothing leaked.
  for (const line of target.logs()) {
    expect(JSON.stringify(line)).not.toContain('canary');
    expect((line as { level?: number }).level ?? 0, JSON.stringify(line)).toBeLessThan(50);
  }
  expect(await target.ready()).toBe(true);
  // Every outcome was reached: the run proves something about each.
  expect([...outcomes.keys()].sort()).toEqual(['parsed', 'too_deep', 'too_large', 'unauthorized']);
  return outcomes;
}

let ledger: TestLedger;
let actors: Actors;
let executor: TestExecutor;

beforeAll(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
  executor = await startTestExecutor(ledger);
}, 120_000);

afterAll(async () => {
  await executor.close();
  await ledger.close();
});

describe('generated malformed requests (fast-check, fixed seed)', () => {
  it(`the ledger: ${RUNS} requests, no 5xx, no canary in any answer or log line, still ready`, async () => {
    const result = await fuzz(
      {
        url: ledger.url,
        validToken: (route) => (route.as === undefined || route.as === 'admin' ? ledger.adminToken : actors[route.as]),
        logs: () => ledger.logs(),
        ready: async () => (await fetch(`${ledger.url}/health`)).status === 200,
      },
      LEDGER_ROUTES,
      SEED,
    );
    expect(result.requests).toBe(RUNS);
    console.error(`ledger fuzz: seed ${SEED}, ${result.requests} requests, statuses ${JSON.stringify([...result.statuses].sort())}`);
  }, 240_000);

  it(`the executor: ${RUNS} requests, no 5xx, no canary in any answer or log line, still ready`, async () => {
    const result = await fuzz(
      {
        url: executor.url,
        validToken: () => executor.caller,
        logs: () => executor.logs(),
        ready: async () => (await fetch(`${executor.url}/readyz`)).status === 200,
      },
      EXECUTOR_ROUTES,
      SEED + 1,
    );
    expect(result.requests).toBe(RUNS);
    console.error(`executor fuzz: seed ${SEED + 1}, ${result.requests} requests, statuses ${JSON.stringify([...result.statuses].sort())}`);
  }, 240_000);
});

describe('generated nesting depth (fast-check, fixed seed)', () => {
  it(`the ledger: ${DEPTH_RUNS} bodies nested around and far past the bound — 401 without the credential, 400 nesting_too_deep with the path past it, never a 5xx`, async () => {
    const outcomes = await fuzzDepth(
      {
        url: ledger.url,
        validToken: (route) => (route.as === undefined || route.as === 'admin' ? ledger.adminToken : actors[route.as]),
        logs: () => ledger.logs(),
        ready: async () => (await fetch(`${ledger.url}/health`)).status === 200,
      },
      LEDGER_ROUTES,
      SEED + 2,
    );
    console.error(`ledger depth fuzz: seed ${SEED + 2}, outcomes ${JSON.stringify([...outcomes].sort())}`);
  }, 240_000);

  it(`the executor: ${DEPTH_RUNS} bodies nested around and far past the bound — 401 without the credential, 400 nesting_too_deep with the path past it, never a 5xx`, async () => {
    const outcomes = await fuzzDepth(
      {
        url: executor.url,
        validToken: (route) => (route.path.includes('reconciliation') ? executor.reconciliation : executor.caller),
        logs: () => executor.logs(),
        ready: async () => (await fetch(`${executor.url}/readyz`)).status === 200,
      },
      EXECUTOR_ROUTES,
      SEED + 3,
    );
    console.error(`executor depth fuzz: seed ${SEED + 3}, outcomes ${JSON.stringify([...outcomes].sort())}`);
  }, 240_000);
});
