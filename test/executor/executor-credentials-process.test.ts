import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { capabilityDigest, generateCapability } from '../../src/credentials/capability.js';
import { writePrivateFile } from '../../src/credentials/private-file.js';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { expectFailure, expectResult, runLexec } from '../support/cli.js';
import { sandboxConfig, type JsonObject } from '../support/config-fixtures.js';
import { durableHarness, spawnExecutor, until, type Stack } from '../support/durable-stack.js';
import { executionRequest } from '../support/executor.js';
import { call, mintCredential, startTestLedger } from '../support/ledger.js';

/*
 * The executor's credentials across processes: a real ledger, sandbox provider and `lexec executor
 * serve`, and the credential commands run beside the running executor as separate processes. A
 * revocation or the end of a grace written by the command holds at the executor's next request;
 * a replaced ledger credential is used from the executor's next ledger call.
 */

const harness = durableHarness('lexec-executor-credentials-');

interface View {
  credential_id: string;
  kind: string;
  status: string;
  last_used_at: string | null;
  expires_at: string | null;
}

const credentials = (s: Pick<Stack, 'configPath'>, ...args: string[]) => runLexec(['executor', 'credentials', ...args, '--config', s.configPath, '--json'], { home: harness.dir() });
const listed = async (s: Stack) => (expectResult(await credentials(s, 'list')) as { credentials: View[] }).credentials;
const managedFile = async (role: 'caller' | 'reconciliation') => (await readFile(managedCredentialPaths(join(harness.dir(), 'executor', 'credentials'))[role], 'utf8')).trim();
const detail = (s: Stack, executionId: string, token: string) => call<{ execution: { state: string } }>(s.executor.url(), 'GET', `/v1/executions/${executionId}`, { token });
const reconciliationList = (s: Stack, token: string) => call(s.executor.url(), 'GET', '/v1/reconciliation/executions', { token });

/** The one active credential of `kind` whose digest the file holds: its id. */
async function activeId(s: Stack, kind: string): Promise<string> {
  const active = (await listed(s)).filter((credential) => credential.kind === kind && credential.status === 'active');
  expect(active).toHaveLength(1);
  return active[0]?.credential_id ?? '';
}

async function settled(s: Stack, executionId: string, tokenId: string, caller: string): Promise<void> {
  await until('succeeded', async () => ((await detail(s, executionId, caller)).body.execution.state === 'succeeded' ? true : undefined));
  expect((await s.authorization(tokenId)).status).toBe('settled');
}

/**
 * A stack whose executor reaches the ledger through a relay, with one execution under way: held at
 * its settlement (the relay keeps the request unanswered) until the test lets it go with
 * `relay.hold(null)`; the executor then settles it on its next attempt.
 */
async function heldAtSettlement() {
  const relays: Awaited<ReturnType<typeof harness.ledgerRelay>>[] = [];
  const s = await harness.stack({
    relay: async (url) => {
      const relay = await harness.ledgerRelay(url);
      relays.push(relay);
      return relay.url;
    },
  });
  const [relay] = relays;
  if (relay === undefined) throw new Error('the stack started without its relay');
  relay.hold(/\/settle$/);
  const tokenId = await s.approvedToken();
  const executionId = await s.submit(tokenId);
  await until('the settlement held', () => Promise.resolve(relay.heldCount() > 0 ? true : undefined));
  return { s, relay, tokenId, executionId };
}

describe('executor credentials against a running executor', () => {
  it('a revoked caller capability is refused at its next request while the executor runs, and fails the next start closed until rotated', async () => {
    const s = await harness.stack();
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId);
    await settled(s, executionId, tokenId, s.caller);
    const callerId = await activeId(s, 'caller');
    expect((await listed(s)).find((credential) => credential.credential_id === callerId)?.last_used_at).not.toBeNull();

    expect(expectResult(await credentials(s, 'revoke', callerId))).toMatchObject({ changed: true, credential: { status: 'revoked' } });
    expect((await detail(s, executionId, s.caller)).status).toBe(401);
    expect((await call(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body: executionRequest(await s.approvedToken()) })).status).toBe(401);
    // Still running: its health and its other capability are untouched.
    expect((await fetch(`${s.executor.url()}/livez`)).status).toBe(200);
    expect((await reconciliationList(s, s.resolver)).status).toBe(200);

    await s.executor.kill('SIGTERM');
    const refused = await runLexec(['executor', 'serve', '--config', s.configPath, '--json'], { home: harness.dir() });
    const failure = expectFailure(refused, 1, 'configured_credential_revoked');
    expect(failure.message).toContain(callerId);
    expect(failure.next_step).toContain(`lexec executor credentials rotate --config ${s.configPath} --role caller`);
    expect(refused.stdout + refused.stderr).not.toMatch(/lexec_[a-z]+_/);

    expectResult(await credentials(s, 'rotate', '--role', 'caller'));
    await s.restart();
    const caller = await managedFile('caller');
    expect((await detail(s, executionId, caller)).body.execution.state).toBe('succeeded');
    expect((await detail(s, executionId, s.caller)).status).toBe(401);

    // The next bootstrap (stack start) reuses the rotated file.
    const bootstrap = await runLexec(
      ['executor', 'credentials', 'bootstrap-managed', '--config', s.configPath, '--ledger-admin-capability', s.ledger.adminCapabilityPath, '--json'],
      { home: harness.dir() },
    );
    expect(expectResult(bootstrap)).toMatchObject({ caller_capability: 'reused', reconciliation_capability: 'reused', ledger_credential: 'reused' });
    expect(await managedFile('caller')).toBe(caller);
  });

  it('a caller rotation with a grace accepts both capabilities until it ends, then only the new one; the execution under way settles', async () => {
    const { s, relay, tokenId, executionId } = await heldAtSettlement();
    const rotated = expectResult(await credentials(s, 'rotate', '--role', 'caller', '--grace-seconds', '10')) as { previous: View };
    expect(rotated.previous.status).toBe('expiring');
    const caller = await managedFile('caller');
    expect(caller).not.toBe(s.caller);
    expect((await detail(s, executionId, s.caller)).status).toBe(200);
    expect((await detail(s, executionId, caller)).status).toBe(200);
    relay.hold(null);

    await until('the old capability refused', async () => ((await detail(s, executionId, s.caller)).status === 401 ? true : undefined));
    expect((await listed(s)).find((credential) => credential.credential_id === rotated.previous.credential_id)).toMatchObject({ status: 'revoked', revoked_at: rotated.previous.expires_at });
    await settled(s, executionId, tokenId, caller);
  });

  it('a reconciliation rotation refuses the old capability at its next request and accepts the new one from the file', async () => {
    const s = await harness.stack();
    expect((await reconciliationList(s, s.resolver)).status).toBe(200);
    const rotated = expectResult(await credentials(s, 'rotate', '--role', 'reconciliation')) as { previous: View; credential: View };
    expect(rotated.previous.status).toBe('revoked');
    expect((await reconciliationList(s, s.resolver)).status).toBe(401);
    expect((await reconciliationList(s, await managedFile('reconciliation'))).status).toBe(200);
    expect(rotated.credential.kind).toBe('reconciliation');
  });

  it('a ledger credential replaced in its file is used from the next ledger call; an execution under way across the change settles', async () => {
    const { s, relay, tokenId: underWay, executionId: underWayId } = await heldAtSettlement();

    // What the launcher's stack rotation does: the new capability registered at the ledger first, then the file replaced.
    const next = generateCapability('executor');
    const credentialId = `cred_${randomUUID()}`;
    const registered = await call(s.ledger.url, 'PUT', `/credentials/${credentialId}`, {
      token: s.admin,
      body: { kind: 'executor', digest_sha256: capabilityDigest(next).toString('hex') },
    });
    expect(registered.status).toBe(201);
    await writePrivateFile(managedCredentialPaths(join(harness.dir(), 'executor', 'credentials')).ledger, `${next}\n`);
    relay.hold(null);

    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId);
    await settled(s, executionId, tokenId, s.caller);
    await settled(s, underWayId, underWay, s.caller);
    const ledgerDb = new Database(join(harness.dir(), 'ledger', 'state', 'ledger.db'), { readonly: true });
    try {
      const claimedBy = ledgerDb.prepare('SELECT claimed_by FROM authorizations WHERE token_id = ?').pluck();
      expect(claimedBy.get(underWay)).toBe('lexec-executor');
      expect(claimedBy.get(tokenId)).toBe(credentialId);
    } finally {
      ledgerDb.close();
    }
    expect(s.executor.events().filter((event) => event.event === 'executor_ledger_credential_changed')).toHaveLength(1);
    expect(s.executor.lines.join('\n')).not.toContain(next);
    expect((await fetch(`${s.executor.url()}/readyz`)).status).toBe(200);
  });
});

describe('an explicit executor', () => {
  it('accepts its configured caller capability, admits nobody on the reconciliation route without one, and ends a capability replaced in its file at the next start', async () => {
    const ledger = await startTestLedger({ dir: join(harness.dir(), 'ledger') });
    harness.cleanups.push(() => ledger.close());
    const dir = harness.dir();
    const files = { caller: join(dir, 'secrets', 'caller.capability'), ledger: join(dir, 'secrets', 'ledger.capability') };
    const first = generateCapability('caller');
    await writePrivateFile(files.caller, `${first}\n`);
    await writePrivateFile(files.ledger, `${await mintCredential(ledger, 'executor')}\n`);
    const config = sandboxConfig();
    config.http = { host: '127.0.0.1', port: 0 };
    (config.ledger as JsonObject).endpoint = ledger.url;
    config.credentials = { mode: 'explicit', caller: { store: 'file', path: files.caller }, ledger: { store: 'file', path: files.ledger } };
    config.storage = { database_path: join(dir, 'executor', 'executor.db'), artifact_root: join(dir, 'executor', 'artifacts'), catalog_path: join(dir, 'executor', 'catalog.json') };
    config.development_allowance = true;
    const configPath = join(dir, 'executor.json');
    await writeFile(configPath, JSON.stringify(config));
    const start = async () => {
      const executor = spawnExecutor(configPath, dir, harness.cleanups);
      await until('listening', () => Promise.resolve(executor.url() === '' ? undefined : true));
      return executor;
    };

    let executor = await start();
    const catalog = (token: string) => call(executor.url(), 'GET', '/v1/provider-catalog', { token });
    expect((await catalog(first)).status).toBe(200);
    expect((await call(executor.url(), 'GET', '/v1/reconciliation/executions', { token: generateCapability('reconciliation') })).status).toBe(401);
    expectFailure(await credentials({ configPath }, 'rotate', '--role', 'caller'), 1, 'credentials_not_managed');

    await executor.kill('SIGTERM');
    const second = generateCapability('caller');
    await writePrivateFile(files.caller, `${second}\n`);
    executor = await start();
    expect((await catalog(second)).status).toBe(200);
    expect((await catalog(first)).status).toBe(401);
    const list = expectResult(await credentials({ configPath }, 'list')) as { credentials: View[] };
    expect(list.credentials.map((credential) => credential.status)).toEqual(['revoked', 'active']);
  });
});
