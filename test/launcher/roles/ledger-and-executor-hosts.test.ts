import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { makeTempDir, removeDir } from '../../support/cli.js';
import { exampleTable, toToml, writeProfile } from '../../support/example-profiles.js';
import { freePorts } from '../../support/free-ports.js';
import { jsonError, jsonResult, lexecIn, stopStack } from '../../support/stack-home.js';
import { rawRequest, signIn, startConsoleProcess } from '../../support/console-process.js';
import type { RunningStack } from '../../support/running-stack.js';

/*
 * The three roles with real processes (docs/deployment.md "Roles", "Enrolment"): a ledger-only
 * host in one LEXEC_HOME and executor hosts in others, on loopback (plain http: loopback only).
 * The ledger host's operator issues one-time tokens; an executor host enrols with one, starts,
 * and `lexec run` there settles at the remote ledger. Used, revoked and foreign-lineage tokens
 * are refused before anything is spent; the ledger's admin capability never reaches an executor host.
 */

let ledgerHome: string;
let hostHome: string;
let ledgerUrl: string;
let fake: Server;
let fakeRequests: string[];
const stacks: { home: string; paths: ReturnType<typeof profilePaths> }[] = [];

function ledgerHostProfile(port: number): string {
  const example = exampleTable('sandbox');
  return toToml({ schema_version: 1, kind: 'ledger', ports: { ledger: port }, ledger: example.ledger });
}

/** A sandbox executor host of `url` on free ports, its agent named `agent`. */
async function executorHostProfile(url: string, agent: string): Promise<string> {
  const table = exampleTable('sandbox');
  const [executor, sandbox] = await freePorts(2);
  table.ports = { executor, sandbox };
  table.ledger = { url };
  table.agent = { name: agent };
  return toToml(table);
}

const ledgerVerb = (args: string[]) => lexecIn(ledgerHome, [...args, '--profile', 'ledger', '--json']);

async function issue(name: string, file: string): Promise<{ enrolment: { enrolment_id: string; status: string }; token_file: string }> {
  const run = await ledgerVerb(['ledger', 'enrolments', 'issue', '--name', name, '--token-file', join(ledgerHome, file), '--ttl-minutes', '30']);
  // The token is only in its file: never on stdout or stderr.
  const token = (await readFile(join(ledgerHome, file), 'utf8')).trim();
  expect(run.stdout + run.stderr).not.toContain(token);
  expect((await stat(join(ledgerHome, file))).mode & 0o777).toBe(0o600);
  return jsonResult(run);
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

beforeAll(async () => {
  ledgerHome = await makeTempDir('lexec-roles-ledger-');
  hostHome = await makeTempDir('lexec-roles-host-');
  const [ledgerPort] = await freePorts(1);
  await writeProfile(ledgerHome, 'ledger', ledgerHostProfile(ledgerPort ?? 0));
  stacks.push({ home: ledgerHome, paths: profilePaths(ledgerHome, 'ledger') });
  const started = jsonResult<{ components: { name: string }[]; agent: unknown }>(await lexecIn(ledgerHome, ['stack', 'start', '--profile', 'ledger', '--json']));
  // A ledger host runs the ledger only: no executor, no sandbox, no agent.
  expect(started.components.map((component) => component.name)).toEqual(['ledger']);
  expect(started.agent).toBeNull();
  ledgerUrl = `http://127.0.0.1:${String(ledgerPort)}`;

  // A "ledger" of another lineage: it answers /version only, and records every request it gets.
  fakeRequests = [];
  const version = jsonResult<Record<string, string>>(await lexecIn(ledgerHome, ['version', '--json']));
  fake = createServer((request, response) => {
    fakeRequests.push(`${request.method ?? ''} ${request.url ?? ''}`);
    response.setHeader('content-type', 'application/json');
    if (request.url === '/version') response.end(JSON.stringify({ ...version, commit: 'f'.repeat(40), contract_level: 'v4.5' }));
    else response.writeHead(500).end('{}');
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
}, 120_000);

afterAll(async () => {
  for (const stack of stacks) await stopStack({ home: stack.home, paths: stack.paths, ports: { ledger: 0, executor: 0, sandbox: 0 } });
  await new Promise((resolve) => fake.close(resolve));
  await removeDir(ledgerHome);
  await removeDir(hostHome);
}, 120_000);

describe('a ledger host and an enrolled executor host', () => {
  it('start is refused until the host enrols; after enrolment `lexec run` there settles at the remote ledger', async () => {
    await writeProfile(hostHome, 'builder-1', await executorHostProfile(ledgerUrl, 'builder-1'));
    stacks.push({ home: hostHome, paths: profilePaths(hostHome, 'builder-1') });

    const refused = await lexecIn(hostHome, ['stack', 'start', '--profile', 'builder-1', '--json']);
    expect(refused.exitCode).toBe(3);
    expect(JSON.stringify(jsonError(refused))).toContain('ledger.remote');

    const issued = await issue('builder-1', 'builder-1.token');
    expect(issued.enrolment.status).toBe('open');
    const token = (await readFile(join(ledgerHome, 'builder-1.token'), 'utf8')).trim();
    const enrol = await lexecIn(hostHome, ['stack', 'enrol', '--profile', 'builder-1', '--ledger-url', ledgerUrl, '--token-file', join(ledgerHome, 'builder-1.token'), '--json']);
    const enrolled = jsonResult<{ agent: { name: string; agent_id: string }; host_name: string }>(enrol);
    expect(enrolled).toMatchObject({ host_name: 'builder-1', agent: { name: 'builder-1' } });
    // The host's new capabilities are in its private files only: not in the output, and (as digests went) not at the ledger host.
    const host = profilePaths(hostHome, 'builder-1');
    const secrets = [token, (await readFile(host.agentCapability, 'utf8')).trim(), (await readFile(join(host.executorCredentialsDir, 'ledger.capability'), 'utf8')).trim()];
    expect((await stat(host.agentCapability)).mode & 0o777).toBe(0o600);
    expect((await stat(host.enrolmentFile)).mode & 0o777).toBe(0o600);
    for (const secret of secrets) expect(enrol.stdout + enrol.stderr).not.toContain(secret);
    const ledgerHostFiles = (await filesUnder(ledgerHome)).filter((file) => !file.endsWith('builder-1.token'));
    for (const file of ledgerHostFiles) {
      const text = await readFile(file, 'utf8').catch(() => '');
      for (const secret of secrets) expect(text, file).not.toContain(secret);
    }

    const doctor = jsonResult<{ checks: { id: string; status: string }[] }>(await lexecIn(hostHome, ['stack', 'doctor', '--profile', 'builder-1', '--json']));
    expect(doctor.checks.find((check) => check.id === 'ledger.remote')?.status).toBe('pass');

    const started = jsonResult<{ components: { name: string }[]; agent: { agent_id: string } }>(await lexecIn(hostHome, ['stack', 'start', '--profile', 'builder-1', '--json']));
    // An executor host starts no ledger of its own.
    expect(started.components.map((component) => component.name)).toEqual(['executor', 'sandbox']);
    expect(started.agent.agent_id).toBe(enrolled.agent.agent_id);

    const run = jsonResult<{ authorization: { status: string } }>(await lexecIn(hostHome, ['run', 'a kite', '--profile', 'builder-1', '--out', join(hostHome, 'out'), '--json']));
    expect(run.authorization.status).toBe('settled');

    // The money is at the ledger host: the executor host's agent spent 3000 units (one square_hd image).
    const spend = jsonResult<{ groups: { group: string; label: string; settled_units: string; settled_count: number }[] }>(await ledgerVerb(['ledger', 'spend', '--by', 'agent']));
    expect(spend.groups).toEqual([expect.objectContaining({ group: enrolled.agent.agent_id, label: 'builder-1', settled_units: '3000', settled_count: 1 })]);
  }, 150_000);

  it("the console on the executor host shows its executions with their prompts and authorizations, and says the ledger's views are on the ledger host", async () => {
    const consoleProcess = await startConsoleProcess({ home: hostHome, env: { LEXEC_HOME: hostHome } } as unknown as RunningStack, ['--profile', 'builder-1']);
    try {
      const session = await signIn(consoleProcess.origin, consoleProcess.loginUrl);
      const get = (path: string) => rawRequest(consoleProcess.origin, 'GET', path, { headers: { 'x-lexec-session': session } });
      // Its executions, named by its own agent, the prompt read from the remote ledger with the host's agent capability.
      const listed = await get('/api/executions');
      expect(listed.status, listed.body).toBe(200);
      const executions = (JSON.parse(listed.body) as { executions: { execution_id: string; agent_name: string | null; prompt: string | null; state: string }[] }).executions;
      expect(executions).toEqual([expect.objectContaining({ agent_name: 'builder-1', prompt: 'a kite', state: 'succeeded' })]);
      const detail = await get(`/api/executions/${executions[0]?.execution_id ?? ''}`);
      expect(detail.status, detail.body).toBe(200);
      expect(detail.body).toContain('a kite');
      expect(JSON.parse(detail.body)).toMatchObject({ authorization: { status: 'settled' } });
      for (const path of ['/api/reconciliations', '/api/overview']) expect((await get(path)).status, path).toBe(200);
      // What only the ledger host holds.
      for (const path of ['/api/approvals', '/api/agents', '/api/audit']) {
        const answer = await get(path);
        expect([answer.status, JSON.parse(answer.body)], path).toEqual([404, { error: { code: 'not_on_this_host', reason_code: 'role_not_on_host' } }]);
      }
    } finally {
      await consoleProcess.stop();
    }
  });

  it('a used token, a revoked token and a ledger of another lineage are refused with nothing written or spent', async () => {
    // builder-1's token again, for another host.
    await writeProfile(hostHome, 'builder-2', await executorHostProfile(ledgerUrl, 'builder-1'));
    const reused = await lexecIn(hostHome, ['stack', 'enrol', '--profile', 'builder-2', '--token-file', join(ledgerHome, 'builder-1.token'), '--json']);
    expect(reused.exitCode).toBe(1);
    expect(jsonError(reused).code).toBe('enrolment_token_used');
    const builder2 = profilePaths(hostHome, 'builder-2');
    await expect(stat(builder2.agentCapability)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(builder2.enrolmentFile)).rejects.toMatchObject({ code: 'ENOENT' });

    const revoked = await issue('builder-2', 'builder-2.token');
    jsonResult(await ledgerVerb(['ledger', 'enrolments', 'revoke', revoked.enrolment.enrolment_id]));
    const afterRevoke = await lexecIn(hostHome, ['stack', 'enrol', '--profile', 'builder-2', '--token-file', join(ledgerHome, 'builder-2.token'), '--json']);
    expect(jsonError(afterRevoke).code).toBe('enrolment_token_revoked');

    // A ledger of another lineage: refused after asking its version only; the token stays unspent.
    const foreign = await issue('builder-3', 'builder-3.token');
    const fakeUrl = `http://127.0.0.1:${String((fake.address() as AddressInfo).port)}`;
    const other = await lexecIn(hostHome, ['stack', 'enrol', '--profile', 'builder-3', '--ledger-url', fakeUrl, '--token-file', join(ledgerHome, 'builder-3.token'), '--json']);
    expect(jsonError(other).code).toBe('ledger_lineage_mismatch');
    expect(fakeRequests).toEqual(['GET /version']);
    const listed = jsonResult<{ enrolments: { enrolment_id: string; status: string }[] }>(await ledgerVerb(['ledger', 'enrolments', 'list']));
    expect(listed.enrolments.find((entry) => entry.enrolment_id === foreign.enrolment.enrolment_id)?.status).toBe('open');
    expect(listed.enrolments.map((entry) => entry.status).sort()).toEqual(['open', 'redeemed', 'revoked']);
    await expect(stat(profilePaths(hostHome, 'builder-3').agentCapability)).rejects.toMatchObject({ code: 'ENOENT' });
  }, 120_000);

  it('enrol creates a missing profile as an executor host of --ledger-url, which then renders and passes the remote check', async () => {
    await issue('builder-4', 'builder-4.token');
    const created = jsonResult<{ profile_created: boolean; agent: { name: string } }>(
      await lexecIn(hostHome, ['stack', 'enrol', '--profile', 'builder-4', '--ledger-url', ledgerUrl, '--token-file', join(ledgerHome, 'builder-4.token'), '--json']),
    );
    expect(created).toMatchObject({ profile_created: true, agent: { name: 'builder-4' } });
    const text = await readFile(profilePaths(hostHome, 'builder-4').source, 'utf8');
    expect(text).toContain(`url = "${ledgerUrl}"`);
    expect(text).not.toMatch(/^ledger = /m);
    const doctor = jsonResult<{ checks: { id: string; status: string }[] }>(await lexecIn(hostHome, ['stack', 'doctor', '--profile', 'builder-4', '--json']));
    expect(Object.fromEntries(doctor.checks.filter((check) => ['profile.valid', 'ledger.remote'].includes(check.id)).map((check) => [check.id, check.status]))).toEqual({ 'profile.valid': 'pass', 'ledger.remote': 'pass' });
    // Without --ledger-url a missing profile cannot be made.
    const missing = await lexecIn(hostHome, ['stack', 'enrol', '--profile', 'builder-5', '--token-file', join(ledgerHome, 'builder-4.token'), '--json']);
    expect(missing.exitCode).toBe(2);
    expect(jsonError(missing).code).toBe('missing_flag');
  }, 60_000);

  it("the doctor fails ledger.remote once the ledger host revokes the host's executor credential", async () => {
    const listed = jsonResult<{ enrolments: { host_name: string; executor_credential_id: string | null }[] }>(await ledgerVerb(['ledger', 'enrolments', 'list']));
    const credential = listed.enrolments.find((entry) => entry.host_name === 'builder-1')?.executor_credential_id;
    expect(credential).toMatch(/^lexec-enrol-builder-1-executor-[0-9a-f]{16}$/);
    jsonResult(await ledgerVerb(['ledger', 'credentials', 'revoke', credential ?? '']));
    const doctor = await lexecIn(hostHome, ['stack', 'doctor', '--profile', 'builder-1', '--json']);
    expect(doctor.exitCode).toBe(3);
    const remote = jsonResult<{ checks: { id: string; status: string; summary: string }[] }>(doctor).checks.find((check) => check.id === 'ledger.remote');
    expect(remote).toMatchObject({ status: 'fail', summary: expect.stringContaining('ledger_credential_rejected') as unknown });
  }, 60_000);

  it("the console on the ledger host says executions are on the executor hosts, and shows what the ledger holds", async () => {
    const consoleProcess = await startConsoleProcess({ home: ledgerHome, env: { LEXEC_HOME: ledgerHome } } as unknown as RunningStack, ['--profile', 'ledger']);
    try {
      const session = await signIn(consoleProcess.origin, consoleProcess.loginUrl);
      const get = (path: string) => rawRequest(consoleProcess.origin, 'GET', path, { headers: { 'x-lexec-session': session } });
      for (const path of ['/api/executions', '/api/reconciliations']) {
        const answer = await get(path);
        expect([answer.status, JSON.parse(answer.body)]).toEqual([404, { error: { code: 'not_on_this_host', reason_code: 'no_executor_on_host' } }]);
      }
      // What the ledger holds is the ledger host's console's to show.
      for (const path of ['/api/approvals', '/api/agents', '/api/audit']) expect((await get(path)).status, path).toBe(200);
    } finally {
      await consoleProcess.stop();
    }
  });

  it("the ledger's admin capability is nowhere under the executor hosts' LEXEC_HOME", async () => {
    const admin = (await readFile(profilePaths(ledgerHome, 'ledger').ledgerAdminCapability, 'utf8')).trim();
    const files = await filesUnder(hostHome);
    expect(files.some((file) => file.endsWith('admin.capability'))).toBe(false);
    for (const file of files) {
      const text = await readFile(file, 'utf8').catch(() => '');
      expect(text, file).not.toContain(admin);
      expect(text, file).not.toMatch(/lexec_admin_[A-Za-z0-9_-]{43}/);
    }
  });
});
