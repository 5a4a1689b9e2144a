import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { capabilityDigest, generateCapability } from '../../src/credentials/capability.js';
import { composeLedger } from '../../src/ledger/compose-ledger.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { call, mintCredential, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';

/*
 * The ledger's side of orphan claims (docs/ledger.md "Orphan claims"): a claim records the
 * executor credential that made it (migration 4), `GET /executor/claims` lists the caller's own
 * claims older than an age, and a `claim_without_execution` release is accepted from the claimant
 * only, for a claim still held by the execution it names.
 */

interface ClaimsPage {
  claims: { token_id: string; execution_id: string; claimed_at: string }[];
  next_after: string | null;
  error?: { code: string; fields?: string[] };
}

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

async function claimedToken(executorToken = actors.executor): Promise<{ token: string; execution: string }> {
  const created = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
  });
  const token = created.body.authorization.token_id;
  const execution = `exe_${randomUUID().replaceAll('-', '')}`;
  const claimed = await call(ledger.url, 'POST', `/executor/authorizations/${token}/claim`, { token: executorToken, body: { execution_id: execution } });
  expect(claimed.status).toBe(200);
  return { token, execution };
}

const claims = (query: string, token = actors.executor) => call<ClaimsPage>(ledger.url, 'GET', `/executor/claims${query}`, { token });
const release = (claim: { token: string; execution: string }, token = actors.executor, reason = 'claim_without_execution') =>
  call<{ replayed: boolean; authorization: { status: string; release: { reason: string } | null }; error?: { code: string; reason_code?: string } }>(
    ledger.url,
    'POST',
    `/executor/authorizations/${claim.token}/release`,
    { token, body: { execution_id: claim.execution, reason } },
  );

describe('an executor lists its own claims', () => {
  it('records the claiming credential and lists only that credential\'s claims, still claimed, at least the given age old', async () => {
    const other = await mintCredential(ledger, 'executor');
    const mine = await claimedToken();
    const theirs = await claimedToken(other);
    expect(ledger.query('SELECT claimed_by IS NOT NULL AS recorded FROM authorizations WHERE token_id = ?', mine.token)).toEqual([{ recorded: 1n }]);

    // Too young yet: a claim is listed only once it is older than the age asked for.
    expect((await claims('?older_than_seconds=60')).body).toEqual({ claims: [], next_after: null });
    ledger.advance(61_000);
    const listed = await claims('?older_than_seconds=60');
    expect(listed.status).toBe(200);
    expect(listed.body.claims.map((claim) => [claim.token_id, claim.execution_id])).toEqual([[mine.token, mine.execution]]);
    expect((await claims('?older_than_seconds=60', other)).body.claims.map((claim) => claim.token_id)).toEqual([theirs.token]);

    // A settled or released claim is no longer listed.
    expect((await release(mine)).status).toBe(200);
    expect((await claims('?older_than_seconds=0')).body.claims).toEqual([]);
  });

  it('pages in token id order: next_after continues the listing without repeating or skipping a claim', async () => {
    const made = [];
    for (let i = 0; i < 5; i += 1) made.push(await claimedToken());
    const seen: string[] = [];
    let after = '';
    for (let pages = 0; pages < 10; pages += 1) {
      const page = await claims(`?older_than_seconds=0&limit=2${after === '' ? '' : `&after=${after}`}`);
      expect(page.body.claims.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.claims.map((claim) => claim.token_id));
      if (page.body.next_after === null) break;
      after = page.body.next_after;
    }
    expect(seen).toEqual(made.map((claim) => claim.token).sort());
  });

  it('refuses a malformed query with the field paths at fault, never echoing the values', async () => {
    for (const [query, fields] of [
      ['', ['older_than_seconds']],
      ['?older_than_seconds=1e3', ['older_than_seconds']],
      ['?older_than_seconds=-5', ['older_than_seconds']],
      ['?older_than_seconds=99999999', ['older_than_seconds']],
      ['?older_than_seconds=60&limit=0', ['limit']],
      ['?older_than_seconds=60&limit=501', ['limit']],
      ['?older_than_seconds=60&after=sk-not-a-token', ['after']],
      ['?older_than_seconds=60&older_than_seconds=61', ['older_than_seconds']],
      ['?older_than_seconds=60&status=claimed', ['status']],
    ] as const) {
      const refused = await claims(query);
      expect(refused.status, query).toBe(400);
      expect(refused.body.error).toEqual({ code: 'invalid_request', fields });
      expect(JSON.stringify(refused.body)).not.toContain('sk-not-a-token');
    }
  });

  it('admits only an executor credential', async () => {
    for (const token of [ledger.adminToken, actors.agent, actors.approver, actors.reconciliation]) {
      expect((await claims('?older_than_seconds=0', token)).status).toBe(401);
    }
  });
});

describe('a repeated claim', () => {
  it('is a replay for its claimant, and refused from another executor credential (two executors on one ledger given the same token)', async () => {
    const other = await mintCredential(ledger, 'executor');
    const claim = await claimedToken();
    const again = (token: string) => call<{ replayed?: boolean; error?: { code: string; reason_code?: string } }>(ledger.url, 'POST', `/executor/authorizations/${claim.token}/claim`, { token, body: { execution_id: claim.execution } });
    const foreign = await again(other);
    expect(foreign.status).toBe(409);
    expect(foreign.body.error).toMatchObject({ code: 'conflict', reason_code: 'claimed_by_another_credential' });
    const replay = await again(actors.executor);
    expect(replay.status).toBe(200);
    expect(replay.body.replayed).toBe(true);
    // The claim still belongs to the first credential: only its listing shows it.
    expect((await claims('?older_than_seconds=0&limit=500')).body.claims.map((listed) => listed.token_id)).toContain(claim.token);
    expect((await claims('?older_than_seconds=0&limit=500', other)).body.claims.map((listed) => listed.token_id)).not.toContain(claim.token);
  });
});

describe('a claim_without_execution release', () => {
  it('is accepted from the claimant for the execution the claim names, once; a repeat is a replay', async () => {
    const claim = await claimedToken();
    const released = await release(claim);
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ replayed: false, authorization: { status: 'released', release: { reason: 'claim_without_execution' } } });
    expect((await release(claim)).body).toMatchObject({ replayed: true, authorization: { status: 'released' } });
  });

  it('is refused from another executor credential, for another execution, and for a settled authorization', async () => {
    const other = await mintCredential(ledger, 'executor');
    const claim = await claimedToken();
    const foreign = await release(claim, other);
    expect(foreign.status).toBe(409);
    expect(foreign.body.error).toMatchObject({ code: 'conflict', reason_code: 'claimed_by_another_credential' });
    const elsewhere = await release({ token: claim.token, execution: 'exe_someone_else' });
    expect(elsewhere.body.error).toMatchObject({ code: 'conflict', reason_code: 'claimed_by_another_execution' });
    expect(ledger.query('SELECT status FROM authorizations WHERE token_id = ?', claim.token)).toEqual([{ status: 'claimed' }]);
    // Other reasons stay as they were: any executor credential that names the claiming execution.
    expect((await release(claim, other, 'not_transmitted')).status).toBe(200);
  });
});

describe('ledger migration 4 (claims keep their claimant)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await makeTempDir('lexec-ledger-m4-');
  });
  afterEach(async () => {
    await removeDir(dir);
  });

  /** A version-3 ledger database with `executors` executor credentials and one claim. */
  function version3(executors: number): string {
    const path = join(dir, `ledger-${String(executors)}.db`);
    const db = openDatabase(path, LEDGER_MIGRATIONS.filter((migration) => migration.version <= 3));
    db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
    db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_1', 'bot', 'active', 0)").run();
    for (let i = 0; i < executors; i += 1) {
      const digest = capabilityDigest(generateCapability('executor'));
      db.prepare("INSERT INTO credentials (credential_id, kind, agent_id, lookup, digest, created_at) VALUES (?, 'executor', NULL, ?, ?, 0)").run(`cred_${String(i)}`, digest.subarray(0, 8).toString('hex'), digest);
    }
    db.prepare(
      `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, execution_id, created_at, claimed_at, expires_at)
       VALUES (?, 'acct_1', 'agt_1', 900000, 6, 'USD', 90, 'claimed', 'exe_1', 0, 0, 9999999999999)`,
    ).run(randomUUID());
    db.close();
    return path;
  }

  it('attributes older claims to the only executor credential; with several it leaves them to a human and counts them at start (serve logs ledger_unattributed_claims)', async () => {
    const single = openDatabase(version3(1), LEDGER_MIGRATIONS);
    expect(single.prepare('SELECT claimed_by FROM authorizations').all()).toEqual([{ claimed_by: 'cred_0' }]);
    single.close();

    const path = version3(2);
    const several = openDatabase(path, LEDGER_MIGRATIONS);
    expect(several.prepare('SELECT claimed_by FROM authorizations').all()).toEqual([{ claimed_by: null }]);
    several.close();
    const composed = await composeLedger({
      config: {
        database_path: path,
        admin_capability_path: join(dir, 'credentials', 'admin.capability'),
        contract_level: 'v4.5',
        authorization_ttl_seconds: 3600,
        default_policy: { per_authorization_cap_units: 5_000_000n, daily_cap_units: 20_000_000n, approval_threshold_units: 1_000_000n },
      },
      logger: pino({ level: 'silent' }),
    });
    expect(composed.unattributedClaims).toBe(1);
    composed.close();
  });
});
