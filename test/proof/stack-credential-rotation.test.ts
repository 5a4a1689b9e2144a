import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { startBackgroundRun, type BackgroundRun } from '../support/background-run.js';
import { expectFailure, expectResult } from '../support/cli.js';
import { call } from '../support/ledger.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { eventually } from '../support/stack-home.js';
import { checkStackInvariants } from './crash-scenarios.js';

/*
 * Issue 27 item 2 on a real stack: `lexec stack credentials rotate` replaces every one of the
 * stack's own capabilities (admin, agent, approver, the executor's ledger credential, caller,
 * reconciliation) while three `lexec run`s are under way — held mid-run by the sandbox answering
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

type Role = 'admin' | 'agent' | 'approver' | 'executor' | 'caller' | 'reconciliation';

async function capabilities(): Promise<Record<Role, string>> {
  const read = async (path: string) => (await readFile(path, 'utf8')).trim();
  return {
    admin: await stack.capability('admin'),
    agent: await stack.capability('agent'),
    approver: await stack.capability('approver'),
    executor: await read(managedCredentialPaths(stack.paths.executorCredentialsDir).ledger),
    caller: await stack.capability('caller'),
    reconciliation: await stack.capability('reconciliation'),
  };
}

/** Whether the server that accepted `role`'s capability still accepts `token`. */
async function accepted(role: Role, token: string): Promise<boolean> {
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
    expect(rotation.rotated.map((role) => role.role)).toEqual(['agent', 'approver', 'executor', 'caller', 'reconciliation', 'admin']);
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

    // The grace ends: every old capability is refused, wherever it was accepted.
    for (const role of Object.keys(old) as Role[]) {
      await eventually(`the old ${role} capability refused`, async () => ((await accepted(role, old[role])) ? undefined : true), 30_000);
    }

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
    // The four rotated roles' new credentials, and the stack's metrics capability, which `stack credentials rotate` leaves alone (docs/metrics.md).
    const active = listed.credentials.filter((credential) => credential.status === 'active') as { status: string; kind: string }[];
    expect(active.map((credential) => credential.kind).sort()).toEqual(['admin', 'agent', 'approver', 'executor', 'metrics']);
    expect(listed.credentials).toHaveLength(9);

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

    const bad = await stack.lexec(['stack', 'credentials', 'rotate', '--grace-seconds', '86401', '--json']);
    expectFailure(bad, 2, 'invalid_flag_value');
    const unknown = await stack.lexec(['stack', 'credentials', 'rotate', '--role', 'owner', '--json']);
    expect(unknown.exitCode).toBe(2);
  }, 120_000);
});
