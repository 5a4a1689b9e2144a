import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { UserError } from '../../src/errors.js';
import { createLedgerClient, type LedgerClient } from '../../src/ledger/client/ledger-client.js';
import { LedgerAgentSuspended, LedgerPolicyVersionMismatch } from '../../src/ledger/client/ledger-client-errors.js';
import { mintCredential, startTestLedger, type TestLedger } from '../support/ledger.js';

/*
 * The ledger client against a real ledger app on loopback (in this process, real SQLite file),
 * and against small loopback servers that misbehave in ways a real ledger never does.
 */

let ledger: TestLedger;
let admin: LedgerClient;

beforeAll(async () => {
  ledger = await startTestLedger();
  admin = createLedgerClient({ url: ledger.url, token: ledger.adminToken });
});

afterAll(async () => {
  await ledger.close();
});

/** The UserError a promise rejects with. */
async function refusal(promise: Promise<unknown>): Promise<UserError> {
  const error: unknown = await promise.then(
    () => new Error('expected a refusal'),
    (caught: unknown) => caught,
  );
  if (!(error instanceof UserError)) throw error;
  return error;
}

describe('ledger client against a real ledger', () => {
  it('reads amounts as bigint and sends them as decimal strings', async () => {
    const agent = await admin.addAgent(`bot-${randomUUID().slice(0, 8)}`);
    const client = createLedgerClient({ url: `${ledger.url}/`, token: await mintCredential(ledger, 'agent', agent.agent_id) });
    const { authorization, replayed } = await client.requestAuthorization({ amountUnits: 900_000n, purpose: 'unit' });
    expect(authorization).toMatchObject({ status: 'approved', amount_units: 900_000n, amount_cents: 90n, units_scale: 6, currency: 'USD' });
    expect(replayed).toBe(false);
    const policy = await admin.policy(agent.agent_id);
    expect(policy).toMatchObject({ per_authorization_cap_units: 5_000_000n, version: 1n });
  });

  it('maps 401 to ledger_unauthorized naming the kind presented and the kinds needed, never the token', async () => {
    const token = generateCapability('approver');
    const error = await refusal(createLedgerClient({ url: ledger.url, token }).listAgents());
    expect(error.code).toBe('ledger_unauthorized');
    expect(error.message).toBe(
      `The ledger at ${ledger.url} refused the approver capability (401 unauthorized): this request needs an admin or an executor capability this ledger accepts — registered here, and not revoked.`,
    );
    expect(JSON.stringify([error.message, error.nextStep, error.issues])).not.toContain(token);
  });

  it('maps 404, 409, 422 policy_refused and 400 to their codes with reason and field paths as issues', async () => {
    const missing = await refusal(admin.showAuthorization(randomUUID()));
    expect(missing).toMatchObject({ code: 'ledger_not_found', issues: [] });

    const name = `dup-${randomUUID().slice(0, 8)}`;
    await admin.addAgent(name);
    const conflict = await refusal(admin.addAgent(name));
    expect(conflict).toMatchObject({ code: 'ledger_conflict', issues: [{ path: 'name', message: 'refused by the ledger (agent_exists)' }] });

    const agent = await admin.addAgent(`cap-${randomUUID().slice(0, 8)}`);
    const client = createLedgerClient({ url: ledger.url, token: await mintCredential(ledger, 'agent', agent.agent_id) });
    const refused = await refusal(client.requestAuthorization({ amountUnits: 6_000_000n }));
    expect(refused).toMatchObject({
      code: 'ledger_policy_refused',
      issues: [{ path: 'amount_units', message: 'refused by the ledger (per_authorization_cap_exceeded)' }],
    });

    const invalid = await refusal(admin.addAgent('Not A Name'));
    expect(invalid).toMatchObject({ code: 'ledger_invalid_request', issues: [{ path: 'name', message: 'refused by the ledger (invalid_request)' }] });
    expect(invalid.message).not.toContain('Not A Name');
  });

  it('sends an idempotency key and reports a replay; the same key with another amount is ledger_conflict naming the key, never its value', async () => {
    const agent = await admin.addAgent(`key-${randomUUID().slice(0, 8)}`);
    const client = createLedgerClient({ url: ledger.url, token: await mintCredential(ledger, 'agent', agent.agent_id) });
    const key = `secretive-key-${randomUUID()}`;
    const first = await client.requestAuthorization({ amountUnits: 2_000_000n, purpose: 'unit', idempotencyKey: key });
    expect(first).toMatchObject({ replayed: false, authorization: { status: 'requested' } });
    const again = await client.requestAuthorization({ amountUnits: 2_000_000n, purpose: 'unit', idempotencyKey: key });
    expect(again).toEqual({ replayed: true, authorization: first.authorization });
    const reused = await refusal(client.requestAuthorization({ amountUnits: 3_000_000n, purpose: 'unit', idempotencyKey: key }));
    expect(reused).toMatchObject({ code: 'ledger_conflict', issues: [{ path: 'idempotency-key', message: 'refused by the ledger (idempotency_key_reused)' }] });
    expect(reused.nextStep).toContain('Repeat that request exactly to continue it, or use another key');
    expect(JSON.stringify([reused.message, reused.nextStep, reused.issues])).not.toContain(key);
    // Without a key, a new one each time.
    expect((await client.requestAuthorization({ amountUnits: 2_000_000n, purpose: 'unit' })).replayed).toBe(false);
  });

  it('sets a policy from the version it read; from a stale one it throws LedgerPolicyVersionMismatch with the current version', async () => {
    const agent = await admin.addAgent(`ver-${randomUUID().slice(0, 8)}`);
    const read = await admin.policy(agent.agent_id);
    const policy = { per_authorization_cap_units: 4_000_000n, daily_cap_units: 20_000_000n, approval_threshold_units: 0n, units_scale: 6 as const, currency: 'USD' as const };
    expect(await admin.setPolicy(agent.agent_id, policy, read.version)).toMatchObject({ version: read.version + 1n, per_authorization_cap_units: 4_000_000n });
    const stale = await refusal(admin.setPolicy(agent.agent_id, { ...policy, approval_threshold_units: 1n }, read.version));
    expect(stale).toBeInstanceOf(LedgerPolicyVersionMismatch);
    expect(stale).toMatchObject({ code: 'ledger_policy_version_mismatch', currentVersion: read.version + 1n });
    expect(await admin.policy(agent.agent_id)).toMatchObject({ version: read.version + 1n, approval_threshold_units: 0n });
    // Without a version the change is unconditional.
    expect(await admin.setPolicy(agent.agent_id, policy)).toMatchObject({ version: read.version + 2n });
  });

  it('suspends and resumes an agent; the suspended agent\'s request is agent_suspended with the admin\'s next step', async () => {
    const agent = await admin.addAgent(`halt-${randomUUID().slice(0, 8)}`);
    const client = createLedgerClient({ url: ledger.url, token: await mintCredential(ledger, 'agent', agent.agent_id) });
    await client.requestAuthorization({ amountUnits: 1_000n });
    const suspended = await admin.suspendAgent(agent.agent_id, 'unit test');
    expect(suspended).toMatchObject({ agent: { status: 'suspended', suspension_reason: 'unit test' }, cancelled_authorizations: 1, changed: true });
    expect(suspended.agent.suspended_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const refused = await refusal(client.requestAuthorization({ amountUnits: 1_000n }));
    expect(refused).toBeInstanceOf(LedgerAgentSuspended);
    expect(refused).toMatchObject({ code: 'agent_suspended', issues: [] });
    expect(refused.nextStep).toContain('lexec ledger agents resume --agent-id <agent_id>');
    expect(await admin.resumeAgent(agent.agent_id)).toMatchObject({ agent: { status: 'active', suspended_at: null, suspension_reason: null }, changed: true });
    expect((await refusal(admin.suspendAgent(`agt_${randomUUID()}`, null))).code).toBe('ledger_not_found');
  });

  it('registers a digest idempotently: the same registration again is unchanged', async () => {
    const id = `cred_${randomUUID()}`;
    const request = { kind: 'approver' as const, agentId: null, digestSha256: 'ab'.repeat(32) };
    expect((await admin.registerCredential(id, request)).outcome).toBe('created');
    expect((await admin.registerCredential(id, request)).outcome).toBe('unchanged');
    expect((await refusal(admin.registerCredential(id, { ...request, digestSha256: 'cd'.repeat(32) }))).code).toBe('ledger_conflict');
  });
});

describe('ledger client against a misbehaving service', () => {
  let server: Server | undefined;

  afterEach(async () => {
    const current = server;
    server = undefined;
    if (current !== undefined) await new Promise((resolve) => current.close(resolve));
  });

  async function serve(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
    const created = createServer(handler);
    server = created;
    await new Promise<void>((resolve) => created.listen(0, '127.0.0.1', resolve));
    const address = created.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return `http://127.0.0.1:${address.port}`;
  }

  const json = (status: number, body: unknown) => (_request: IncomingMessage, response: ServerResponse) => {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

  const client = (url: string, timeoutMs?: number) => createLedgerClient({ url, token: generateCapability('admin'), timeoutMs });

  it('a 503 is ledger_server_error', async () => {
    const url = await serve(json(503, { error: { code: 'not_ready', retryable: true } }));
    expect(await refusal(client(url).listAgents())).toMatchObject({ code: 'ledger_server_error' });
  });

  it('a non-JSON answer or an unexpected shape is ledger_bad_response', async () => {
    const html = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
    });
    expect((await refusal(client(html).listAgents())).code).toBe('ledger_bad_response');
    await new Promise((resolve) => server?.close(resolve));
    const shaped = await serve(json(200, { agents: [{ agent_id: 1 }] }));
    expect((await refusal(client(shaped).listAgents())).code).toBe('ledger_bad_response');
  });

  it('a float amount in an answer is refused, never rounded', async () => {
    const url = await serve(
      json(200, {
        policy: {
          agent_id: 'agt_x',
          per_authorization_cap_units: 1.5,
          daily_cap_units: '2',
          approval_threshold_units: '0',
          units_scale: 6,
          currency: 'USD',
          version: '1',
          updated_at: new Date().toISOString(),
        },
      }),
    );
    expect((await refusal(client(url).policy('agt_x'))).code).toBe('ledger_bad_response');
  });

  it('server-sent codes and fields that are not plain tokens are not repeated (no terminal escapes)', async () => {
    const url = await serve(json(409, { error: { code: '\u001b[2Jconflict', reason_code: 'x\u001b]0;pwned\u0007', fields: ['ok_field', '\u001b[31mred'] } }));
    const error = await refusal(client(url).addAgent('bot'));
    expect(error.code).toBe('ledger_conflict');
    expect(JSON.stringify([error.message, error.issues])).not.toContain('\u001b');
    expect(error.issues).toEqual([{ path: 'ok_field', message: 'refused by the ledger (refused)' }]);
  });

  it('sends the expected version as If-Match; a 412 without a usable current version is still a version mismatch', async () => {
    const seen: (string | undefined)[] = [];
    const url = await serve((request, response) => {
      seen.push(request.headers['if-match']);
      response.writeHead(412, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'policy_version_mismatch', current_version: 1.5 } }));
    });
    const policy = { per_authorization_cap_units: 1n, daily_cap_units: 1n, approval_threshold_units: 0n, units_scale: 6 as const, currency: 'USD' as const };
    const error = await refusal(client(url).setPolicy('agt_x', policy, 9_007_199_254_740_993n));
    expect(seen).toEqual(['9007199254740993']);
    expect(error).toMatchObject({ code: 'ledger_policy_version_mismatch', currentVersion: null });
    expect(error.nextStep).toContain('--expect-version <its version>');
  });

  it('no answer within the time limit is ledger_unreachable', async () => {
    const url = await serve(() => {
      // Never answers.
    });
    const error = await refusal(client(url, 200).listAgents());
    expect(error).toMatchObject({ code: 'ledger_unreachable', message: `The ledger at ${url} is unreachable (no answer within 0.2 s).` });
    server?.closeAllConnections();
  });

  it('a redirect is not followed (the bearer capability must not travel elsewhere)', async () => {
    const url = await serve((_request, response) => {
      response.writeHead(307, { location: 'http://127.0.0.1:9/elsewhere' }).end();
    });
    const error = await refusal(client(url).listAgents());
    expect(error).toMatchObject({ code: 'ledger_bad_response', message: expect.stringContaining('a redirect (307), which lexec does not follow') as string });
  });
});
