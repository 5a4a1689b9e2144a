import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { capabilityKind, generateCapability } from '../../src/credentials/capability.js';
import { writePrivateFile } from '../../src/credentials/private-file.js';
import { createCapabilityAuthenticator } from '../../src/executor/credentials/authenticate-capability.js';
import { registerConfiguredCredentials } from '../../src/executor/credentials/register-configured-credentials.js';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { createCredentialStore } from '../../src/executor/store/credential-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { expectFailure, expectResult, makeTempDir, removeDir, runLexec, type CliRun } from '../support/cli.js';
import { sandboxConfig, type JsonObject } from '../support/config-fixtures.js';

/*
 * The executor's credential table and `lexec executor credentials list|revoke|rotate` on it: real
 * SQLite files, real managed credential files, the built binary in child processes. The table is
 * filled as `executor serve` fills it at start (registerConfiguredCredentials); the tests of a
 * running executor are in executor-credentials-process.test.ts.
 */

interface View {
  credential_id: string;
  kind: 'caller' | 'reconciliation';
  status: 'active' | 'expiring' | 'revoked';
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}
interface List {
  database_path: string;
  credentials: View[];
}
interface Revoked {
  changed: boolean;
  credential: View;
}
interface Rotated {
  role: string;
  credential_file: string;
  grace_seconds: number;
  credential: View;
  previous: View | null;
}

const ANY_CAPABILITY = /lexec_/;

let dir: string;
let configPath: string;
let databasePath: string;
let stateDir: string;
let configured: { caller: string; reconciliation: string };

/** A managed executor's configuration, state directory and database, registered as `executor serve` registers at start. */
async function managedExecutor(mode: 'managed' | 'explicit' = 'managed'): Promise<void> {
  stateDir = join(dir, 'credentials');
  databasePath = join(dir, 'executor.db');
  const paths = managedCredentialPaths(stateDir);
  configured = { caller: generateCapability('caller'), reconciliation: generateCapability('reconciliation') };
  await writePrivateFile(paths.caller, `${configured.caller}\n`);
  await writePrivateFile(paths.reconciliation, `${configured.reconciliation}\n`);
  await writePrivateFile(paths.ledger, `${generateCapability('executor')}\n`);
  const config = sandboxConfig();
  config.credentials =
    mode === 'managed'
      ? { mode: 'managed', state_dir: stateDir }
      : { mode: 'explicit', caller: { store: 'file', path: paths.caller }, ledger: { store: 'file', path: paths.ledger } };
  config.storage = { database_path: databasePath, artifact_root: join(dir, 'artifacts'), catalog_path: join(dir, 'catalog.json') } satisfies JsonObject;
  configPath = join(dir, 'executor.json');
  await writeFile(configPath, JSON.stringify(config));
  const db = openDatabase(databasePath, EXECUTOR_MIGRATIONS);
  try {
    registerConfiguredCredentials(createCredentialStore(db), configured, { now: Date.now(), nextStep: () => 'rotate it' });
  } finally {
    db.close();
  }
}

/** The table as it is, read-only, for "nothing changed" checks. */
function tableRows(): unknown[] {
  const db = new Database(databasePath, { readonly: true });
  try {
    return db.prepare('SELECT * FROM credentials ORDER BY credential_id').all();
  } finally {
    db.close();
  }
}

const lexec = (...args: string[]) => runLexec(['executor', 'credentials', ...args], { home: dir });
const listed = async (...args: string[]) => expectResult(await lexec('list', '--config', configPath, '--json', ...args)) as List;
const byKind = (list: List, kind: string) => list.credentials.filter((credential) => credential.kind === kind);
function noCapability(...runs: CliRun[]): void {
  for (const run of runs) expect(run.stdout + run.stderr).not.toMatch(ANY_CAPABILITY);
}

beforeEach(async () => {
  dir = await makeTempDir('lexec-executor-credentials-');
});

afterEach(async () => {
  await removeDir(dir);
});

describe('executor credentials list', () => {
  it('shows each credential with id, kind, created, last use and status, and never a capability', async () => {
    await managedExecutor();
    const json = await lexec('list', '--config', configPath, '--json');
    const human = await lexec('list', '--config', configPath);
    noCapability(json, human);
    const list = expectResult(json) as List;
    expect(list.database_path).toBe(databasePath);
    expect(list.credentials).toEqual([
      expect.objectContaining({ kind: 'caller', status: 'active', last_used_at: null, expires_at: null, revoked_at: null }),
      expect.objectContaining({ kind: 'reconciliation', status: 'active', last_used_at: null }),
    ]);
    for (const credential of list.credentials) {
      expect(credential.credential_id).toMatch(new RegExp(`^${credential.kind}-[0-9a-f]{16}$`));
      expect(Number.isNaN(Date.parse(credential.created_at))).toBe(false);
    }
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toMatch(/ID\s+KIND\s+CREATED\s+LAST USED\s+STATUS/);
    for (const credential of list.credentials) expect(human.stdout).toContain(credential.credential_id);
    expect(human.stdout).toContain('never');
    expect((await listed('--kind', 'reconciliation')).credentials.map((credential) => credential.kind)).toEqual(['reconciliation']);
  });

  it('records a use at most once a minute, and sees a revocation made through another connection at the next request', async () => {
    await managedExecutor();
    // One second into a minute: a use is recorded as that minute's start, once per minute.
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    let now = minute + 1_000;
    const db = openDatabase(databasePath, EXECUTOR_MIGRATIONS);
    try {
      const authenticate = createCapabilityAuthenticator(createCredentialStore(db), () => now);
      const lastUsed = () => (tableRows() as { kind: string; last_used_at: number | null }[]).find((row) => row.kind === 'caller')?.last_used_at;
      expect(authenticate(configured.caller)).toMatchObject({ kind: 'caller' });
      expect(lastUsed()).toBe(minute);
      now = minute + 59_999;
      expect(authenticate(configured.caller)).toMatchObject({ kind: 'caller' });
      expect(lastUsed()).toBe(minute);
      now = minute + 60_000;
      authenticate(configured.caller);
      expect(lastUsed()).toBe(minute + 60_000);
      expect(authenticate(generateCapability('caller'))).toBeNull();

      const id = (await listed()).credentials.find((credential) => credential.kind === 'caller')?.credential_id ?? '';
      expect((expectResult(await lexec('revoke', id, '--config', configPath, '--json')) as Revoked).changed).toBe(true);
      expect(authenticate(configured.caller)).toBeNull();
      expect(authenticate(configured.reconciliation)).toMatchObject({ kind: 'reconciliation' });
    } finally {
      db.close();
    }
  });
});

describe('executor credentials revoke', () => {
  it('revokes once; a repeat says when it was revoked and changes nothing', async () => {
    await managedExecutor();
    const caller = byKind(await listed(), 'caller')[0] as View;
    const first = await lexec('revoke', caller.credential_id, '--config', configPath, '--json');
    const revoked = expectResult(first) as Revoked;
    expect(revoked).toMatchObject({ changed: true, credential: { credential_id: caller.credential_id, status: 'revoked' } });
    expect(revoked.credential.revoked_at).not.toBeNull();
    const before = tableRows();

    const again = await lexec('revoke', caller.credential_id, '--config', configPath, '--json');
    expect(expectResult(again)).toEqual({ ...revoked, changed: false });
    const human = await lexec('revoke', caller.credential_id, '--config', configPath);
    expect(human.stdout).toContain(`was already revoked at ${revoked.credential.revoked_at ?? ''}; nothing changed`);
    expect(tableRows()).toEqual(before);
    noCapability(first, again, human);
  });

  it('refuses an unknown or malformed id and a relative --config, changing nothing', async () => {
    await managedExecutor();
    const before = tableRows();
    const unknown = expectFailure(await lexec('revoke', 'caller-0000000000000000', '--config', configPath, '--json'), 1, 'executor_credential_not_found');
    expect(unknown.message).toContain('caller-0000000000000000');
    expect(unknown.next_step).toContain('executor credentials list');
    const pasted = await lexec('revoke', configured.caller, '--config', configPath, '--json');
    expectFailure(pasted, 2, 'invalid_argument');
    noCapability(pasted);
    expectFailure(await lexec('revoke', 'caller-0000000000000000', '--config', 'executor.json', '--json'), 2, 'config_path_not_absolute');
    expect(tableRows()).toEqual(before);
  });
});

describe('executor credentials rotate', () => {
  const fileDigest = async (path: string) => createHash('sha256').update(await readFile(path)).digest('hex');

  it.each([
    ['caller', 0],
    ['reconciliation', 0],
    ['caller', 600],
  ] as const)('replaces the %s capability (grace %i s): a new file, the new credential active, the old one ended', async (role, grace) => {
    await managedExecutor();
    const file = managedCredentialPaths(stateDir)[role];
    const old = byKind(await listed(), role)[0] as View;
    const run = await lexec('rotate', '--config', configPath, '--role', role, '--grace-seconds', String(grace), '--json');
    noCapability(run);
    const rotated = expectResult(run) as Rotated;
    const token = (await readFile(file, 'utf8')).trim();
    expect(capabilityKind(token)).toBe(role);
    expect(token).not.toBe(configured[role]);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(rotated).toMatchObject({ role, credential_file: file, grace_seconds: grace, credential: { kind: role, status: 'active' } });
    expect(rotated.previous?.credential_id).toBe(old.credential_id);
    if (grace === 0) expect(rotated.previous).toMatchObject({ status: 'revoked' });
    else expect(Date.parse(rotated.previous?.expires_at ?? '') - Date.parse(rotated.credential.created_at)).toBeGreaterThanOrEqual(grace * 1000);
    expect(rotated.previous?.status).toBe(grace === 0 ? 'revoked' : 'expiring');
    const after = await listed('--kind', role);
    expect(after.credentials.map((credential) => credential.credential_id)).toEqual([old.credential_id, rotated.credential.credential_id]);
    // The other capability is untouched.
    const other = role === 'caller' ? 'reconciliation' : 'caller';
    expect((await readFile(managedCredentialPaths(stateDir)[other], 'utf8')).trim()).toBe(configured[other]);
    expect(byKind(await listed(), other)[0]?.status).toBe('active');
  });

  it.each([
    ['86401', '--grace-seconds=86401'],
    ['negative', '--grace-seconds=-1'],
    ['a fraction', '--grace-seconds=1.5'],
  ])('refuses a grace of %s as a usage error naming the flag, changing nothing', async (_name, flag) => {
    await managedExecutor();
    const file = managedCredentialPaths(stateDir).caller;
    const [before, digest] = [tableRows(), await fileDigest(file)];
    const failure = expectFailure(await lexec('rotate', '--config', configPath, '--role', 'caller', flag, '--json'), 2, 'invalid_flag_value');
    expect(failure.message).toContain('--grace-seconds');
    expect(tableRows()).toEqual(before);
    expect(await fileDigest(file)).toBe(digest);
  });

  it('refuses an explicit executor with the way to replace its capability, changing nothing', async () => {
    await managedExecutor('explicit');
    const file = managedCredentialPaths(stateDir).caller;
    const [before, digest] = [tableRows(), await fileDigest(file)];
    const failure = expectFailure(await lexec('rotate', '--config', configPath, '--role', 'caller', '--json'), 1, 'credentials_not_managed');
    expect(failure.next_step).toContain(file);
    expect(failure.next_step).toContain('start the executor again');
    expect(tableRows()).toEqual(before);
    expect(await fileDigest(file)).toBe(digest);
  });
});

describe("the executor's database as the credential commands open it", () => {
  it('is refused when its schema version is older or newer than this binary knows, and left as it was', async () => {
    await managedExecutor();
    const older = join(dir, 'older.db');
    openDatabase(older, EXECUTOR_MIGRATIONS.slice(0, EXECUTOR_MIGRATIONS.length - 1)).close();
    const config = JSON.parse(await readFile(configPath, 'utf8')) as JsonObject;
    (config.storage as JsonObject).database_path = older;
    await writeFile(configPath, JSON.stringify(config));
    const digest = createHash('sha256').update(await readFile(older)).digest('hex');
    const refused = expectFailure(await lexec('list', '--config', configPath, '--json'), 1, 'executor_database_schema_mismatch');
    expect(refused.message).toContain(`schema version ${EXECUTOR_MIGRATIONS.length - 1}`);
    expect(refused.next_step).toContain('Start the executor');
    expect(createHash('sha256').update(await readFile(older)).digest('hex')).toBe(digest);

    const newer = new Database(databasePath);
    newer.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(EXECUTOR_MIGRATIONS.length + 1, 'from_the_future', Date.now());
    newer.close();
    (config.storage as JsonObject).database_path = databasePath;
    await writeFile(configPath, JSON.stringify(config));
    const before = tableRows();
    const caller = (before as { credential_id: string }[]).find((row) => row.credential_id.startsWith('caller-'))?.credential_id ?? '';
    expectFailure(await lexec('revoke', caller, '--config', configPath, '--json'), 1, 'executor_database_schema_mismatch');
    expectFailure(await lexec('rotate', '--config', configPath, '--role', 'caller', '--json'), 1, 'executor_database_schema_mismatch');
    expect(tableRows()).toEqual(before);
    expect((await readFile(managedCredentialPaths(stateDir).caller, 'utf8')).trim()).toBe(configured.caller);
  });
});
