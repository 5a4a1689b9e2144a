import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { capabilityDigest, generateCapability } from '../../src/credentials/capability.js';
import { BugError } from '../../src/errors.js';
import { createAuditStore, MAX_AUDIT_REASON } from '../../src/ledger/store/audit-store.js';
import type { LedgerAuditPage } from '../../src/ledger/wire/answers.js';
import { call, preciseReceipt, TEST_ADMIN, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';
import { distinctive, secretShapeExamples } from '../support/secret-shapes.js';

/*
 * Issue 27 item 6 at the ledger: every operator action is appended to the audit trail in the
 * transaction of the change — who (the credential and its kind, or the ledger itself), what,
 * when, before and after — and `GET /audit` (admin) pages it oldest first. An idempotent repeat
 * or a refused change records nothing; the table refuses UPDATE and DELETE; no capability or
 * secret-shaped text reaches it. A real ledger app on a real SQLite file.
 */

type AuditPage = LedgerAuditPage & { error?: { code: string; reason_code?: string; fields?: string[] } };

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

const audit = (query = '', token = ledger.adminToken) => call<AuditPage>(ledger.url, 'GET', `/audit${query}`, { token });
/** The newest audit id now: what a test reads after, to see only the events its own actions made. */
const mark = () => String(ledger.query<{ id: bigint | null }>('SELECT MAX(audit_id) AS id FROM audit_events')[0]?.id ?? 0n);
const eventsAfter = async (after: string) => {
  const page = await audit(`?after=${after}`);
  expect(page.status).toBe(200);
  return page.body.events;
};
const credentialOf = (kind: string) => ledger.query<{ credential_id: string }>('SELECT credential_id FROM credentials WHERE kind = ?', kind)[0]?.credential_id ?? '';
const admin = { actor_kind: 'admin', actor_credential_id: 'admin', actor_name: null };
const post = (path: string, body: unknown = {}, token = ledger.adminToken) => call(ledger.url, 'POST', path, { token, body });

/** The event of a suspension of the test's agent that cancelled one authorization. */
const suspensionEvent = (actor: typeof admin | { actor_kind: string; actor_credential_id: null; actor_name: null }, by: string, reason: string, at: unknown) => ({
  ...actor,
  audit_id: expect.any(String) as unknown,
  at,
  action: 'agent_suspended',
  agent_id: actors.agentId,
  subject_id: actors.agentId,
  before: { status: 'active' },
  after: { status: 'suspended', suspended_by: by, cancelled_authorizations: 1 },
  reason,
});

async function requestAuthorization(amountUnits: string): Promise<string> {
  const answer = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'a poster' },
  });
  expect(answer.status).toBe(201);
  return answer.body.authorization.token_id;
}

describe('the audit trail of operator actions', () => {
  it('records the ledger\'s own admin credential, the agent added and each credential registered; an unchanged or conflicting registration records nothing', async () => {
    const { events } = (await audit()).body;
    expect(events.map((event) => [event.action, event.actor_kind, event.actor_credential_id, event.subject_id])).toEqual([
      ['credential_registered', 'ledger', null, 'admin'],
      ['agent_added', 'admin', 'admin', actors.agentId],
      ['credential_registered', 'admin', 'admin', credentialOf('agent')],
      ['credential_registered', 'admin', 'admin', credentialOf('approver')],
      ['credential_registered', 'admin', 'admin', credentialOf('executor')],
      ['credential_registered', 'admin', 'admin', credentialOf('reconciliation')],
    ]);
    expect(events.map((event) => Number(event.audit_id))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(events[1]).toMatchObject({ agent_id: actors.agentId, before: null, after: { name: 'bot', status: 'active', policy_version: '1' }, reason: null, actor_name: null });
    expect(events[2]).toMatchObject({ agent_id: actors.agentId, before: null, after: { kind: 'agent' } });
    expect(events[3]).toMatchObject({ agent_id: null, after: { kind: 'approver' } });

    const before = mark();
    const token = generateCapability('approver');
    const body = { kind: 'approver', digest_sha256: capabilityDigest(token).toString('hex') };
    const id = `cred_${randomUUID()}`;
    expect((await call(ledger.url, 'PUT', `/credentials/${id}`, { token: ledger.adminToken, body })).status).toBe(201);
    expect((await call(ledger.url, 'PUT', `/credentials/${id}`, { token: ledger.adminToken, body })).status).toBe(200);
    const other = { ...body, digest_sha256: capabilityDigest(generateCapability('approver')).toString('hex') };
    expect((await call(ledger.url, 'PUT', `/credentials/${id}`, { token: ledger.adminToken, body: other })).status).toBe(409);
    expect((await eventsAfter(before)).map((event) => [event.action, event.subject_id])).toEqual([['credential_registered', id]]);
  });

  it('records a suspension with its reason and what it cancelled, and the resumption; a repeat of either records nothing', async () => {
    await requestAuthorization('400000');
    const before = mark();
    expect((await post(`/agents/${actors.agentId}/suspend`, { reason: 'runaway loop' })).status).toBe(200);
    expect((await post(`/agents/${actors.agentId}/suspend`, { reason: 'again' })).body).toMatchObject({ changed: false });
    expect((await post(`/agents/${actors.agentId}/resume`)).status).toBe(200);
    expect((await post(`/agents/${actors.agentId}/resume`)).body).toMatchObject({ changed: false });
    const suspendedAt = ledger.query<{ at: bigint }>("SELECT at FROM audit_events WHERE action = 'agent_suspended'")[0]?.at;

    const events = await eventsAfter(before);
    expect(events).toEqual([
      suspensionEvent(admin, 'operator', 'runaway loop', new Date(Number(suspendedAt)).toISOString()),
      {
        ...admin,
        audit_id: expect.any(String) as unknown,
        at: expect.any(String) as unknown,
        action: 'agent_resumed',
        agent_id: actors.agentId,
        subject_id: actors.agentId,
        before: { status: 'suspended', suspended_by: 'operator', suspended_at: new Date(Number(suspendedAt)).toISOString() },
        after: { status: 'active' },
        reason: null,
      },
    ]);
  });

  it('records a policy change with the policy before and after and their versions; a change refused by If-Match records nothing', async () => {
    const before = mark();
    const policy = { per_authorization_cap_units: '2000000', daily_cap_units: '8000000', approval_threshold_units: '500000', units_scale: 6, currency: 'USD', max_requests_per_minute: 30 };
    expect((await call(ledger.url, 'PUT', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken, body: policy, headers: { 'if-match': '1' } })).status).toBe(200);
    const stale = await call(ledger.url, 'PUT', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken, body: policy, headers: { 'if-match': '1' } });
    expect(stale.status).toBe(412);
    const events = await eventsAfter(before);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      ...admin,
      action: 'policy_changed',
      agent_id: actors.agentId,
      subject_id: actors.agentId,
      before: {
        version: '1',
        source: 'default',
        per_authorization_cap_units: '5000000',
        daily_cap_units: '20000000',
        approval_threshold_units: '1000000',
        max_requests_per_minute: null,
        max_requests_per_hour: null,
        suspend_after_velocity_refusals: null,
      },
      after: {
        version: '2',
        source: 'operator',
        per_authorization_cap_units: '2000000',
        daily_cap_units: '8000000',
        approval_threshold_units: '500000',
        max_requests_per_minute: '30',
        max_requests_per_hour: null,
        suspend_after_velocity_refusals: null,
      },
      reason: null,
    });
  });

  it('records an approval and a denial as the approver\'s credential, with the reason; the same decision again, or the contrary one, records nothing', async () => {
    const approved = await requestAuthorization('2000000');
    const denied = await requestAuthorization('3000000');
    const before = mark();
    expect((await post(`/authorizations/${approved}/approve`, { reason: 'poster for the launch' }, actors.approver)).status).toBe(200);
    expect((await post(`/authorizations/${approved}/approve`, {}, actors.approver)).status).toBe(200);
    expect((await post(`/authorizations/${approved}/deny`, {}, actors.approver)).status).toBe(409);
    expect((await post(`/authorizations/${denied}/deny`, {}, actors.approver)).status).toBe(200);
    const decidedAt = (token: string) => ledger.query<{ decided_at: bigint }>('SELECT decided_at FROM authorizations WHERE token_id = ?', token)[0]?.decided_at;
    /** The event of a decision by the approver's credential, at the decision's own time. */
    const decision = (token: string, status: 'approved' | 'denied', amountUnits: string, reason: string | null) => ({
      audit_id: expect.any(String) as unknown,
      at: new Date(Number(decidedAt(token))).toISOString(),
      actor_kind: 'approver',
      actor_credential_id: credentialOf('approver'),
      actor_name: null,
      action: `authorization_${status}`,
      agent_id: actors.agentId,
      subject_id: token,
      before: { status: 'requested' },
      after: { status, amount_units: amountUnits, currency: 'USD' },
      reason,
    });
    expect(await eventsAfter(before)).toEqual([decision(approved, 'approved', '2000000', 'poster for the launch'), decision(denied, 'denied', '3000000', null)]);
  });

  it('records a reconciliation resolved by a human, settled or released, with the note; a replay records nothing', async () => {
    const records: Record<string, string> = {};
    for (const [name, executionId] of [['settle', 'exe_settle'], ['release', 'exe_release']] as const) {
      const token = await requestAuthorization('400000');
      expect((await post(`/executor/authorizations/${token}/claim`, { execution_id: executionId }, actors.executor)).status).toBe(200);
      const opened = await post(`/executor/authorizations/${token}/reconciliation`, { execution_id: executionId, reason: 'billing_ambiguous', evidence: {} }, actors.executor);
      records[name] = (opened.body.record as { record_id: string }).record_id;
    }
    const before = mark();
    const settle = { resolution: 'settle', receipt: preciseReceipt(300000n) };
    expect((await post(`/reconciliation-records/${records.settle ?? ''}/resolve`, settle, actors.reconciliation)).status).toBe(200);
    expect((await post(`/reconciliation-records/${records.settle ?? ''}/resolve`, settle, actors.reconciliation)).body).toMatchObject({ replayed: true });
    expect((await post(`/reconciliation-records/${records.release ?? ''}/resolve`, { resolution: 'release', reason: 'provider: no charge' }, actors.reconciliation)).status).toBe(200);
    const resolvedAt = (record: string) => ledger.query<{ resolved_at: bigint; token_id: string }>('SELECT resolved_at, token_id FROM reconciliation_records WHERE record_id = ?', record)[0];
    /** The event of a record resolved by the reconciliation credential, at the resolution's own time. */
    const resolution = (record: string, after: Record<string, string>, reason: string | null) => ({
      audit_id: expect.any(String) as unknown,
      at: new Date(Number(resolvedAt(record)?.resolved_at)).toISOString(),
      actor_kind: 'reconciliation',
      actor_credential_id: credentialOf('reconciliation'),
      actor_name: null,
      action: 'reconciliation_resolved',
      agent_id: actors.agentId,
      subject_id: record,
      before: { status: 'open', token_id: resolvedAt(record)?.token_id },
      after: { status: 'resolved', ...after },
      reason,
    });
    expect(await eventsAfter(before)).toEqual([
      resolution(records.settle ?? '', { resolution: 'settled', authorization_status: 'settled', settled_units: '300000' }, null),
      resolution(records.release ?? '', { resolution: 'released', authorization_status: 'released' }, 'provider: no charge'),
    ]);
  });

  it('records the velocity breaker\'s suspension as the ledger\'s own act, saying why', async () => {
    const policy = { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD', max_requests_per_minute: 1, suspend_after_velocity_refusals: 2 };
    expect((await call(ledger.url, 'PUT', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken, body: policy })).status).toBe(200);
    const before = mark();
    await requestAuthorization('400000');
    const refused = [];
    for (let index = 0; index < 2; index += 1) refused.push((await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '1000', units_scale: 6, currency: 'USD' } })).status);
    expect(refused).toEqual([429, 403]);
    const reason = 'velocity: 2 refusals in the last hour (limit 1 requests per minute); suspended automatically by the runaway-loop breaker';
    const ledgerItself = { actor_kind: 'ledger', actor_credential_id: null, actor_name: null };
    expect(await eventsAfter(before)).toEqual([suspensionEvent(ledgerItself, 'velocity_breaker', reason, expect.any(String))]);
  });
});

describe('GET /audit', () => {
  it('pages oldest first with next_after, filters by agent and by time', async () => {
    const first = await audit('?limit=4');
    expect(first.body.events.map((event) => event.audit_id)).toEqual(['1', '2', '3', '4']);
    expect(first.body.next_after).toBe('4');
    const second = await audit(`?limit=4&after=${first.body.next_after ?? ''}`);
    expect(second.body).toMatchObject({ next_after: null });
    expect(second.body.events.map((event) => event.audit_id)).toEqual(['5', '6']);

    // The agent's own events: its addition and its credential's registration.
    const own = await audit(`?agent_id=${actors.agentId}`);
    expect(own.body.events.map((event) => event.action)).toEqual(['agent_added', 'credential_registered']);

    // Ten days on, a suspension: `since` five days on finds only it.
    const started = Date.now();
    ledger.advance(10 * 86_400_000);
    expect((await post(`/agents/${actors.agentId}/suspend`)).status).toBe(200);
    const since = new Date(started + 5 * 86_400_000).toISOString();
    const recent = await audit(`?since=${encodeURIComponent(since)}`);
    expect(recent.body.events.map((event) => event.action)).toEqual(['agent_suspended']);
    expect((await audit(`?since=${encodeURIComponent(since.replace('Z', '+00:00'))}&agent_id=${actors.agentId}`)).body.events).toHaveLength(1);
  });

  it('refuses bad input with the field at fault, an unknown agent as not found, and every credential but the admin\'s', async () => {
    const refusals: [string, number, AuditPage['error']][] = [
      ['?since=garbage', 400, { code: 'invalid_request', fields: ['since'] }],
      ['?since=2026-11-25', 400, { code: 'invalid_request', fields: ['since'] }],
      ['?limit=0', 400, { code: 'invalid_request', fields: ['limit'] }],
      ['?limit=501', 400, { code: 'invalid_request', fields: ['limit'] }],
      ['?after=-1', 400, { code: 'invalid_request', fields: ['after'] }],
      ['?agent_id=bot', 400, { code: 'invalid_request', fields: ['agent_id'] }],
      ['?action=agent_added', 400, { code: 'invalid_request', fields: ['action'] }],
      ['?agent_id=agt_00000000-0000-4000-8000-000000000000', 404, { code: 'not_found', reason_code: 'agent_not_found', fields: ['agent_id'] }],
    ];
    for (const [query, status, error] of refusals) {
      const answer = await audit(query);
      expect([query, answer.status, answer.body.error]).toEqual([query, status, error]);
    }
    for (const token of [actors.agent, actors.approver, actors.executor, actors.reconciliation]) expect((await audit('', token)).status).toBe(401);
  });
});

describe('the audit table', () => {
  it('is append-only: the store refuses every UPDATE and DELETE', () => {
    const db = new Database(ledger.databasePath);
    try {
      expect(() => db.prepare("UPDATE audit_events SET reason = 'rewritten' WHERE audit_id = 1").run()).toThrow('audit events are append-only');
      expect(() => db.prepare('DELETE FROM audit_events WHERE audit_id = 1').run()).toThrow('audit events are never deleted');
      expect(() => db.prepare("INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, subject_id) VALUES (1, NULL, 'admin', 'agent_added', 'x')").run()).toThrow(/CHECK/);
      expect(() => db.prepare("INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, subject_id) VALUES (1, 'admin', 'admin', 'agent_deleted', 'x')").run()).toThrow(/CHECK/);
      expect(() => db.prepare("INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, subject_id, before) VALUES (1, 'admin', 'admin', 'agent_added', 'x', '[1]')").run()).toThrow(/CHECK/);
    } finally {
      db.close();
    }
    expect(ledger.query('SELECT COUNT(*) AS n FROM audit_events')).toEqual([{ n: 6n }]);
  });

  it('never holds secret-shaped text: a reason that holds one is refused with its field, and nothing is recorded', async () => {
    const token = await requestAuthorization('2000000');
    const before = mark();
    for (const [what, secret] of secretShapeExamples()) {
      const answer = await post(`/agents/${actors.agentId}/suspend`, { reason: `stop, see ${secret}` });
      expect([what, answer.status, answer.body.error]).toEqual([what, 400, { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['reason'] }]);
      expect((await post(`/authorizations/${token}/deny`, { reason: `per ${secret}` }, actors.approver)).status).toBe(400);
      expect(JSON.stringify(ledger.query('SELECT actor_credential_id, subject_id, before, after, reason FROM audit_events'))).not.toContain(distinctive(secret));
    }
    expect(await eventsAfter(before)).toEqual([]);
    const everything = JSON.stringify((await audit('?limit=500')).body);
    expect(everything).not.toContain('lexec_');
  });

  it('redacts secret-shaped text and bounds the reason when it is written, whoever writes it; refuses to write outside the transaction of a change', async () => {
    const db = new Database(ledger.databasePath);
    db.defaultSafeIntegers(true);
    const store = createAuditStore(db);
    const capability = generateCapability('admin');
    const entry = {
      actor: TEST_ADMIN,
      action: 'credential_revoked',
      agentId: null,
      subjectId: 'cred_leaky',
      after: { status: 'revoked', note: `was ${capability}` },
      reason: `pasted ${capability} ${'x'.repeat(600)}`,
      at: Date.now(),
    } as const;
    try {
      expect(() => { store.record(entry); }).toThrow(BugError);
      db.transaction(() => { store.record(entry); }).immediate();
      const [row] = db.prepare("SELECT after, reason FROM audit_events WHERE subject_id = 'cred_leaky'").all() as { after: string; reason: string }[];
      expect(row?.after).toBe('{"status":"revoked","note":"was [redacted]"}');
      expect(row?.reason).toMatch(/^pasted \[redacted\] x+$/);
      expect(row?.reason).toHaveLength(MAX_AUDIT_REASON);
    } finally {
      db.close();
    }
    const shown = JSON.stringify((await audit('?limit=500')).body);
    expect(shown).toContain('cred_leaky');
    expect(shown).not.toContain('lexec_');
  });
});
