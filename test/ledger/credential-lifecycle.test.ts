import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { capabilityDigest, generateCapability, type CredentialKind } from '../../src/credentials/capability.js';
import { writePrivateFile } from '../../src/credentials/private-file.js';
import { composeLedger } from '../../src/ledger/compose-ledger.js';
import { LEDGER_ACTOR } from '../../src/ledger/store/audit-store.js';
import type { LedgerCredential } from '../../src/ledger/wire/answers.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { call, DEFAULT_POLICY, ledgerPerTest, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * The credential lifecycle at the ledger (docs/ledger.md "Credentials"): every credential listed
 * with its id, kind, agent, times and status; a revocation refused from the very next request;
 * a rotation with a grace during which both capabilities work; never the last admin credential;
 * a rotated line stays registrable (bootstrap idempotence) and keeps its executor claims.
 */

let ledger: TestLedger;
let actors: Actors;
ledgerPerTest((its, theirs) => {
  ledger = its;
  actors = theirs;
});

const admin = (method: string, path: string, body?: unknown) => call(ledger.url, method, path, { token: ledger.adminToken, body });

/** Registers a new capability; returns its id and the capability (as a client keeps it). */
async function issue(kind: Exclude<CredentialKind, 'admin' | 'caller'>, agentId?: string): Promise<{ id: string; token: string }> {
  const id = `cred_${randomUUID()}`;
  const token = generateCapability(kind);
  const result = await admin('PUT', `/credentials/${id}`, { kind, agent_id: agentId, digest_sha256: capabilityDigest(token).toString('hex') });
  expect(result.status).toBe(201);
  return { id, token };
}

const digestOf = (token: string) => capabilityDigest(token).toString('hex');
const idOf = async (token: string) => (await call<{ credential: LedgerCredential }>(ledger.url, 'GET', '/credentials/self', { token })).body.credential.credential_id;
const spending = (token: string) => call(ledger.url, 'GET', '/agent/spending', { token });
const request = (token: string) => call(ledger.url, 'POST', '/authorizations', { token, body: { amount_units: '100000', units_scale: 6, currency: 'USD' } });

async function rotate(id: string, options: { grace?: number; newId?: string; token?: string; caller?: string } = {}) {
  const token = options.token ?? generateCapability('agent');
  const body: Record<string, unknown> = { new_credential_id: options.newId ?? `cred_${randomUUID()}`, digest_sha256: digestOf(token) };
  if (options.grace !== undefined) body.grace_seconds = options.grace;
  const result = await call<{ credential: LedgerCredential; replaced: LedgerCredential; outcome: string }>(ledger.url, 'POST', `/credentials/${id}/rotate`, {
    token: options.caller ?? ledger.adminToken,
    body,
  });
  return { ...result, token };
}

describe('listing credentials', () => {
  it('shows every credential with its id, kind, agent, times and status, and never a capability or digest', async () => {
    const listed = await call<{ credentials: LedgerCredential[] }>(ledger.url, 'GET', '/credentials', { token: ledger.adminToken });
    expect(listed.status).toBe(200);
    expect(listed.body.credentials.map((credential) => credential.kind).sort()).toEqual(['admin', 'agent', 'approver', 'executor', 'reconciliation']);
    const agent = listed.body.credentials.find((credential) => credential.kind === 'agent');
    expect(agent).toMatchObject({ agent_id: actors.agentId, status: 'active', holder_name: null, expires_at: null, revoked_at: null, rotated_from: null, replaced_by: null });
    expect(agent?.lineage).toBe(agent?.credential_id);
    const text = JSON.stringify(listed.body);
    expect(text).not.toMatch(/lexec_[a-z]+_/);
    expect(text).not.toContain(digestOf(actors.agent));
    expect(text).not.toContain(digestOf(actors.agent).slice(0, 16));

    const ofAgent = await call<{ credentials: LedgerCredential[] }>(ledger.url, 'GET', `/credentials?agent_id=${actors.agentId}`, { token: ledger.adminToken });
    expect(ofAgent.body.credentials.map((credential) => credential.kind)).toEqual(['agent']);
    const approvers = await call<{ credentials: LedgerCredential[] }>(ledger.url, 'GET', '/credentials?kind=approver', { token: ledger.adminToken });
    expect(approvers.body.credentials.map((credential) => credential.kind)).toEqual(['approver']);
    // Only the admin lists; bad filters are named.
    expect((await call(ledger.url, 'GET', '/credentials', { token: actors.approver })).status).toBe(401);
    const bad = await call<{ error: { fields: string[] } }>(ledger.url, 'GET', '/credentials?kind=caller&colour=red', { token: ledger.adminToken });
    expect(bad.status).toBe(400);
    expect(bad.body.error.fields.sort()).toEqual(['colour', 'kind']);
  });

  it('records the last use to the minute, once a minute', async () => {
    const id = await idOf(actors.agent);
    const lastUsed = async () => (await admin('GET', `/credentials/${id}`)).body as { credential: LedgerCredential };
    const first = (await lastUsed()).credential.last_used_at;
    expect(first).not.toBeNull();
    expect(new Date(first ?? '').getUTCSeconds()).toBe(0);
    expect(new Date(first ?? '').getUTCMilliseconds()).toBe(0);
    ledger.advance(3 * 60_000);
    expect((await spending(actors.agent)).status).toBe(200);
    const later = (await lastUsed()).credential.last_used_at;
    expect(Date.parse(later ?? '') - Date.parse(first ?? '')).toBeGreaterThanOrEqual(3 * 60_000);
    // A credential never used since uses were recorded shows null.
    const fresh = await issue('approver');
    expect(((await admin('GET', `/credentials/${fresh.id}`)).body as { credential: LedgerCredential }).credential.last_used_at).toBeNull();
  });

  it('tells any holder which credential it holds (GET /credentials/self), and nothing to a stranger', async () => {
    for (const token of [ledger.adminToken, actors.agent, actors.approver, actors.executor, actors.reconciliation]) {
      const self = await call<{ credential: LedgerCredential }>(ledger.url, 'GET', '/credentials/self', { token });
      expect(self.status).toBe(200);
      expect(token.startsWith(`lexec_${self.body.credential.kind}_`)).toBe(true);
    }
    expect((await call(ledger.url, 'GET', '/credentials/self', { token: generateCapability('agent') })).status).toBe(401);
  });
});

describe('revoking a credential', () => {
  it('refuses the capability from its next request on, everywhere; a repeat changes nothing', async () => {
    const id = await idOf(actors.agent);
    expect((await request(actors.agent)).status).toBe(201);
    const revoked = await admin('POST', `/credentials/${id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ changed: true, credential: { credential_id: id, status: 'revoked' } });
    expect((await request(actors.agent)).status).toBe(401);
    expect((await spending(actors.agent)).status).toBe(401);
    expect((await call(ledger.url, 'GET', '/credentials/self', { token: actors.agent })).status).toBe(401);

    const again = await admin('POST', `/credentials/${id}/revoke`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ changed: false, credential: { revoked_at: (revoked.body as { credential: LedgerCredential }).credential.revoked_at } });
    // A revoked credential is never registered again, even with its own digest.
    const back = await admin('PUT', `/credentials/${id}`, { kind: 'agent', agent_id: actors.agentId, digest_sha256: digestOf(actors.agent) });
    expect(back).toMatchObject({ status: 409, body: { error: { code: 'conflict', reason_code: 'credential_revoked' } } });
    expect((await request(actors.agent)).status).toBe(401);
  });

  it('refuses unknown ids and bad bodies, changing nothing', async () => {
    expect((await admin('POST', '/credentials/cred_nobody/revoke')).status).toBe(404);
    const id = await idOf(actors.approver);
    const bad = await admin('POST', `/credentials/${id}/revoke`, { now: true });
    expect(bad).toMatchObject({ status: 400, body: { error: { fields: ['now'] } } });
    expect((await call(ledger.url, 'GET', '/approvals', { token: actors.approver })).status).toBe(200);
    expect((await call(ledger.url, 'POST', `/credentials/${id}/revoke`, { token: actors.approver })).status).toBe(401);
  });

  it('never revokes the last admin credential', async () => {
    const refused = await admin('POST', '/credentials/admin/revoke');
    expect(refused).toMatchObject({ status: 409, body: { error: { reason_code: 'last_admin_credential' } } });
    expect((await admin('GET', '/agents')).status).toBe(200);
    // Rotated with a grace: the new admin works, the old one until the grace ends; the new one is
    // now the last that is not revoked, and the old one can be revoked at once.
    const rotated = await rotate('admin', { grace: 600, token: generateCapability('admin') });
    expect(rotated.status).toBe(201);
    expect((await call(ledger.url, 'GET', '/agents', { token: rotated.token })).status).toBe(200);
    expect((await admin('GET', '/agents')).status).toBe(200);
    expect((await call(ledger.url, 'POST', `/credentials/${rotated.body.credential.credential_id}/revoke`, { token: rotated.token })).body).toMatchObject({
      error: { reason_code: 'last_admin_credential' },
    });
    expect((await call(ledger.url, 'POST', '/credentials/admin/revoke', { token: rotated.token })).body).toMatchObject({ changed: true });
    expect((await admin('GET', '/agents')).status).toBe(401);
  });
});

describe('rotating a credential', () => {
  it('gives a new capability of the same kind and agent; both work during the grace, the old one is refused after it', async () => {
    const id = await idOf(actors.agent);
    const rotated = await rotate(id, { grace: 120 });
    expect(rotated.status).toBe(201);
    const { credential, replaced } = rotated.body;
    expect(credential).toMatchObject({ kind: 'agent', agent_id: actors.agentId, status: 'active', lineage: id, rotated_from: id });
    expect(replaced).toMatchObject({ credential_id: id, status: 'expiring', replaced_by: credential.credential_id, revoked_at: null });
    expect(Date.parse(replaced.expires_at ?? '') - Date.now()).toBeGreaterThan(100_000);
    expect((await request(actors.agent)).status).toBe(201);
    expect((await request(rotated.token)).status).toBe(201);

    ledger.advance(121_000);
    expect((await request(actors.agent)).status).toBe(401);
    expect((await request(rotated.token)).status).toBe(201);
    expect(((await admin('GET', `/credentials/${id}`)).body as { credential: LedgerCredential }).credential.status).toBe('revoked');
  });

  it('answers the same rotation asked again with the same credential; refuses a second rotation, a revoked one and bad input', async () => {
    const id = await idOf(actors.approver);
    const newId = `cred_${randomUUID()}`;
    const token = generateCapability('approver');
    const first = await rotate(id, { newId, token, grace: 30 });
    expect(first.status).toBe(201);
    const again = await rotate(id, { newId, token, grace: 30 });
    expect(again.status).toBe(200);
    expect(again.body.outcome).toBe('unchanged');
    expect(again.body.credential.credential_id).toBe(newId);
    expect((await rotate(id)).body).toMatchObject({ error: { reason_code: 'credential_already_rotated' } });
    expect((await rotate(id, { newId })).body).toMatchObject({ error: { reason_code: 'credential_exists', fields: ['new_credential_id'] } });

    const revoked = await issue('reconciliation');
    await admin('POST', `/credentials/${revoked.id}/revoke`);
    expect((await rotate(revoked.id)).body).toMatchObject({ error: { reason_code: 'credential_revoked' } });
    expect((await rotate('cred_nobody')).status).toBe(404);
    // The new digest may not be one the ledger already holds.
    const other = await issue('approver');
    expect((await rotate(other.id, { token: actors.agent })).body).toMatchObject({ error: { reason_code: 'credential_exists', fields: ['digest_sha256'] } });

    const before = ledger.query('SELECT COUNT(*) AS n FROM credentials');
    for (const grace of [86_401, -1, 1.5, '60']) {
      const result = await call<{ error: { fields: string[] } }>(ledger.url, 'POST', `/credentials/${other.id}/rotate`, {
        token: ledger.adminToken,
        body: { new_credential_id: `cred_${randomUUID()}`, digest_sha256: digestOf(generateCapability('approver')), grace_seconds: grace },
      });
      expect(result.status).toBe(400);
      expect(result.body.error.fields).toEqual(['grace_seconds']);
    }
    const missing = await call<{ error: { fields: string[] } }>(ledger.url, 'POST', `/credentials/${other.id}/rotate`, { token: ledger.adminToken, body: { digest_sha256: 'xyz' } });
    expect(missing.body.error.fields.sort()).toEqual(['digest_sha256', 'new_credential_id']);
    expect(ledger.query('SELECT COUNT(*) AS n FROM credentials')).toEqual(before);
    expect((await call(ledger.url, 'GET', '/approvals', { token: other.token })).status).toBe(200);
  });

  it("keeps a line registrable under its first id with the current capability, and refuses any other capability there", async () => {
    const id = await idOf(actors.executor);
    const rotated = await rotate(id, { token: generateCapability('executor') });
    const again = await admin('PUT', `/credentials/${id}`, { kind: 'executor', digest_sha256: digestOf(rotated.token) });
    expect(again).toMatchObject({ status: 200, body: { outcome: 'unchanged', credential: { credential_id: rotated.body.credential.credential_id } } });
    const foreign = await admin('PUT', `/credentials/${id}`, { kind: 'executor', digest_sha256: digestOf(generateCapability('executor')) });
    expect(foreign).toMatchObject({ status: 409, body: { error: { reason_code: 'credential_exists' } } });
    // The old capability of the line is not "current": no grace was given, so it is refused.
    const old = await admin('PUT', `/credentials/${id}`, { kind: 'executor', digest_sha256: digestOf(actors.executor) });
    expect(old).toMatchObject({ status: 409, body: { error: { reason_code: 'credential_revoked' } } });
  });

  it("keeps an executor's claims its own across a rotation: listed and released with the new credential", async () => {
    const created = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
      token: actors.agent,
      body: { amount_units: '100000', units_scale: 6, currency: 'USD' },
    });
    const tokenId = created.body.authorization.token_id;
    const execution = `exe_${randomUUID().replaceAll('-', '')}`;
    expect((await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: { execution_id: execution } })).status).toBe(200);
    const rotated = await rotate(await idOf(actors.executor), { token: generateCapability('executor') });
    ledger.advance(120_000);
    const listed = await call<{ claims: { token_id: string }[] }>(ledger.url, 'GET', '/executor/claims?older_than_seconds=60', { token: rotated.token });
    expect(listed.body.claims.map((claim) => claim.token_id)).toEqual([tokenId]);
    const released = await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/release`, {
      token: rotated.token,
      body: { execution_id: execution, reason: 'claim_without_execution' },
    });
    expect(released.status).toBe(200);
  });
});

describe('the audit trail', () => {
  it('records a revocation and a rotation (with the new credential) by the admin who made them, in their transactions; nothing for a repeat', async () => {
    const agent = await idOf(actors.agent);
    const rotated = await rotate(await idOf(actors.approver), { grace: 30, token: generateCapability('approver') });
    await admin('POST', `/credentials/${agent}/revoke`);
    await admin('POST', `/credentials/${agent}/revoke`);
    const events = (await admin('GET', '/audit?limit=500')).body as { events: { action: string; subject_id: string; actor_credential_id: string | null; before: unknown; after: Record<string, string> | null }[] };
    const credentialEvents = events.events.filter((event) => ['credential_revoked', 'credential_rotated'].includes(event.action) || (event.action === 'credential_registered' && event.after?.rotated_from !== undefined));
    expect(credentialEvents).toEqual([
      expect.objectContaining({ action: 'credential_registered', subject_id: rotated.body.credential.credential_id, actor_credential_id: 'admin', after: expect.objectContaining({ rotated_from: rotated.body.replaced.credential_id }) as unknown }),
      expect.objectContaining({ action: 'credential_rotated', subject_id: rotated.body.replaced.credential_id, actor_credential_id: 'admin', after: expect.objectContaining({ replaced_by: rotated.body.credential.credential_id, grace_seconds: '30' }) as unknown }),
      expect.objectContaining({ action: 'credential_revoked', subject_id: agent, actor_credential_id: 'admin', before: { status: 'active' } }),
    ]);
    expect(JSON.stringify(events)).not.toMatch(/lexec_[a-z]+_/);
  });
});

describe('the store', () => {
  it("never changes a credential's identity and never deletes one", () => {
    const db = new Database(ledger.databasePath);
    try {
      const before = db.prepare('SELECT * FROM credentials ORDER BY credential_id').all();
      expect(before).toHaveLength(5);
      expect(() => db.prepare("UPDATE credentials SET digest = zeroblob(32) WHERE credential_id = 'admin'").run()).toThrow(/identity never changes/);
      expect(() => db.prepare("UPDATE credentials SET kind = 'approver' WHERE kind = 'agent'").run()).toThrow(/identity never changes/);
      expect(() => db.prepare('DELETE FROM credentials').run()).toThrow(/never deleted/);
      expect(db.prepare('SELECT * FROM credentials ORDER BY credential_id').all()).toEqual(before);
    } finally {
      db.close();
    }
  });
});

describe("the ledger's own admin capability file at start", () => {
  it('starts with a file whose credential was rotated away, saying so; refuses a file of another installation', async () => {
    const dir = await makeTempDir('lexec-ledger-admin-');
    const config = {
      database_path: join(dir, 'ledger.db'),
      admin_capability_path: join(dir, 'credentials', 'admin.capability'),
      contract_level: 'v4.5' as const,
      authorization_ttl_seconds: 3600,
      default_policy: DEFAULT_POLICY,
    };
    try {
      const first = await composeLedger({ config, logger: pino({ level: 'silent' }) });
      expect(first.adminCapability).toBe('created');
      first.credentials.rotate('admin', { newCredentialId: 'admin-2', digest: capabilityDigest(generateCapability('admin')), graceSeconds: 0 }, LEDGER_ACTOR);
      first.close();

      const second = await composeLedger({ config, logger: pino({ level: 'silent' }) });
      expect(second.adminCapability).toBe('revoked');
      second.close();

      await writePrivateFile(config.admin_capability_path, `${generateCapability('admin')}\n`);
      await expect(composeLedger({ config, logger: pino({ level: 'silent' }) })).rejects.toMatchObject({ code: 'admin_capability_mismatch' });
    } finally {
      await removeDir(dir);
    }
  });
});
