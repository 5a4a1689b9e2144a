import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { BIN, makeTempDir, removeDir, runLexec } from '../support/cli.js';
import { sandboxConfig, type JsonObject } from '../support/config-fixtures.js';
import { executionRequest } from '../support/executor.js';
import { call, mintCredential } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';
import { spawnSandbox, type SandboxFault, type SandboxProcess } from '../support/sandbox-process.js';

/*
 * Durable execution between real processes (issue 5): a real ledger, a real sandbox provider and
 * a real executor. Recovery dispositions are proven by SIGKILLing the executor at the point in
 * question and starting it again on the same state.
 */

let dir: string;
const cleanups: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  dir = await makeTempDir('lexec-durable-');
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await removeDir(dir);
});

interface Execution {
  execution_id: string;
  state: string;
  state_reason: string | null;
  provider_attempts: { checkpointed: boolean; state: string }[];
  receipt: { receipt_id: string; exact_amount: string; scale: string; receipt_shape: string; ledger_settlement_id: string | null } | null;
  artifact_count: number;
  recommended_action: { code: string };
}

function spawnExecutor(configPath: string) {
  const child = spawn(process.execPath, [BIN, 'executor', 'serve', '--config', configPath], { env: { PATH: process.env.PATH ?? '', HOME: dir }, stdio: ['ignore', 'ignore', 'pipe'] });
  const lines: string[] = [];
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
  const exit = new Promise<number>((resolve) => child.once('exit', (code) => { resolve(code ?? 128); }));
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exit;
  };
  cleanups.push(() => kill());
  const url = () => {
    for (const line of lines) {
      try {
        const event = JSON.parse(line) as { event?: string; port?: number };
        if (event.event === 'executor_started') return `http://127.0.0.1:${String(event.port)}`;
      } catch {
        // not JSON
      }
    }
    return '';
  };
  return { url, lines, kill };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Stack {
  ledger: LedgerProcess;
  sandbox: SandboxProcess;
  admin: string;
  reconciliation: string;
  caller: string;
  /** The executor reconciliation route's capability. */
  resolver: string;
  configPath: string;
  executor: ReturnType<typeof spawnExecutor>;
  /** Starts the executor again on the same state (after a kill). */
  restart(): Promise<void>;
  approvedToken(): Promise<string>;
  submit(tokenId: string, imageCount?: number): Promise<string>;
  execution(executionId: string): Promise<Execution>;
  waitFor(executionId: string, what: string, test: (execution: Execution) => boolean, timeoutMs?: number): Promise<Execution>;
  authorization(tokenId: string): Promise<{ status: string; settlement: { amount_units: string } | null }>;
}

async function stack(
  options: {
    contractLevel?: 'v4.5' | 'v4.4';
    sandboxArgs?: string[];
    deadlineSeconds?: number;
    providersDisabled?: boolean;
    /** Put a relay between executor and ledger; returns the URL the executor should use. */
    relay?: (ledgerUrl: string) => Promise<string>;
  } = {},
): Promise<Stack> {
  const ledger = await spawnLedger(join(dir), ledgerConfig(join(dir, 'ledger'), { contract_level: options.contractLevel ?? 'v4.5' }));
  cleanups.push(() => ledger.stop('SIGKILL'));
  const sandbox = await spawnSandbox({ args: options.sandboxArgs ?? ['--complete-after-ms', '200'] });
  cleanups.push(() => sandbox.stop('SIGKILL'));
  const admin = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();

  const config = sandboxConfig();
  config.http = { host: '127.0.0.1', port: 0 };
  (config.ledger as JsonObject).endpoint = options.relay === undefined ? ledger.url : await options.relay(ledger.url);
  config.credentials = { mode: 'managed', state_dir: join(dir, 'executor', 'credentials') };
  config.storage = {
    database_path: join(dir, 'executor', 'executor.db'),
    artifact_root: join(dir, 'executor', 'artifacts'),
    catalog_path: join(dir, 'executor', 'provider-catalog.json'),
  };
  config.providers = options.providersDisabled
    ? { mode: 'disabled' }
    : { mode: 'sandbox', base_url: sandbox.url, operation_deadline_seconds: options.deadlineSeconds ?? 600 };
  config.development_allowance = true;
  const configPath = join(dir, 'executor.json');
  await writeFile(configPath, JSON.stringify(config, null, 2));
  const bootstrap = await runLexec(['executor', 'credentials', 'bootstrap-managed', '--config', configPath, '--ledger-admin-capability', ledger.adminCapabilityPath], { home: dir });
  expect(bootstrap.exitCode, bootstrap.stderr).toBe(0);
  const managed = managedCredentialPaths(join(dir, 'executor', 'credentials'));
  const caller = (await readFile(managed.caller, 'utf8')).trim();
  const resolver = (await readFile(managed.reconciliation, 'utf8')).trim();

  const created = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: admin, body: { name: 'bot' } });
  const agent = await mintCredential({ url: ledger.url, adminToken: admin }, 'agent', created.body.agent.agent_id);
  const reconciliation = await mintCredential({ url: ledger.url, adminToken: admin }, 'reconciliation');

  const ready = async (executor: ReturnType<typeof spawnExecutor>) =>
    until('executor ready', async () => (executor.url() !== '' && (await fetch(`${executor.url()}/readyz`)).status === 200 ? true : undefined));

  const result: Stack = {
    ledger,
    sandbox,
    admin,
    reconciliation,
    caller,
    resolver,
    configPath,
    executor: spawnExecutor(configPath),
    async restart() {
      result.executor = spawnExecutor(configPath);
      await ready(result.executor);
    },
    async approvedToken() {
      const answer = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
        token: agent,
        body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
      });
      return answer.body.authorization.token_id;
    },
    async submit(tokenId, imageCount = 2) {
      const answer = await call<{ execution: { execution_id: string } }>(result.executor.url(), 'POST', '/v2/executions', {
        token: caller,
        body: executionRequest(tokenId, { input: { prompt: 'a lighthouse at dusk', image_count: imageCount, image_size: 'square_hd' } }),
      });
      expect(answer.status).toBe(201);
      return answer.body.execution.execution_id;
    },
    async execution(executionId) {
      return (await call<{ execution: Execution }>(result.executor.url(), 'GET', `/v1/executions/${executionId}`, { token: caller })).body.execution;
    },
    async waitFor(executionId, what, test, timeoutMs) {
      let last: Execution | undefined;
      try {
        return await until(what, async () => {
          last = await result.execution(executionId);
          return test(last) ? last : undefined;
        }, timeoutMs);
      } catch (error) {
        const tail = result.executor.lines.filter((line) => !line.includes('http_request') && !line.includes('dependency_probe')).slice(-8).join('\n');
        throw new Error(`${String(error)}; last state ${JSON.stringify(last)}; executor log tail:\n${tail}`, { cause: error });
      }
    },
    async authorization(tokenId) {
      return (await call<{ authorization: { status: string; settlement: { amount_units: string } | null } }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: admin })).body
        .authorization;
    },
  };
  await ready(result.executor);
  return result;
}

async function openRecords(s: Stack) {
  return (await call<{ records: { token_id: string; reason: string; evidence: Record<string, unknown> }[] }>(s.ledger.url, 'GET', '/reconciliation-records?status=open', {
    token: s.reconciliation,
  })).body.records;
}

const setFaults = (s: Stack, faults: SandboxFault[]) => s.sandbox.setFaults(faults);

/**
 * Admits one execution whose submission reaches the sandbox but is never answered, SIGKILLs the
 * executor there (before any checkpoint) and starts it again.
 */
async function killDuringSubmission(s: Stack): Promise<{ tokenId: string; executionId: string }> {
  await setFaults(s, [{ kind: 'hang_submit', times: 1 }]);
  const tokenId = await s.approvedToken();
  const executionId = await s.submit(tokenId);
  await until('submission received', async () => ((await s.sandbox.submissions()).length === 1 ? true : undefined));
  await s.executor.kill('SIGKILL');
  await s.sandbox.clearFaults();
  await s.restart();
  return { tokenId, executionId };
}

/**
 * A loopback HTTP relay to the ledger that can hold (never answer) requests whose path matches,
 * to stop the executor at an exact point of a flow.
 */
async function ledgerRelay(target: string) {
  let hold: RegExp | null = null;
  const held: http.ServerResponse[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (hold?.test(request.url ?? '')) {
        held.push(response);
        return;
      }
      const forward = http.request(`${target}${request.url ?? ''}`, { method: request.method, headers: request.headers }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      forward.on('error', () => response.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const response of held) response.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${String(port)}`,
    hold(pattern: RegExp | null) {
      hold = pattern;
    },
    heldCount: () => held.length,
  };
}

describe('end to end', () => {
  it('an authorization and a POST become stored PNG artifacts, a settlement of exactly the priced amount, and one submission', async () => {
    const s = await stack();
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 2);
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.artifact_count).toBe(2);
    // 2 images x 3/1000 USD = 0.006 USD = 6000 micro-units.
    expect(execution.receipt).toMatchObject({ exact_amount: '6000', scale: '6', receipt_shape: 'precise' });
    expect(execution.receipt?.ledger_settlement_id).toMatch(/^stl_/);
    expect(execution.recommended_action.code).toBe('none');

    const listing = await call<{ artifacts: { content_path: string; sha256: string; media_type: string; width: string }[] }>(
      s.executor.url(),
      'GET',
      `/v1/executions/${executionId}/artifacts`,
      { token: s.caller },
    );
    expect(listing.body.artifacts).toHaveLength(2);
    for (const artifact of listing.body.artifacts) {
      const response = await fetch(`${s.executor.url()}${artifact.content_path}`, { headers: { authorization: `Bearer ${s.caller}` } });
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(artifact.sha256);
      expect(bytes.readUInt32BE(16)).toBe(1024);
    }
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '6000' } });
    expect((await s.sandbox.submissions()).filter((record) => record.request_id !== null)).toHaveLength(1);

    // What the engine persisted: the stable workflow id, the execution id and the phase — no
    // credential, body, URL or path.
    const db = new Database(join(dir, 'executor', 'executor.db'), { readonly: true });
    const runs = db.prepare('SELECT * FROM workflow_runs').all() as Record<string, unknown>[];
    db.close();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ workflow_id: `lexec-execution-${executionId}`, execution_id: executionId, phase: 'settle', status: 'completed' });
    const persisted = JSON.stringify(runs);
    for (const forbidden of [s.caller, 'http', '/', 'lexec_', 'lighthouse', dir]) expect(persisted).not.toContain(forbidden);
  }, 60_000);
});

describe('recovery dispositions (SIGKILL and restart)', () => {
  it('submit may have succeeded, checkpoint not committed: reconciliation, no resubmit, no release', async () => {
    const s = await stack();
    const { tokenId, executionId } = await killDuringSubmission(s);
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution.state_reason).toBe('submission_unconfirmed');
    expect(execution.provider_attempts).toMatchObject([{ state: 'ambiguous', checkpointed: false }]);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    expect((await openRecords(s)).map((record) => [record.token_id, record.reason])).toEqual([[tokenId, 'submission_unconfirmed']]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await s.sandbox.submissions()).toHaveLength(1);
  }, 60_000);

  it('a power failure lost the unsynced engine hand-off: the pending execution is scheduled again at start and runs once', async () => {
    // Four submissions that are never answered hold the engine's four worker slots, so a fifth
    // admitted execution stays queued.
    const s = await stack();
    await setFaults(s, [{ kind: 'hang_submit', times: 4 }]);
    for (let index = 0; index < 4; index += 1) await s.submit(await s.approvedToken(), 1);
    await until('four submissions held', async () => ((await s.sandbox.submissions()).length === 4 ? true : undefined));
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    expect((await s.execution(executionId)).state).toBe('scheduled');
    await s.executor.kill('SIGKILL');

    // What survives a power failure when the hand-off and `scheduled` commits (which do not wait
    // for their own fsync) are lost: the durable pending execution, without its workflow run.
    const db = new Database(join(dir, 'executor', 'executor.db'));
    db.prepare('DELETE FROM workflow_runs WHERE execution_id = ?').run(executionId);
    db.prepare("UPDATE executions SET state = 'pending' WHERE execution_id = ?").run(executionId);
    db.close();

    await s.sandbox.clearFaults();
    await s.restart();
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.provider_attempts).toHaveLength(1);
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
    expect(await s.sandbox.submissions()).toHaveLength(5);
  }, 60_000);

  it('checkpoint committed: polling of the same operation resumes, one submission, one settlement', async () => {
    const s = await stack({ sandboxArgs: ['--complete-after-ms', '3000'] });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
    await s.executor.kill('SIGKILL');
    await s.restart();
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.provider_attempts).toHaveLength(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
  }, 60_000);

  it('original deadline expired: not refreshed, reconciliation, no re-inspection advice, no replacement operation', async () => {
    const s = await stack({ deadlineSeconds: 2 });
    await setFaults(s, [{ kind: 'never_complete' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
    await s.executor.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await s.restart();
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution.state_reason).toBe('deadline_expired');
    expect(execution.recommended_action.code).toBe('contact_provider_support');
    expect(execution.provider_attempts).toMatchObject([{ state: 'deadline_expired' }]);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 60_000);

  it('billing ambiguous: evidence kept, reconciliation, nothing repeated after a restart', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'complete_with_error' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    await s.executor.kill('SIGKILL');
    await s.restart();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const execution = await s.execution(executionId);
    expect(execution).toMatchObject({ state: 'reconciliation', state_reason: 'billing_ambiguous', provider_attempts: [{ state: 'provider_failed' }] });
    const records = await openRecords(s);
    expect(records).toHaveLength(1);
    expect(records[0]?.evidence).toMatchObject({ outcome_code: 'completed_with_error' });
    expect(JSON.stringify(records[0]?.evidence)).not.toMatch(/https?:\/\//);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 60_000);

  it('an older ledger rejects the precise receipt: receipt kept, reconciliation, no provider retry, precision intact', async () => {
    const s = await stack({ contractLevel: 'v4.4' });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    await s.executor.kill('SIGKILL');
    await s.restart();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const execution = await s.execution(executionId);
    expect(execution).toMatchObject({ state: 'reconciliation', state_reason: 'receipt_rejected', recommended_action: { code: 'upgrade_ledger_then_reconcile' } });
    expect(execution.receipt).toMatchObject({ exact_amount: '3000', scale: '6', receipt_shape: 'precise', ledger_settlement_id: null });
    expect(execution.artifact_count).toBe(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    expect((await openRecords(s)).map((record) => record.reason)).toEqual(['receipt_rejected']);
  }, 60_000);

  it('failure proven to precede transmission: killed before the release reached the ledger, released after the restart', async () => {
    let relay: Awaited<ReturnType<typeof ledgerRelay>> | undefined;
    const s = await stack({
      relay: async (ledgerUrl) => {
        relay = await ledgerRelay(ledgerUrl);
        return relay.url;
      },
    });
    if (relay === undefined) throw new Error('no relay');
    const gate = relay;
    await s.sandbox.stop('SIGKILL');
    gate.hold(/\/release$/);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    // The submission failed before any connection; the release is on its way and held.
    await until('release held', () => Promise.resolve(gate.heldCount() > 0 ? true : undefined));
    expect((await s.execution(executionId)).provider_attempts).toMatchObject([{ state: 'not_transmitted' }]);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
    await s.executor.kill('SIGKILL');
    gate.hold(null);
    await s.restart();
    const execution = await s.waitFor(executionId, 'failure', (e) => e.state === 'failed');
    expect(execution).toMatchObject({ state_reason: 'not_transmitted', provider_attempts: [{ state: 'not_transmitted' }] });
    expect((await s.authorization(tokenId)).status).toBe('released');
  }, 60_000);
});

describe('the executor reconciliation route', () => {
  const resolve = (s: Stack, executionId: string, body: unknown, token = s.resolver) =>
    call<{ replayed: boolean; resolution: Record<string, unknown>; execution: Execution; error?: Record<string, unknown> }>(
      s.executor.url(),
      'POST',
      `/v1/reconciliation/executions/${executionId}/resolve`,
      { token, body },
    );

  it('lists executions under reconciliation with evidence and settles one with the provider evidence, recorded', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'complete_with_error' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 2);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');

    expect((await call(s.executor.url(), 'GET', '/v1/reconciliation/executions', { token: s.caller })).status).toBe(401);
    const listed = await call<{ executions: { execution_id: string; evidence: { outcome_code: string }[] }[] }>(
      s.executor.url(),
      'GET',
      '/v1/reconciliation/executions',
      { token: s.resolver },
    );
    expect(listed.body.executions.map((execution) => [execution.execution_id, execution.evidence[0]?.outcome_code])).toEqual([[executionId, 'completed_with_error']]);
    expect((await resolve(s, executionId, { resolution: 'settle', note: 'provider invoice' })).body).toEqual({
      error: { code: 'invalid_request', reason_code: 'images_billed_required', fields: ['images_billed'] },
    });

    const settled = await resolve(s, executionId, { resolution: 'settle', images_billed: 1, note: 'provider invoice INV-1 shows one image' });
    expect(settled.status).toBe(200);
    expect(settled.body).toMatchObject({
      replayed: false,
      resolution: { resolution: 'settled', images_billed: '1', amount_units: '3000', note: 'provider invoice INV-1 shows one image' },
      execution: { state: 'succeeded', state_reason: 'reconciled_settled', receipt: { exact_amount: '3000', receipt_shape: 'precise' } },
    });
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
    expect(await openRecords(s)).toEqual([]);
    expect((await resolve(s, executionId, { resolution: 'settle', images_billed: 1, note: 'again' })).body).toMatchObject({ replayed: true });
    expect((await resolve(s, executionId, { resolution: 'release', note: 'changed my mind' })).body).toEqual({ error: { code: 'conflict', reason_code: 'already_resolved' } });
    expect(await s.sandbox.submissions()).toHaveLength(1);
  }, 60_000);

  it('releases when the provider proves no charge', async () => {
    const s = await stack();
    const { tokenId, executionId } = await killDuringSubmission(s);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    const released = await resolve(s, executionId, { resolution: 'release', note: 'provider support: request never queued' });
    expect(released.body).toMatchObject({ resolution: { resolution: 'released' }, execution: { state: 'failed', state_reason: 'reconciled_no_charge' } });
    expect((await s.authorization(tokenId)).status).toBe('released');
    expect(await openRecords(s)).toEqual([]);
  }, 60_000);

  it('an older ledger still refuses the kept precise receipt: nothing is resolved until the upgrade', async () => {
    const s = await stack({ contractLevel: 'v4.4' });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    const refused = await resolve(s, executionId, { resolution: 'settle', note: 'try settling' });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'conflict', reason_code: 'ledger_precise_receipt_unsupported' } } });
    expect((await s.execution(executionId)).state).toBe('reconciliation');
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 60_000);
});

describe('provider hosts, answers and the disabled mode', () => {
  it('an acceptance whose status URL is on a foreign host is never polled: the submission is ambiguous', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'foreign_host', field: 'status_url' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution).toMatchObject({ state_reason: 'submission_unconfirmed', provider_attempts: [{ state: 'ambiguous', checkpointed: false }] });
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('claimed');
  }, 60_000);

  it('a status answer for another request id makes billing ambiguous', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'mismatched_request_id', route: 'status' }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    const execution = await s.waitFor(executionId, 'reconciliation', (e) => e.state === 'reconciliation');
    expect(execution.state_reason).toBe('billing_ambiguous');
    expect(await s.sandbox.submissions()).toHaveLength(1);
  }, 60_000);

  it('fewer images than asked are stored and billed as delivered', async () => {
    const s = await stack();
    await setFaults(s, [{ kind: 'fewer_images', omit: 1 }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 2);
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect(execution.artifact_count).toBe(1);
    expect(execution.receipt?.exact_amount).toBe('3000');
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
  }, 60_000);

  it('{"mode":"disabled"} admits nothing and sends nothing', async () => {
    const s = await stack({ providersDisabled: true });
    const tokenId = await s.approvedToken();
    const answer = await call(s.executor.url(), 'POST', '/v2/executions', { token: s.caller, body: executionRequest(tokenId) });
    expect(answer.body).toEqual({ error: { code: 'invalid_request', reason_code: 'target_not_selectable', fields: ['target_id'] } });
    const targets = await call<{ targets: unknown[] }>(s.executor.url(), 'GET', '/v2/execution-targets', { token: s.caller });
    expect(targets.body.targets).toEqual([]);
    expect(await s.sandbox.submissions()).toHaveLength(0);
    expect((await s.authorization(tokenId)).status).toBe('approved');
  }, 60_000);
});
