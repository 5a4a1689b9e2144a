import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilityDigest, generateCapability } from '../../src/credentials/capability.js';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { generationDir } from '../../src/launcher/generations/generation-store.js';
import { readHandoff } from '../../src/launcher/handoff/handoff.js';
import { startBackgroundRun, type BackgroundRun } from '../support/background-run.js';
import { expectFailure, expectResult } from '../support/cli.js';
import { call } from '../support/ledger.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { eventually } from '../support/stack-home.js';
import { checkStackInvariants } from './crash-scenarios.js';

/*
 * Issue 27 item 2 on a real stack: `lexec stack credentials rotate` replaces every one of the
 * stack's own capabilities (admin, agent, approver, the executor's ledger credential, caller,
 * reconciliation, and the metrics capability both servers accept) while three `lexec run`s are under way — held mid-run by the sandbox answering
 * its status route 503 until the test clears the fault. All three end `succeeded` and settle once,
 * although their clients and the executor started with capabilities the servers refuse after the
 * grace; every old capability is refused; the stack stops and starts again on the rotated files
 * (bootstrap-managed and the local credentials find them registered), and the checker is quiet.
 */

let stack: RunningStack;

beforeAll(async () => {
  stack = await startRunningStack();
}, 180_000);

afterAll(async () => {
  await stack.stop();
}, 120_000);

type Role = 'admin' | 'agent' | 'approver' | 'executor' | 'caller' | 'reconciliation' | 'metrics';

async function capabilities(): Promise<Record<Role, string>> {
  const read = async (path: string) => (await readFile(path, 'utf8')).trim();
  return {
    admin: await stack.capability('admin'),
    agent: await stack.capability('agent'),
    approver: await stack.capability('approver'),
    executor: await read(managedCredentialPaths(stack.paths.executorCredentialsDir).ledger),
    caller: await stack.capability('caller'),
    reconciliation: await stack.capability('reconciliation'),
    metrics: await read(stack.paths.metricsCapability),
  };
}

/** Whether the ledger and the executor each answer GET /metrics to `token`. */
async function scrapes(token: string): Promise<{ ledger: boolean; executor: boolean }> {
  // Prometheus text, not JSON: the status is all that is read.
  const status = async (url: string) => {
    const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    await response.body?.cancel();
    return response.status;
  };
  return { ledger: (await status(stack.ledgerUrl)) === 200, executor: (await status(stack.executorUrl)) === 200 };
}

/** Whether the server that accepted `role`'s capability still accepts `token` (metrics: both servers; refused: by both). */
async function accepted(role: Role, token: string): Promise<boolean> {
  if (role === 'metrics') {
    const both = await scrapes(token);
    if (both.ledger !== both.executor) throw new Error(`the metrics capability is accepted by ${both.ledger ? 'the ledger' : 'the executor'} only`);
    return both.ledger;
  }
  if (role === 'caller') return (await call(stack.executorUrl, 'GET', '/v1/provider-catalog', { token })).status === 200;
  if (role === 'reconciliation') return (await call(stack.executorUrl, 'GET', '/v1/reconciliation/executions', { token })).status === 200;
  return (await call(stack.ledgerUrl, 'GET', '/credentials/self', { token })).status === 200;
}

interface Rotation {
  profile: string;
  grace_seconds: number;
  rotated: { role: Role; credential_id: string; replaced_credential_id: string; old_accepted_until: string | null; outcome: string; credential_file: string }[];
}

describe('rotating a running stack\'s own credentials', () => {
  it('replaces every role while three runs are under way; the runs succeed, the old capabilities are refused, the stack restarts on the new ones', async () => {
    await stack.sandbox.setFaults([{ kind: 'http_error', route: 'status', status: 503 }]);
    const runs: BackgroundRun[] = ['a lighthouse', 'a harbour', 'a tide'].map((prompt) =>
      startBackgroundRun([prompt, '--out', prompt.replaceAll(' ', '-'), '--json'], { cwd: stack.home, env: { HOME: stack.home, ...stack.env } }),
    );
    for (const run of runs) await run.waitFor(/execution exe_[0-9a-f]{32}: running \(poll_provider_operation\)/, 120_000);
    const old = await capabilities();
    const handoffBefore = JSON.parse(await readFile(stack.paths.handoffFile, 'utf8')) as { written_at: string };

    const rotation = expectResult(await stack.lexec(['stack', 'credentials', 'rotate', '--grace-seconds', '2', '--json'])) as Rotation;
    expect(rotation.rotated.map((role) => role.role)).toEqual(['agent', 'approver', 'executor', 'caller', 'reconciliation', 'metrics', 'admin']);
    for (const role of rotation.rotated) {
      expect(role.outcome).toBe('rotated');
      expect(role.credential_id).not.toBe(role.replaced_credential_id);
      expect((await stat(role.credential_file)).mode & 0o777).toBe(0o600);
    }
    const fresh = await capabilities();
    for (const role of Object.keys(old) as Role[]) {
      expect(fresh[role]).not.toBe(old[role]);
      expect(await accepted(role, fresh[role])).toBe(true);
    }
    const handoffAfter = JSON.parse(await readFile(stack.paths.handoffFile, 'utf8')) as { written_at: string };
    expect(Date.parse(handoffAfter.written_at)).toBeGreaterThan(Date.parse(handoffBefore.written_at));

    // The grace ends: every old capability is refused, wherever it was accepted (the metrics one by both servers).
    for (const role of Object.keys(old) as Role[]) {
      if (role === 'metrics') continue;
      await eventually(`the old ${role} capability refused`, async () => ((await accepted(role, old[role])) ? undefined : true), 30_000);
    }
    await eventually('the old metrics capability refused by both servers', async () => {
      const both = await scrapes(old.metrics);
      return both.ledger || both.executor ? undefined : true;
    }, 30_000);

    // The runs go on with what their clients and the executor read again: all three succeed, settled once.
    await stack.sandbox.setFaults([]);
    const results = await Promise.all(runs.map((run) => run.done));
    for (const result of results) {
      expect(result.exitCode, result.stderr).toBe(0);
      expect((JSON.parse(result.stdout) as { result: { execution: { state: string }; authorization: { status: string } } }).result).toMatchObject({
        execution: { state: 'succeeded' },
        authorization: { status: 'settled' },
      });
    }
    const secrets = [...Object.values(old), ...Object.values(fresh)];
    for (const text of [...results.map((result) => result.stdout + result.stderr), JSON.stringify(rotation)]) {
      for (const secret of secrets) expect(text).not.toContain(secret);
    }

    // The rotated files are the stack's own from now on: a restart registers nothing new, and runs.
    await stack.restart();
    const ran = expectResult(await stack.lexec(['run', 'after the rotation', '--out', join(stack.home, 'out', 'after'), '--json'], { timeoutMs: 150_000 })) as { authorization: { status: string } };
    expect(ran.authorization.status).toBe('settled');
    const listed = expectResult(await stack.lexec(['ledger', 'credentials', 'list', '--json'])) as { credentials: { status: string }[] };
    // The five rotated roles' new credentials at the ledger, each beside the one it replaced.
    const active = listed.credentials.filter((credential) => credential.status === 'active') as { status: string; kind: string }[];
    expect(active.map((credential) => credential.kind).sort()).toEqual(['admin', 'agent', 'approver', 'executor', 'metrics']);
    expect(listed.credentials).toHaveLength(10);
    // The executor after its restart: the rotated metrics capability active, the old one refused; both servers scrape with the file's.
    const handoff = await readHandoff(stack.paths);
    const executorConfig = join(generationDir(stack.paths, handoff?.generation_id ?? ''), 'executor.json');
    const listedAtExecutor = expectResult(await stack.lexec(['executor', 'credentials', 'list', '--config', executorConfig, '--kind', 'metrics', '--json'])) as { credentials: { status: string }[] };
    const executorMetrics = listedAtExecutor.credentials;
    expect(executorMetrics.map((credential) => credential.status).sort()).toEqual(['active', 'revoked']);
    expect(await scrapes((await readFile(stack.paths.metricsCapability, 'utf8')).trim())).toEqual({ ledger: true, executor: true });

    const report = checkStackInvariants(stack);
    expect(report.violations).toEqual([]);
    expect(report.counts.executions).toBe(4);
  }, 400_000);

  it('finishes an interrupted rotation when run again, and refuses a stopped stack and bad input', async () => {
    // As if the command died after the ledger rotated the approver but before the rename.
    const approverFile = stack.paths.approverCapability;
    const before = await readFile(approverFile, 'utf8');
    await writeFile(`${approverFile}.next`, 'not a capability\n', { mode: 0o600 });
    const rotation = expectResult(await stack.lexec(['stack', 'credentials', 'rotate', '--role', 'approver', '--grace-seconds', '0', '--json'])) as Rotation;
    expect(rotation.rotated).toHaveLength(1);
    expect(await readFile(approverFile, 'utf8')).not.toBe(before);
    await expect(stat(`${approverFile}.next`)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await accepted('approver', before.trim())).toBe(false);

    // The metrics capability, as if the command died after the ledger rotated it but before the
    // executor knew the new one and the file held it: run again, it is registered at the
    // executor, put in place and the old one ended at both servers.
    const metricsBefore = (await readFile(stack.paths.metricsCapability, 'utf8')).trim();
    const admin = await stack.capability('admin');
    const self = await call<{ credential: { credential_id: string } }>(stack.ledgerUrl, 'GET', '/credentials/self', { token: metricsBefore });
    const interrupted = generateCapability('metrics');
    const digest = capabilityDigest(interrupted).toString('hex');
    const ledgerRotation = await call(stack.ledgerUrl, 'POST', `/credentials/${self.body.credential.credential_id}/rotate`, {
      token: admin,
      body: { new_credential_id: `lexec-local-metrics-${digest.slice(0, 16)}`, digest_sha256: digest, grace_seconds: 0 },
    });
    expect(ledgerRotation.status).toBe(201);
    await writeFile(`${stack.paths.metricsCapability}.next`, `${interrupted}\n`, { mode: 0o600 });
    expect(await scrapes(interrupted)).toEqual({ ledger: true, executor: false });
    const finished = expectResult(await stack.lexec(['stack', 'credentials', 'rotate', '--role', 'metrics', '--grace-seconds', '0', '--json'])) as Rotation;
    expect(finished.rotated.map((role) => [role.role, role.outcome])).toEqual([['metrics', 'finished']]);
    expect((await readFile(stack.paths.metricsCapability, 'utf8')).trim()).toBe(interrupted);
    expect(await scrapes(interrupted)).toEqual({ ledger: true, executor: true });
    expect(await scrapes(metricsBefore)).toEqual({ ledger: false, executor: false });

    const bad = await stack.lexec(['stack', 'credentials', 'rotate', '--grace-seconds', '86401', '--json']);
    expectFailure(bad, 2, 'invalid_flag_value');
    const unknown = await stack.lexec(['stack', 'credentials', 'rotate', '--role', 'owner', '--json']);
    expect(unknown.exitCode).toBe(2);
  }, 120_000);
});
