import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { listTree, makeTempDir, removeDir, runLexec, type CliRun } from '../support/cli.js';
import { readTemplate, type JsonObject } from '../support/config-fixtures.js';
import { freePorts } from '../support/free-ports.js';
import { startLedgerProcess, type TemporaryLedgerProcess } from '../support/ledger-process.js';

/*
 * `lexec executor credentials bootstrap-managed`, end to end: the built binary in child
 * processes against real `lexec ledger serve` child processes on loopback, with real files.
 * Tests share one ledger and run in order: the first bootstrap registers `lexec-executor`
 * there, and later tests rely on that registration to provoke conflicts.
 */

interface Result {
  caller_capability: 'created' | 'reused';
  reconciliation_capability: 'created' | 'reused';
  ledger_credential: 'created' | 'reused';
  ledger_endpoint: string;
  state_dir: string;
}
interface Failure {
  kind: string;
  code: string;
  message: string;
  next_step: string;
  issues: { path: string; message: string }[];
}

const COMMAND = 'executor credentials bootstrap-managed';
const ANY_CAPABILITY = /lexec_[a-z]+_[A-Za-z0-9_-]{43}/;

let ledger: TemporaryLedgerProcess;
let root: string;
/** Every CLI run of this file and every capability it saw, checked at the end for leaks. */
const runs: CliRun[] = [];
const secrets = new Set<string>();

beforeAll(async () => {
  ledger = await startLedgerProcess();
  root = await makeTempDir('lexec-executor-bootstrap-');
});

afterAll(async () => {
  await ledger.stop();
  await removeDir(root);
});

/** A managed executor configuration (from the shipped managed template) with all state under `dir`. */
async function writeExecutorConfig(dir: string, options: { endpoint?: string; stateDir?: string; credentials?: JsonObject } = {}): Promise<string> {
  const config = readTemplate('executor.managed-temporal.example.json');
  config.ledger = { endpoint: options.endpoint ?? ledger.url, product_version: 'v0.3.0' };
  config.credentials = options.credentials ?? { mode: 'managed', state_dir: options.stateDir ?? join(dir, 'credentials') };
  config.storage = { database_path: join(dir, 'executor.db'), artifact_root: join(dir, 'artifacts'), catalog_path: join(dir, 'provider-catalog.json') };
  config.workflow_engine = {
    mode: 'managed_local',
    temporal_cli: { path: join(dir, 'bin', 'temporal'), version: '1.4.1' },
    data_dir: join(dir, 'temporal'),
  };
  await mkdir(dir, { recursive: true });
  const path = join(dir, 'executor.json');
  await writeFile(path, JSON.stringify(config, null, 2));
  return path;
}

async function bootstrap(configPath: string, adminCapability = ledger.adminCapabilityPath, json = true): Promise<CliRun> {
  const run = await runLexec(['executor', 'credentials', 'bootstrap-managed', '--config', configPath, '--ledger-admin-capability', adminCapability, ...(json ? ['--json'] : [])]);
  runs.push(run);
  return run;
}

function succeeded(run: CliRun): Result {
  expect(run.stderr).toBe('');
  expect(run.exitCode).toBe(0);
  const document = JSON.parse(run.stdout) as { json_version: number; command: string; ok: boolean; result: Result };
  expect(document).toMatchObject({ json_version: 1, command: COMMAND, ok: true });
  return document.result;
}

function failed(run: CliRun, exitCode: number, code: string): Failure {
  expect(run.exitCode).toBe(exitCode);
  const document = JSON.parse(run.stdout) as { ok: boolean; command: string; error: Failure };
  expect(document).toMatchObject({ ok: false, command: COMMAND });
  expect(document.error.code).toBe(code);
  expect(document.error.next_step).not.toBe('');
  return document.error;
}

/** A capability file's content, remembered as a secret for the leak check. */
async function capabilityIn(path: string): Promise<string> {
  const token = (await readFile(path, 'utf8')).trim();
  secrets.add(token);
  return token;
}

/** Writes a capability to a new private file (0600 in a 0700 directory). */
async function writeCapability(path: string, token: string, mode = 0o600): Promise<void> {
  if (ANY_CAPABILITY.test(token)) secrets.add(token);
  await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
  await writeFile(path, `${token}\n`, { mode });
  await chmod(path, mode);
}

/** The executor credential rows of a ledger's database, read-only. */
function executorCredentials(ledgerDir: string): { credential_id: string; kind: string; digest: string }[] {
  const db = new Database(join(ledgerDir, 'state', 'ledger.db'), { readonly: true });
  try {
    const rows = db.prepare("SELECT credential_id, kind, digest FROM credentials WHERE kind = 'executor'").all() as { credential_id: string; kind: string; digest: Buffer }[];
    return rows.map((row) => ({ credential_id: row.credential_id, kind: row.kind, digest: row.digest.toString('hex') }));
  } finally {
    db.close();
  }
}

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

/** What a GET /agents with `token` answers: the executor kind may read it. */
async function agentsStatus(url: string, token: string): Promise<number> {
  const response = await fetch(`${url}/agents`, { headers: { authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  return response.status;
}

/** Content, inode and times of every file under `dir`, and of `dir` itself: what "changed nothing" compares. */
async function snapshot(dir: string): Promise<Record<string, unknown>> {
  const entries: Record<string, unknown> = {};
  for (const name of ['.', ...(await listTree(dir))]) {
    const path = join(dir, name);
    const info = await stat(path);
    entries[name] = {
      mode: info.mode,
      ino: info.ino,
      mtimeMs: info.mtimeMs,
      ctimeMs: info.ctimeMs,
      content: info.isFile() ? await readFile(path, 'utf8') : null,
    };
  }
  return entries;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** A loopback port nobody listens on: one of this worker's own (free-ports.ts), so nobody else takes it meanwhile. */
async function closedPort(): Promise<number> {
  const [port = 0] = await freePorts(1);
  return port;
}

describe('first and repeated bootstrap', () => {
  const dir = () => join(root, 'main');
  const stateDir = () => join(dir(), 'credentials');

  it('creates the caller capability and the executor→ledger credential, 0600 in a 0700 directory, and registers only the digest', async () => {
    const config = await writeExecutorConfig(dir());
    const result = succeeded(await bootstrap(config));
    expect(result).toEqual({
      caller_capability: 'created',
      reconciliation_capability: 'created',
      ledger_credential: 'created',
      ledger_endpoint: ledger.url,
      state_dir: stateDir(),
    });

    expect((await stat(stateDir())).mode & 0o777).toBe(0o700);
    expect(await listTree(stateDir())).toEqual(['caller.capability', 'ledger.capability', 'reconciliation.capability']);
    for (const file of ['caller.capability', 'ledger.capability', 'reconciliation.capability']) expect((await stat(join(stateDir(), file))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(stateDir(), 'reconciliation.capability'), 'utf8')).toMatch(/^lexec_reconciliation_[A-Za-z0-9_-]{43}\n$/);
    expect(await readFile(join(stateDir(), 'caller.capability'), 'utf8')).toMatch(/^lexec_caller_[A-Za-z0-9_-]{43}\n$/);
    expect(await readFile(join(stateDir(), 'ledger.capability'), 'utf8')).toMatch(/^lexec_executor_[A-Za-z0-9_-]{43}\n$/);

    const caller = await capabilityIn(join(stateDir(), 'caller.capability'));
    const executor = await capabilityIn(join(stateDir(), 'ledger.capability'));
    await capabilityIn(ledger.adminCapabilityPath);
    expect(executorCredentials(ledger.dir)).toEqual([{ credential_id: 'lexec-executor', kind: 'executor', digest: sha256(executor) }]);
    // The ledger admits the executor capability on its protected route; the caller one is for the executor only.
    expect(await agentsStatus(ledger.url, executor)).toBe(200);
    expect(await agentsStatus(ledger.url, caller)).toBe(401);
  });

  it('a second run reports reused twice and changes no file, time or ledger row', async () => {
    const before = await snapshot(stateDir());
    const rows = executorCredentials(ledger.dir);
    const result = succeeded(await bootstrap(join(dir(), 'executor.json')));
    expect(result).toEqual({
      caller_capability: 'reused',
      reconciliation_capability: 'reused',
      ledger_credential: 'reused',
      ledger_endpoint: ledger.url,
      state_dir: stateDir(),
    });
    expect(await snapshot(stateDir())).toEqual(before);
    expect(executorCredentials(ledger.dir)).toEqual(rows);
  });

  it('the human result goes to stdout, categories only; stderr stays empty', async () => {
    const before = await snapshot(stateDir());
    const run = await bootstrap(join(dir(), 'executor.json'), ledger.adminCapabilityPath, false);
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain(`managed credentials ready in ${stateDir()}`);
    // Every credential the --json result names, each with its outcome.
    expect(run.stdout).toMatch(/caller capability +reused/);
    expect(run.stdout).toMatch(/reconciliation capability +reused/);
    expect(run.stdout).toMatch(/ledger credential +reused \(at http:\/\/127\.0\.0\.1:\d+\)/);
    expect(await snapshot(stateDir())).toEqual(before);
  });

  it('a run stopped after the ledger registration (no caller capability yet) is completed by the next one', async () => {
    const executorFile = join(stateDir(), 'ledger.capability');
    const before = { content: await readFile(executorFile, 'utf8'), mtimeMs: (await stat(executorFile)).mtimeMs };
    await unlink(join(stateDir(), 'caller.capability'));
    const result = succeeded(await bootstrap(join(dir(), 'executor.json')));
    expect(result).toMatchObject({ caller_capability: 'created', ledger_credential: 'reused' });
    expect({ content: await readFile(executorFile, 'utf8'), mtimeMs: (await stat(executorFile)).mtimeMs }).toEqual(before);
    expect((await stat(join(stateDir(), 'caller.capability'))).mode & 0o777).toBe(0o600);
    await capabilityIn(join(stateDir(), 'caller.capability'));
  });

  it('after a ledger restore without the credential, re-registers the existing file (created) and then reuses it', async () => {
    const restored = await startLedgerProcess();
    try {
      const config = await writeExecutorConfig(join(root, 'restored'), { endpoint: restored.url, stateDir: stateDir() });
      const before = await snapshot(stateDir());
      expect(succeeded(await bootstrap(config, restored.adminCapabilityPath))).toMatchObject({ caller_capability: 'reused', ledger_credential: 'created' });
      expect(succeeded(await bootstrap(config, restored.adminCapabilityPath))).toMatchObject({ caller_capability: 'reused', ledger_credential: 'reused' });
      expect(await snapshot(stateDir())).toEqual(before);
      const executor = await capabilityIn(join(stateDir(), 'ledger.capability'));
      expect(executorCredentials(restored.dir)).toEqual([{ credential_id: 'lexec-executor', kind: 'executor', digest: sha256(executor) }]);
      await capabilityIn(restored.adminCapabilityPath);
      expect(restored.stderr()).not.toMatch(ANY_CAPABILITY);
    } finally {
      await restored.stop();
    }
  });
});

describe('the admin capability fails closed before anything changes', () => {
  it('a well-formed admin capability the ledger does not know is rejected; no state directory is created', async () => {
    const dir = join(root, 'wrong-admin');
    const config = await writeExecutorConfig(dir);
    const wrong = join(dir, 'other-ledger', 'admin.capability');
    await writeCapability(wrong, generateCapability('admin'));
    const error = failed(await bootstrap(config, wrong), 1, 'ledger_capability_rejected');
    expect(error.message).toContain(wrong);
    const human = await bootstrap(config, wrong, false);
    expect(human.exitCode).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain(`Error: ${error.message}`);
    expect(await exists(join(dir, 'credentials'))).toBe(false);
  });

  it('a capability of another kind is refused without asking the ledger', async () => {
    const dir = join(root, 'not-admin');
    const config = await writeExecutorConfig(dir);
    const file = join(dir, 'keys', 'executor.capability');
    await writeCapability(file, generateCapability('executor'));
    failed(await bootstrap(config, file), 1, 'ledger_admin_capability_invalid');
    expect(await exists(join(dir, 'credentials'))).toBe(false);
  });

  it('an admin capability file readable by others (0644) is refused, even though it holds the right capability', async () => {
    const dir = join(root, 'loose-admin');
    const config = await writeExecutorConfig(dir);
    const loose = join(dir, 'keys', 'admin.capability');
    await writeCapability(loose, await capabilityIn(ledger.adminCapabilityPath), 0o644);
    failed(await bootstrap(config, loose), 1, 'secret_file_not_private');
    expect(await exists(join(dir, 'credentials'))).toBe(false);
  });

  it('a symbolic link to the admin capability is refused', async () => {
    const dir = join(root, 'linked-admin');
    const config = await writeExecutorConfig(dir);
    const link = join(dir, 'admin.capability');
    await symlink(ledger.adminCapabilityPath, link);
    failed(await bootstrap(config, link), 1, 'secret_file_not_private');
    expect(await exists(join(dir, 'credentials'))).toBe(false);
  });

  it('a missing admin capability file is named', async () => {
    const dir = join(root, 'missing-admin');
    const config = await writeExecutorConfig(dir);
    failed(await bootstrap(config, join(dir, 'nowhere.capability')), 1, 'secret_file_missing');
    expect(await exists(join(dir, 'credentials'))).toBe(false);
  });
});

describe('conflicts fail closed and overwrite nothing', () => {
  it('an existing ledger.capability the ledger does not hold (lexec-executor has another digest): conflict, file untouched, no caller created', async () => {
    const dir = join(root, 'foreign-ledger-file');
    const config = await writeExecutorConfig(dir);
    const stateDir = join(dir, 'credentials');
    await writeCapability(join(stateDir, 'ledger.capability'), generateCapability('executor'));
    const before = await snapshot(stateDir);
    const rows = executorCredentials(ledger.dir);
    const error = failed(await bootstrap(config), 1, 'ledger_credential_conflict');
    expect(error.message).toContain('lexec-executor');
    expect(await snapshot(stateDir)).toEqual(before);
    expect(executorCredentials(ledger.dir)).toEqual(rows);
  });

  it('no ledger.capability yet but lexec-executor taken: the file written for it is removed again', async () => {
    const dir = join(root, 'second-executor');
    const config = await writeExecutorConfig(dir);
    const rows = executorCredentials(ledger.dir);
    failed(await bootstrap(config), 1, 'ledger_credential_conflict');
    expect(await listTree(join(dir, 'credentials'))).toEqual([]);
    expect(executorCredentials(ledger.dir)).toEqual(rows);
  });

  it.each([
    ['malformed', 'not a capability', 0o600],
    ['of another kind', generateCapability('agent'), 0o600],
    ['readable by others', generateCapability('caller'), 0o644],
  ])('a caller.capability that is %s is a conflict, checked before anything changes', async (what, content, mode) => {
    const dir = join(root, `caller-${what.replaceAll(' ', '-')}`);
    const config = await writeExecutorConfig(dir);
    const stateDir = join(dir, 'credentials');
    await writeCapability(join(stateDir, 'caller.capability'), content, mode);
    const before = await snapshot(stateDir);
    failed(await bootstrap(config), 1, 'caller_capability_conflict');
    expect(await snapshot(stateDir)).toEqual(before);
  });

  it('a malformed ledger.capability is a conflict too', async () => {
    const dir = join(root, 'malformed-ledger-file');
    const config = await writeExecutorConfig(dir);
    const stateDir = join(dir, 'credentials');
    await writeCapability(join(stateDir, 'ledger.capability'), generateCapability('caller'));
    const before = await snapshot(stateDir);
    const error = failed(await bootstrap(config), 1, 'ledger_credential_conflict');
    expect(error.message).toContain('does not hold an executor capability');
    expect(await snapshot(stateDir)).toEqual(before);
  });

  it('a state directory others can read (0755) is refused, not tightened', async () => {
    const dir = join(root, 'loose-state');
    const config = await writeExecutorConfig(dir);
    const stateDir = join(dir, 'credentials');
    await mkdir(stateDir, { mode: 0o755 });
    await chmod(stateDir, 0o755);
    failed(await bootstrap(config), 1, 'credential_directory_not_private');
    expect((await stat(stateDir)).mode & 0o777).toBe(0o755);
    expect(await listTree(stateDir)).toEqual([]);
  });
});

describe('configuration and command line', () => {
  it('an unreachable ledger is a clear error naming the configured endpoint; nothing is created', async () => {
    const dir = join(root, 'unreachable');
    const endpoint = `http://127.0.0.1:${String(await closedPort())}`;
    const config = await writeExecutorConfig(dir, { endpoint });
    const error = failed(await bootstrap(config), 1, 'ledger_unreachable');
    expect(error.message).toContain(endpoint);
    expect(error.next_step).toContain('ledger.endpoint');
    expect(await exists(join(dir, 'credentials'))).toBe(false);
  });

  it('plain http to a host that is not loopback is refused before the capability is sent', async () => {
    const dir = join(root, 'insecure');
    const config = await writeExecutorConfig(dir, { endpoint: 'http://ledger.example.com:7400' });
    const error = failed(await bootstrap(config), 1, 'config_invalid');
    expect(error.issues).toEqual([{ path: 'ledger.endpoint', message: expect.stringContaining('loopback') as string }]);
    expect(await exists(join(dir, 'credentials'))).toBe(false);
  });

  it('a configuration with explicit credentials is refused with a clear error', async () => {
    const dir = join(root, 'explicit');
    const config = await writeExecutorConfig(dir, {
      credentials: { mode: 'explicit', caller: { store: 'file', path: join(dir, 'caller') }, ledger: { store: 'file', path: join(dir, 'ledger') } },
    });
    const error = failed(await bootstrap(config), 1, 'credentials_not_managed');
    expect(error.issues).toEqual([{ path: 'credentials.mode', message: 'must be "managed" for credentials bootstrap-managed' }]);
    expect(await listTree(dir)).toEqual(['executor.json']);
  });

  it('an invalid configuration is reported by field path', async () => {
    const dir = join(root, 'invalid');
    await mkdir(dir, { recursive: true });
    const config = join(dir, 'executor.json');
    await writeFile(config, JSON.stringify({ schema_version: 3 }));
    failed(await bootstrap(config), 1, 'config_invalid');
  });

  it('relative paths are usage errors (exit 2)', async () => {
    const config = await writeExecutorConfig(join(root, 'relative'));
    failed(await bootstrap('executor.json'), 2, 'config_path_not_absolute');
    failed(await bootstrap(config, 'admin.capability'), 2, 'ledger_admin_capability_not_absolute');
    const missing = await runLexec(['executor', 'credentials', 'bootstrap-managed', '--config', config, '--json']);
    runs.push(missing);
    failed(missing, 2, 'usage_error');
  });

  it('is hidden from help but has its own', async () => {
    // The credentials topic holds the operator's list, revoke and rotate; the bootstrap stays out of its listing.
    const topic = await runLexec(['executor', 'credentials', '--help']);
    expect(topic.stdout).toContain('executor credentials rotate');
    expect(topic.stdout).not.toContain('bootstrap-managed');
    const help = await runLexec(['executor', 'credentials', 'bootstrap-managed', '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('--ledger-admin-capability');
  });
});

describe('secrets', () => {
  it('no capability appears in any stdout or stderr (human or --json), nor in the ledger log', () => {
    expect(runs.length).toBeGreaterThan(20);
    expect(secrets.size).toBeGreaterThan(5);
    for (const run of runs) {
      expect(run.stdout + run.stderr).not.toMatch(ANY_CAPABILITY);
      for (const secret of secrets) expect(run.stdout + run.stderr).not.toContain(secret);
    }
    expect(ledger.stderr()).not.toMatch(ANY_CAPABILITY);
  });
});
