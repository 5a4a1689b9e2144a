import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';
import { distinctive, PROSE, secretShapeExamples } from '../support/secret-shapes.js';

/*
 * Free text the ledger keeps and shows to other people — an authorization's purpose, an
 * approver's reason, a reconciliation release reason — never holds a secret (issue 16 item 5):
 * text containing a capability's or a provider key's shape is refused with its field path, the
 * reason code `secret_shaped_text` and nothing of the text, and nothing is written. Text an
 * older version stored is shown with the secret replaced.
 */

let ledger: TestLedger;
let actors: Actors;

beforeAll(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
});

afterAll(async () => {
  await ledger.close();
});

const FAL_KEY = `${randomUUID()}:${'0123456789abcdef'.repeat(2)}`;
const secrets = (): [string, string][] => [
  ['a whole agent capability', generateCapability('agent')],
  ['an admin capability inside a sentence', `please use ${generateCapability('admin')} for this`],
  ['a capability cut short by two characters', generateCapability('approver').slice(0, -2)],
  ['a fal key inside a sentence', `key=${FAL_KEY}.`],
  ['a PEM private key', '-----BEGIN PRIVATE KEY-----\nMIIE…'],
  // Issue 24 item 8: API keys and bearer tokens of other vendors, inside a sentence.
  ...secretShapeExamples().map(([name, secret]): [string, string] => [name, `for the poster: ${secret}`]),
];

const authorizationCount = () => ledger.query<{ n: bigint }>('SELECT COUNT(*) AS n FROM authorizations')[0]?.n;

async function requested(amountUnits: string): Promise<string> {
  const result = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'a poster' },
  });
  expect(result.status).toBe(201);
  return result.body.authorization.token_id;
}

describe('secret-shaped free text is refused at the ledger', () => {
  it.each(secrets())('purpose holding %s → 400 naming purpose, nothing echoed, nothing written', async (_name, secret) => {
    const before = authorizationCount();
    const result = await call(ledger.url, 'POST', '/authorizations', {
      token: actors.agent,
      body: { amount_units: '1000', units_scale: 6, currency: 'USD', purpose: secret },
    });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['purpose'] } } });
    expect(JSON.stringify(result.body)).not.toContain(distinctive(secret));
    expect(authorizationCount()).toBe(before);
    expect(JSON.stringify(ledger.logs())).not.toContain(distinctive(secret));
  });

  it('an approval or a denial whose reason holds a capability or a bearer token is refused and decides nothing', async () => {
    const tokenId = await requested('2000000');
    for (const [verb, secret] of [
      ['approve', generateCapability('approver')],
      ['deny', `Authorization: Bearer ${secretShapeExamples().find(([name]) => name === 'an OpenAI project key')?.[1] ?? ''}`],
    ] as const) {
      const result = await call(ledger.url, 'POST', `/authorizations/${tokenId}/${verb}`, { token: actors.approver, body: { reason: `ok ${secret}` } });
      expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['reason'] } } });
    }
    expect(ledger.query('SELECT status, decision_reason FROM authorizations WHERE token_id = ?', tokenId)).toEqual([{ status: 'requested', decision_reason: null }]);
    const approved = await call(ledger.url, 'POST', `/authorizations/${tokenId}/approve`, { token: actors.approver, body: { reason: 'within budget' } });
    expect(approved).toMatchObject({ status: 200, body: { authorization: { status: 'approved', decision_reason: 'within budget' } } });
  });

  it('a reconciliation release whose reason holds a capability is refused before the record is looked up', async () => {
    const result = await call(ledger.url, 'POST', `/reconciliation-records/rec_${randomUUID()}/resolve`, {
      token: actors.reconciliation,
      body: { resolution: 'release', reason: `no charge, see ${generateCapability('reconciliation')}` },
    });
    expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['reason'] } } });
    const github = await call(ledger.url, 'POST', `/reconciliation-records/rec_${randomUUID()}/resolve`, {
      token: actors.reconciliation,
      body: { resolution: 'release', reason: `no charge, invoice at ${secretShapeExamples().find(([name]) => name === 'a GitHub personal token')?.[1] ?? ''}` },
    });
    expect(github).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['reason'] } } });
  });

  it('ordinary prose that mentions lexec, bearers, keys, tokens and capabilities is accepted', async () => {
    for (const purpose of ['lexec_agent draft', 'a key: lexec_agent_ then some words', ...PROSE]) {
      const result = await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '1000', units_scale: 6, currency: 'USD', purpose } });
      expect(result, purpose).toMatchObject({ status: 201, body: { authorization: { purpose } } });
    }
  });

  it('a purpose and a reason stored by an older version are shown with the secret replaced, in show and list', async () => {
    const tokenId = await requested('1000');
    const secret = generateCapability('agent');
    const db = new Database(ledger.databasePath);
    try {
      db.prepare('UPDATE authorizations SET purpose = ?, decision_reason = ? WHERE token_id = ?').run(`poster ${secret}`, secret, tokenId);
    } finally {
      db.close();
    }
    const shown = await call<{ authorization: { purpose: string; decision_reason: string } }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: ledger.adminToken });
    expect(shown.body.authorization).toMatchObject({ purpose: 'poster [redacted]', decision_reason: '[redacted]' });
    const listed = await call(ledger.url, 'GET', '/authorizations', { token: ledger.adminToken });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain('poster [redacted]');
    expect(JSON.stringify(listed.body)).not.toContain(distinctive(secret));
  });

  it('a reconciliation note stored by an older version is shown with the secret replaced', async () => {
    const tokenId = await requested('1000');
    const executionId = `exe_${randomUUID().replaceAll('-', '')}`;
    expect((await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: { execution_id: executionId } })).status).toBe(200);
    const opened = await call<{ record: { record_id: string } }>(ledger.url, 'POST', `/executor/authorizations/${tokenId}/reconciliation`, {
      token: actors.executor,
      body: { execution_id: executionId, reason: 'billing_ambiguous', evidence: {} },
    });
    const recordId = opened.body.record.record_id;
    expect((await call(ledger.url, 'POST', `/reconciliation-records/${recordId}/resolve`, { token: actors.reconciliation, body: { resolution: 'release', reason: 'no charge' } })).status).toBe(200);
    const secret = generateCapability('reconciliation');
    const db = new Database(ledger.databasePath);
    try {
      db.prepare('UPDATE reconciliation_records SET resolution_note = ? WHERE record_id = ?').run(`no charge ${secret}`, recordId);
    } finally {
      db.close();
    }
    const listed = await call(ledger.url, 'GET', '/reconciliation-records?status=resolved', { token: actors.reconciliation });
    expect(JSON.stringify(listed.body)).toContain('no charge [redacted]');
    expect(JSON.stringify(listed.body)).not.toContain(distinctive(secret));
  });
});
