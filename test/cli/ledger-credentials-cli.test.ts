import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, makeTempDir, removeDir, runLexec, type CliOptions, type CliRun } from '../support/cli.js';
import { startLedgerProcess, type TemporaryLedgerProcess as LedgerProcess } from '../support/ledger-process.js';

/*
 * `lexec ledger credentials list|revoke|rotate` (and `create --holder-name`), end to end: the built
 * binary in child processes against a real `lexec ledger serve` child on loopback. The tests share
 * the ledger and run in order, as an operator would: issue, look, rotate with a grace, revoke.
 */

interface Credential {
  credential_id: string;
  kind: string;
  agent_id: string | null;
  holder_name: string | null;
  status: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_from: string | null;
  replaced_by: string | null;
}

let ledger: LedgerProcess;
let root: string;
const runs: CliRun[] = [];

async function lexec(args: readonly string[], options?: CliOptions): Promise<CliRun> {
  const run = await runLexec(args, options);
  runs.push(run);
  return run;
}

const target = (tokenFile = ledger.adminCapabilityPath) => ['--url', ledger.url, '--token-file', tokenFile];
const file = (name: string) => join(root, 'credentials', name);

/** The `--json` result of a run that succeeded, as docs/ledger-cli.md documents it. */
function result<T>(run: CliRun, shape?: (value: unknown) => T): T {
  expect(run.stderr).toBe('');
  expect(run.exitCode).toBe(0);
  const document = JSON.parse(run.stdout) as { ok: boolean; result: unknown };
  expect(document.ok).toBe(true);
  return shape === undefined ? (document.result as T) : shape(document.result);
}

const list = async (...filter: string[]) => result<{ credentials: Credential[] }>(await lexec(['ledger', 'credentials', 'list', ...filter, ...target(), '--json'])).credentials;
const approvals = (tokenFile: string) => lexec(['ledger', 'approvals', 'list', ...target(tokenFile), '--json']);

beforeAll(async () => {
  ledger = await startLedgerProcess();
  root = await makeTempDir('lexec-ledger-credentials-cli-');
});

afterAll(async () => {
  await ledger.stop();
  await removeDir(root);
});

let ada: Credential;

describe('the credential lifecycle through the CLI', () => {
  it('create --holder-name issues a named approver; list shows it with its status and times, never a capability', async () => {
    const created = result<{ credential: { credential_id: string; holder_name: string } }>(
      await lexec(['ledger', 'credentials', 'create', '--kind', 'approver', '--holder-name', 'Ada Lovelace', '--credential-file', file('ada.capability'), ...target(), '--json']),
    );
    expect(created.credential.holder_name).toBe('Ada Lovelace');
    expect((await approvals(file('ada.capability'))).exitCode).toBe(0);

    const all = await list();
    expect(all.map((credential) => credential.kind)).toEqual(['admin', 'approver']);
    ada = all.find((credential) => credential.credential_id === created.credential.credential_id) as Credential;
    expect(ada).toMatchObject({ kind: 'approver', agent_id: null, holder_name: 'Ada Lovelace', status: 'active', expires_at: null, revoked_at: null });
    expect(ada.last_used_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/);
    expect((await list('--kind', 'admin')).map((credential) => credential.credential_id)).toEqual(['admin']);

    const human = await lexec(['ledger', 'credentials', 'list', ...target()]);
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toContain(`${ada.credential_id}  approver (held by Ada Lovelace)  active`);
    expect(human.stdout).toMatch(/last used \d{4}-\d\d-\d\dT\d\d:\d\dZ/);
  });

  it('rotate --grace-seconds writes the new capability 0600 and both work until the grace ends; then only the new one', async () => {
    const rotated = result<{ credential: Credential; replaced: Credential; outcome: string; credential_file: string }>(
      await lexec(['ledger', 'credentials', 'rotate', ada.credential_id, '--credential-file', file('ada-2.capability'), '--grace-seconds', '3', ...target(), '--json']),
    );
    expect(rotated).toMatchObject({ outcome: 'created', credential: { kind: 'approver', holder_name: 'Ada Lovelace', rotated_from: ada.credential_id }, replaced: { status: 'expiring' } });
    expect((await stat(file('ada-2.capability'))).mode & 0o777).toBe(0o600);
    expect((await approvals(file('ada.capability'))).exitCode).toBe(0);
    expect((await approvals(file('ada-2.capability'))).exitCode).toBe(0);

    // The same command again (its answer lost, say) finds the rotation done and changes nothing.
    const again = result<{ outcome: string; credential: Credential }>(
      await lexec(['ledger', 'credentials', 'rotate', ada.credential_id, '--credential-file', file('ada-2.capability'), ...target(), '--json']),
    );
    expect(again).toMatchObject({ outcome: 'unchanged', credential: { credential_id: rotated.credential.credential_id } });

    // Wait for the grace to end (a condition, not a timed assertion).
    const deadline = Date.now() + 30_000;
    while ((await approvals(file('ada.capability'))).exitCode === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
    expectFailure(await approvals(file('ada.capability')), 1, 'ledger_unauthorized');
    expect((await approvals(file('ada-2.capability'))).exitCode).toBe(0);
    const human = await lexec(['ledger', 'credentials', 'list', '--kind', 'approver', ...target()]);
    expect(human.stdout).toMatch(new RegExp(`${ada.credential_id}  approver \\(held by Ada Lovelace\\)  revoked at`));
    expect(human.stdout).toContain(`replaced by ${rotated.credential.credential_id}`);
    ada = rotated.credential;
  });

  it('revoke refuses the capability at its next request; a repeat says it was already revoked', async () => {
    const revoked = result<{ changed: boolean; credential: Credential }>(await lexec(['ledger', 'credentials', 'revoke', ada.credential_id, ...target(), '--json']));
    expect(revoked).toMatchObject({ changed: true, credential: { status: 'revoked' } });
    expectFailure(await approvals(file('ada-2.capability')), 1, 'ledger_unauthorized');
    const again = await lexec(['ledger', 'credentials', 'revoke', ada.credential_id, ...target()]);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain(`was already revoked at ${revoked.credential.revoked_at ?? ''}; nothing changed.`);
  });

  it('refuses bad input with clear errors, changing nothing', async () => {
    const before = await list();
    expectFailure(await lexec(['ledger', 'credentials', 'revoke', 'admin', ...target(), '--json']), 1, 'ledger_conflict');
    const last = JSON.parse((await lexec(['ledger', 'credentials', 'revoke', 'admin', ...target(), '--json'])).stdout) as { error: { next_step: string } };
    expect(last.error.next_step).toContain('rotate');
    expectFailure(await lexec(['ledger', 'credentials', 'revoke', 'cred_nobody', ...target(), '--json']), 1, 'ledger_not_found');
    expectFailure(await lexec(['ledger', 'credentials', 'revoke', 'bad id!', ...target(), '--json']), 2, 'invalid_argument');
    const beyond = await lexec(['ledger', 'credentials', 'rotate', 'admin', '--credential-file', file('admin-2.capability'), '--grace-seconds', '86401', ...target(), '--json']);
    expect(beyond.exitCode).toBe(2);
    expect(beyond.stdout + beyond.stderr).toContain('grace-seconds');
    expectFailure(await lexec(['ledger', 'credentials', 'rotate', ada.credential_id, '--credential-file', file('ada-3.capability'), ...target(), '--json']), 1, 'ledger_conflict');
    // A refused rotation leaves no capability file behind.
    await expect(stat(file('ada-3.capability'))).rejects.toMatchObject({ code: 'ENOENT' });
    expectFailure(await lexec(['ledger', 'credentials', 'rotate', 'admin', '--credential-file', 'relative.capability', ...target(), '--json']), 2, 'credential_file_not_absolute');
    const secretName = await lexec(['ledger', 'credentials', 'create', '--kind', 'approver', '--holder-name', `lexec_admin_${'A'.repeat(43)}`, '--credential-file', file('x.capability'), ...target(), '--json']);
    expect(secretName.exitCode).toBe(1);
    expect(secretName.stdout).toContain('holder_name');
    expect(await list()).toEqual(before.map((credential) => ({ ...credential, last_used_at: expect.anything() as unknown })));
  });
});

describe('secrets', () => {
  it('no capability appears in any output of this file, nor in the ledger log', async () => {
    const secrets = await Promise.all([ledger.adminCapabilityPath, file('ada.capability'), file('ada-2.capability')].map(async (path) => (await readFile(path, 'utf8')).trim()));
    expect(runs.length).toBeGreaterThan(15);
    for (const secret of secrets) {
      for (const run of runs) expect(run.stdout + run.stderr).not.toContain(secret);
      expect(ledger.stderr()).not.toContain(secret);
    }
  });
});
