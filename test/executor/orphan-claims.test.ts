import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateImages } from '../../src/agent/generate-images.js';
import { UserError } from '../../src/errors.js';
import { createExecutorClient } from '../../src/executor/client/executor-client.js';
import { executionIdFor } from '../../src/executor/domain/execution-states.js';
import { createLedgerClient } from '../../src/ledger/client/ledger-client.js';
import { createLedgerGateway } from '../../src/executor/ledger-gateway.js';
import { createOrphanClaimSweep, sweepIntervalMs } from '../../src/executor/orphan-claim-sweep.js';
import { until } from '../support/durable-stack.js';
import { executionRequest, startTestExecutor, type TestExecutor } from '../support/executor.js';
import { createFakeTime } from '../support/fake-time.js';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Orphan claims (docs/executions.md "Orphan claims"): the executor releases, as
 * `claim_without_execution`, its own claims older than the bound that it never turned into an
 * execution — and never one whose admission is under way or just completed. A real ledger and an
 * executor built by its composition root; a loopback relay between them holds a request or an
 * answer to stop admission or the sweep at an exact point.
 */

const BOUND_SECONDS = 300;

let ledger: TestLedger;
let actors: Actors;
let executor: TestExecutor | undefined;
let relay: Relay | undefined;

beforeEach(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
});

afterEach(async () => {
  await executor?.close();
  executor = undefined;
  await relay?.close();
  relay = undefined;
  await ledger.close();
});

async function approvedToken(): Promise<string> {
  const created = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
  });
  return created.body.authorization.token_id;
}

/** The claim admission makes, made by hand with the executor's credential: an admission that died after its claim. */
async function orphanClaim(credential: string): Promise<string> {
  const tokenId = await approvedToken();
  const claimed = await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: credential, body: { execution_id: executionIdFor(tokenId) } });
  expect(claimed.status).toBe(200);
  return tokenId;
}

const atLedger = async (tokenId: string) =>
  (await call<{ authorization: { status: string; execution_id: string | null; release: { reason: string } | null } }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: ledger.adminToken }))
    .body.authorization;

const submit = (s: TestExecutor, tokenId: string) =>
  call<{ execution?: { execution_id: string }; error?: { code: string; reason_code?: string; fields?: string[] } }>(s.url, 'POST', '/v2/executions', {
    token: s.caller,
    body: executionRequest(tokenId),
  });

/** A relay in front of the ledger that can hold requests (not yet forwarded) or answers (forwarded, not yet returned) whose path matches. */
interface Relay {
  readonly url: string;
  holdRequests(pattern: RegExp): void;
  holdAnswers(pattern: RegExp): void;
  /** How many requests or answers are held now. */
  held(): number;
  /** Lets everything held go on, and stops holding. */
  letGo(): void;
  close(): Promise<void>;
}

async function startRelay(target: string): Promise<Relay> {
  let requests: RegExp | null = null;
  let answers: RegExp | null = null;
  const waiting: (() => void)[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '';
      const holdAnswer = answers?.test(path) === true;
      const forward = () => {
        const upstream = http.request(`${target}${path}`, { method: request.method, headers: request.headers }, (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => body.push(chunk));
          answer.on('end', () => {
            const send = () => {
              response.writeHead(answer.statusCode ?? 502, answer.headers);
              response.end(Buffer.concat(body));
            };
            if (holdAnswer) waiting.push(send);
            else send();
          });
        });
        upstream.end(Buffer.concat(chunks));
      };
      if (requests?.test(path) === true) waiting.push(forward);
      else forward();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    holdRequests: (pattern) => {
      requests = pattern;
    },
    holdAnswers: (pattern) => {
      answers = pattern;
    },
    held: () => waiting.length,
    letGo() {
      requests = null;
      answers = null;
      for (const go of waiting.splice(0)) go();
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('the orphan-claim sweep', () => {
  beforeEach(async () => {
    executor = await startTestExecutor(ledger);
  });

  it('releases its own claim with no execution once older than the bound; an identical admission afterwards is a conflict naming the token and creates nothing', async () => {
    const s = executor as TestExecutor;
    const tokenId = await orphanClaim(s.ledgerCredential);

    // Younger than the bound: kept (an admission may still be on its way).
    expect(await s.orphanClaims.sweep()).toEqual({ released: 0, kept: 0, predating: 0, failed: false });
    expect((await atLedger(tokenId)).status).toBe('claimed');

    ledger.advance(BOUND_SECONDS * 1000 + 1_000);
    expect(await s.orphanClaims.sweep()).toEqual({ released: 1, kept: 0, predating: 0, failed: false });
    expect(await atLedger(tokenId)).toMatchObject({ status: 'released', execution_id: executionIdFor(tokenId), release: { reason: 'claim_without_execution' } });
    expect(s.logs().filter((line) => line.event === 'orphan_claim_released')).toEqual([
      expect.objectContaining({ token_id: tokenId, execution_id: executionIdFor(tokenId), reason: 'claim_without_execution' }),
    ]);
    // Idempotent: the next sweep finds nothing left to release.
    expect(await s.orphanClaims.sweep()).toEqual({ released: 0, kept: 0, predating: 0, failed: false });

    const retried = await submit(s, tokenId);
    expect(retried.status).toBe(409);
    expect(retried.body.error).toEqual({ code: 'conflict', reason_code: 'authorization_released', fields: ['spend_auth_token_id'] });
    expect(s.query('SELECT execution_id FROM executions')).toEqual([]);
  });

  it('keeps old claims it has an execution for, and never touches another credential\'s claims', async () => {
    const s = executor as TestExecutor;
    const admitted = await approvedToken();
    expect((await submit(s, admitted)).status).toBe(201);
    const foreign = await orphanClaim(actors.executor);
    ledger.advance(BOUND_SECONDS * 1000 + 1_000);
    expect(await s.orphanClaims.sweep()).toEqual({ released: 0, kept: 1, predating: 0, failed: false });
    expect((await atLedger(admitted)).status).toBe('claimed');
    expect((await atLedger(foreign)).status).toBe('claimed');
  });
});

describe('claims older than the executor database', () => {
  it('are never released (the database cannot know of executions admitted before it existed): each sweep names them for a human; later ones are released', async () => {
    const gateway = createLedgerGateway({ endpoint: ledger.url, credential: actors.executor });
    const events: Record<string, unknown>[] = [];
    const before = await orphanClaim(actors.executor);
    const listed = await gateway.claims({ olderThanSeconds: 0, after: null });
    const claimedAt = Date.parse(listed.claims.find((claim) => claim.token_id === before)?.claimed_at ?? '');
    expect(Number.isNaN(claimedAt)).toBe(false);
    // A database recreated (or upgraded) after that claim.
    const knownSince = claimedAt + 1;
    await until('the ledger clock past the database', () => Promise.resolve(Date.now() > knownSince ? true : undefined));
    const after = await orphanClaim(actors.executor);
    ledger.advance(BOUND_SECONDS * 1000 + 1_000);
    const sweep = createOrphanClaimSweep({
      ledger: gateway,
      store: { admission: () => undefined, execution: () => undefined },
      admission: { exclusively: async (_token, work) => ({ ran: true as const, value: await work() }) },
      releaseAfterSeconds: BOUND_SECONDS,
      knownSince,
      timers: createFakeTime().timers,
      log: { info: (entry) => events.push(entry), warn: (entry) => events.push(entry) },
    });
    try {
      expect(await sweep.sweep()).toEqual({ released: 1, kept: 0, predating: 1, failed: false });
      expect((await atLedger(before)).status).toBe('claimed');
      expect(await atLedger(after)).toMatchObject({ status: 'released', release: { reason: 'claim_without_execution' } });
      expect(events.filter((entry) => entry.event === 'orphan_claims_predate_database')).toEqual([
        { event: 'orphan_claims_predate_database', claims: 1, token_ids: [before], known_since: new Date(knownSince).toISOString() },
      ]);
      // Told again on every sweep while it stays claimed.
      expect(await sweep.sweep()).toEqual({ released: 0, kept: 0, predating: 1, failed: false });
    } finally {
      await sweep.stop();
      gateway.close();
    }
  });
});

describe('the sweep and admission of one token never race', () => {
  beforeEach(async () => {
    relay = await startRelay(ledger.url);
    const through = relay.url;
    executor = await startTestExecutor(ledger, { change: (config) => ((config.ledger as Record<string, unknown>).endpoint = through) });
  });

  it('skips a claim whose admission is under way (claimed at the ledger, its answer not yet back), which then becomes an execution', async () => {
    const s = executor as TestExecutor;
    const r = relay as Relay;
    const tokenId = await approvedToken();
    r.holdAnswers(/\/claim$/);
    const admission = submit(s, tokenId);
    await until('the claim committed at the ledger, its answer held', async () => ((await atLedger(tokenId)).status === 'claimed' && r.held() === 1 ? true : undefined));
    ledger.advance(BOUND_SECONDS * 1000 + 1_000);

    expect(await s.orphanClaims.sweep()).toEqual({ released: 0, kept: 1, predating: 0, failed: false });
    expect((await atLedger(tokenId)).status).toBe('claimed');

    r.letGo();
    expect((await admission).status).toBe(201);
    expect(await s.orphanClaims.sweep()).toEqual({ released: 0, kept: 1, predating: 0, failed: false });
    expect((await atLedger(tokenId)).status).toBe('claimed');
    expect(s.query('SELECT state FROM executions')).toEqual([{ state: 'scheduled' }]);
  });

  it('makes an admission of the token wait while it releases the claim; that admission then answers the conflict and creates nothing', async () => {
    const s = executor as TestExecutor;
    const r = relay as Relay;
    const tokenId = await orphanClaim(s.ledgerCredential);
    ledger.advance(BOUND_SECONDS * 1000 + 1_000);
    r.holdRequests(/\/release$/);
    const sweeping = s.orphanClaims.sweep();
    await until('the release on its way, held', () => Promise.resolve(r.held() === 1 ? true : undefined));

    const claims = () => ledger.logs().filter((line) => line.route === '/executor/authorizations/:token_id/claim').length;
    const claimsBefore = claims();
    const admission = submit(s, tokenId);
    // The admission waits for the sweep: it does not ask the ledger to claim meanwhile. (The pause
    // only gives an admission that does not wait the time to show it; a waiting one passes at any speed.)
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(claims()).toBe(claimsBefore);
    expect(r.held()).toBe(1);

    r.letGo();
    expect(await sweeping).toEqual({ released: 1, kept: 0, predating: 0, failed: false });
    const answered = await admission;
    expect(answered.status).toBe(409);
    expect(answered.body.error).toEqual({ code: 'conflict', reason_code: 'authorization_released', fields: ['spend_auth_token_id'] });
    expect(s.query('SELECT execution_id FROM executions')).toEqual([]);
    expect(await atLedger(tokenId)).toMatchObject({ status: 'released', release: { reason: 'claim_without_execution' } });
  });
});

describe('what an agent is told', () => {
  beforeEach(async () => {
    executor = await startTestExecutor(ledger);
  });

  it('generate_images retrying an admission whose orphan claim is released meanwhile: the hold was released, request a new authorization (not "used by another job")', async () => {
    const s = executor as TestExecutor;
    const tokenId = await orphanClaim(s.ledgerCredential);
    // Still claimed when the agent reads it, so the call goes on to admission — which is not admitting.
    s.readiness.withdraw('test');
    const progress: string[] = [];
    const target = { ledger: createLedgerClient({ url: ledger.url, token: actors.agent }), executor: createExecutorClient({ url: s.url, token: s.caller }), profile: null };
    const call = generateImages(target, { prompt: 'a lighthouse at dusk', image_count: 2, image_size: 'square_hd', authorization_id: tokenId }, {
      progress: (message) => progress.push(message),
      signal: new AbortController().signal,
    }).then(
      () => null,
      (error: unknown) => error,
    );
    await until('the agent retrying a not-ready executor', () => Promise.resolve(progress.some((line) => line.includes('not admitting')) ? true : undefined));
    ledger.advance(BOUND_SECONDS * 1000 + 1_000);
    expect(await s.orphanClaims.sweep()).toMatchObject({ released: 1 });
    s.readiness.restore();

    const error = await call;
    expect(error).toBeInstanceOf(UserError);
    expect(error).toMatchObject({ code: 'authorization_released' });
    expect((error as UserError).message).toContain('never created an execution for it (claim_without_execution)');
    expect((error as UserError).nextStep).toBe('Call generate_images without authorization_id to request a new authorization.');
    expect(s.query('SELECT execution_id FROM executions')).toEqual([]);
  });
});

describe('the sweep on its timer', () => {
  it('sweeps at start and then every interval, never overlapping itself, and carries on when the ledger is away', async () => {
    const time = createFakeTime();
    const events: Record<string, unknown>[] = [];
    const log = { info: (entry: Record<string, unknown>) => events.push(entry), warn: (entry: Record<string, unknown>) => events.push(entry) };
    // A ledger that is not there: a port that was just closed.
    const closed = await startRelay(ledger.url);
    await closed.close();
    const gateway = createLedgerGateway({ endpoint: closed.url, credential: actors.executor, timeoutMs: 2_000 });
    let listings = 0;
    const sweep = createOrphanClaimSweep({
      ledger: {
        claims: (query) => {
          listings += 1;
          return gateway.claims(query);
        },
        release: (...args) => gateway.release(...args),
      },
      store: { admission: () => undefined, execution: () => undefined },
      admission: { exclusively: async (_token, work) => ({ ran: true as const, value: await work() }) },
      releaseAfterSeconds: 15,
      knownSince: 0,
      timers: time.timers,
      log,
    });
    try {
      sweep.start();
      // Asked at once, not after the first interval; a sweep asked for meanwhile joins it.
      expect(listings).toBe(1);
      const joined = sweep.sweep();
      await until('the first sweep ended', () => Promise.resolve(events.length === 1 ? true : undefined));
      expect(await joined).toEqual({ released: 0, kept: 0, predating: 0, failed: true });
      expect(listings).toBe(1);
      expect(events).toEqual([{ event: 'orphan_claim_sweep_failed', reason: 'ledger_unavailable', released: 0 }]);
      // Next one interval after the last ended: 15 s / 3.
      await until('the next sweep scheduled', () => Promise.resolve(time.pending() === 1 ? true : undefined));
      expect(time.pendingDelays()).toEqual([sweepIntervalMs(15)]);
      expect(sweepIntervalMs(15)).toBe(5_000);
      expect(sweepIntervalMs(300)).toBe(60_000);
      await time.advance(5_000);
      await until('the second sweep ended', () => Promise.resolve(events.length === 2 ? true : undefined));
      expect(listings).toBe(2);
    } finally {
      await sweep.stop();
      gateway.close();
    }
    // Stopped: nothing further is scheduled.
    await until('no timer left', () => Promise.resolve(time.pending() === 0 ? true : undefined));
  });
});
