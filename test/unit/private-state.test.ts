import { closeSync, openSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createArtifactStore } from '../../src/executor/artifact-store.js';
import { openRotatingLog } from '../../src/process/rotating-log.js';
import { openJobJournal } from '../../src/provider/sandbox/job-journal.js';
import { openDatabase, type Migration } from '../../src/storage/open-database.js';
import { preparePrivateDatabase, tightenedEvent, tightenOpenFile, type TightenedFile } from '../../src/storage/private-state.js';
import { profilePaths } from '../../src/launcher/home/stack-home.js';
import { createProfileFromExample, exampleProfilePath } from '../../src/launcher/profiles/profile-store.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { admitOne, startTestExecutor } from '../support/executor.js';
import { setUpActors, startTestLedger } from '../support/ledger.js';

/*
 * Every state file lexec writes is 0600 and every directory it creates 0700 by an explicit mode,
 * so no umask makes them wider: each writer runs here, in this (forked) test process, with
 * umask 000 — what a careless service manager or shell may hand it — and the modes are read back
 * from the real files. (The servers also set umask 077 for themselves; that is proven on real
 * processes in test/cli/private-state-processes.test.ts, and would hide these writers' modes.)
 */

let dir: string;
let umask: number;

beforeEach(async () => {
  dir = await makeTempDir('lexec-private-state-');
  umask = process.umask(0);
});

afterEach(async () => {
  process.umask(umask);
  await removeDir(dir);
});

const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

const MIGRATIONS: readonly Migration[] = [{ version: 1, name: 'notes', up: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)' }];

describe('a SQLite database (openDatabase) under umask 000', () => {
  it('is created 0600 in 0700 directories wherever the configuration puts it, and its -wal and -shm are 0600 while it is open', async () => {
    const path = join(dir, 'elsewhere', 'not', 'a', 'lexec', 'home', 'ledger.db');
    const db = openDatabase(path, MIGRATIONS);
    try {
      db.prepare('INSERT INTO notes (body) VALUES (?)').run('a prompt');
      for (const created of ['elsewhere', 'elsewhere/not', 'elsewhere/not/a/lexec/home']) expect(await modeOf(join(dir, created))).toBe(0o700);
      expect(await modeOf(path)).toBe(0o600);
      expect(await modeOf(`${path}-wal`)).toBe(0o600);
      expect(await modeOf(`${path}-shm`)).toBe(0o600);
    } finally {
      db.close();
    }
  });

  it('tightens a database and journals an older release left open to others, says which, and keeps every row', async () => {
    const path = join(dir, 'executor.db');
    // As an older release left it: SQLite's own 0644 (minus the umask), -wal and -shm with it; kept open so they stay.
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    old.exec("CREATE TABLE kept (body TEXT); INSERT INTO kept VALUES ('receipt')");
    for (const file of [path, `${path}-wal`, `${path}-shm`]) expect(await modeOf(file)).toBe(0o644);
    const told: TightenedFile[] = [];
    const db = openDatabase(path, MIGRATIONS, { onTightened: (files) => told.push(...files) });
    try {
      expect(told).toEqual([
        { path, previousMode: 0o644 },
        { path: `${path}-wal`, previousMode: 0o644 },
        { path: `${path}-shm`, previousMode: 0o644 },
      ]);
      expect(told.map(tightenedEvent)[0]).toEqual({ event: 'state_file_tightened', path, previous_mode: '0644', mode: '0600' });
      for (const file of [path, `${path}-wal`, `${path}-shm`]) expect(await modeOf(file)).toBe(0o600);
      expect(db.prepare('SELECT body FROM kept').all()).toEqual([{ body: 'receipt' }]);
    } finally {
      db.close();
      old.close();
    }
    // Reopening a private database changes and says nothing.
    const again: TightenedFile[] = [];
    openDatabase(path, MIGRATIONS, { onTightened: (files) => again.push(...files) }).close();
    expect(again).toEqual([]);
  });

  it("leaves an existing directory's mode alone: it may be the operator's (e.g. /var/lib)", async () => {
    const shared = join(dir, 'shared');
    await mkdir(shared, { mode: 0o755 });
    expect(preparePrivateDatabase(join(shared, 'ledger.db'))).toEqual([]);
    expect(await modeOf(shared)).toBe(0o755);
    expect(await modeOf(join(shared, 'ledger.db'))).toBe(0o600);
  });
});

describe('tightenOpenFile', () => {
  it('removes group and other bits and reports the old mode; a private file is left as it is', async () => {
    const path = join(dir, 'journal.jsonl');
    await writeFile(path, 'x\n', { mode: 0o664 });
    const fd = openSync(path, 'a');
    try {
      expect(tightenOpenFile(fd)).toBe(0o664);
      expect(tightenOpenFile(fd)).toBeNull();
    } finally {
      closeSync(fd);
    }
    expect(await modeOf(path)).toBe(0o600);
  });
});

describe('the services under umask 000', () => {
  it('the ledger and the executor, built by their composition roots, keep their databases and the catalog private', async () => {
    const ledger = await startTestLedger({ dir: join(dir, 'ledger-state') });
    try {
      const executor = await startTestExecutor(ledger);
      try {
        // A real write in each database (an authorization, an admitted execution): WAL files exist from the first one.
        const { execution } = await admitOne(ledger, (await setUpActors(ledger)).agent, executor);
        expect(execution.state).toBe('scheduled');
        const { storage } = executor.config;
        for (const file of [storage.database_path, `${storage.database_path}-wal`, `${storage.database_path}-shm`, storage.catalog_path]) expect(await modeOf(file)).toBe(0o600);
        expect(await modeOf(storage.artifact_root)).toBe(0o700);
        expect(JSON.parse(await readFile(storage.catalog_path, 'utf8'))).toMatchObject({ catalog_schema_version: 1 });
      } finally {
        await executor.close();
      }
      for (const file of ['ledger.db', 'ledger.db-wal', 'ledger.db-shm']) expect(await modeOf(join(dir, 'ledger-state', file))).toBe(0o600);
      expect(await modeOf(join(dir, 'ledger-state'))).toBe(0o700);
    } finally {
      await ledger.close();
    }
  });

  it('artifacts (the images of prompts) are 0600 in 0700 directories', async () => {
    const root = join(dir, 'artifacts');
    const stored = await createArtifactStore(root).write(`exe_${'a'.repeat(32)}`, 0, 'image/png', new Uint8Array([1, 2, 3]));
    expect(await modeOf(join(root, stored.storageKey))).toBe(0o600);
    expect(await modeOf(join(root, `exe_${'a'.repeat(32)}`))).toBe(0o700);
    expect(await modeOf(root)).toBe(0o700);
  });

  it('a rotating log is 0600 in a 0700 directory, rotated files too, and an older 0644 active log is tightened', async () => {
    const logsDir = join(dir, 'logs');
    await mkdir(logsDir, { mode: 0o700 });
    await writeFile(join(logsDir, 'ledger.log'), '{"old":true}\n', { mode: 0o644 });
    const log = openRotatingLog({ logsDir, component: 'ledger', maxBytes: 64 });
    for (let line = 0; line < 6; line += 1) log.writeLine(`{"line":${line},"padding":"${'x'.repeat(20)}"}`);
    log.close();
    const fresh = openRotatingLog({ logsDir: join(dir, 'new-logs'), component: 'executor' });
    fresh.writeLine('{}');
    fresh.close();
    const files = [...(await readdir(logsDir)).map((name) => join(logsDir, name)), join(dir, 'new-logs', 'executor.log')];
    expect(files.length).toBeGreaterThan(3);
    for (const file of files) expect(await modeOf(file), file).toBe(0o600);
    expect(await modeOf(join(dir, 'new-logs'))).toBe(0o700);
  });

  it("the sandbox's jobs file (it holds prompts) is 0600, and an older 0644 one is tightened", async () => {
    const created = openJobJournal(join(dir, 'sandbox-jobs.jsonl'));
    created.recordCancel('req_1', 1);
    created.close();
    await writeFile(join(dir, 'old-jobs.jsonl'), '', { mode: 0o644 });
    openJobJournal(join(dir, 'old-jobs.jsonl')).close();
    expect(await modeOf(join(dir, 'sandbox-jobs.jsonl'))).toBe(0o600);
    expect(await modeOf(join(dir, 'old-jobs.jsonl'))).toBe(0o600);
  });
});

describe('a leftover catalog temporary file', () => {
  it('does not lend its mode to the published catalog', async () => {
    const ledger = await startTestLedger({ dir: join(dir, 'ledger-state') });
    try {
      const catalogDir = join(dir, 'catalog');
      await mkdir(catalogDir, { mode: 0o700 });
      await writeFile(join(catalogDir, 'catalog.json.tmp'), 'torn', { mode: 0o666 });
      await chmod(join(catalogDir, 'catalog.json.tmp'), 0o666);
      const executor = await startTestExecutor(ledger, {
        change: (config) => {
          (config.storage as Record<string, unknown>).catalog_path = join(catalogDir, 'catalog.json');
        },
      });
      try {
        expect(await modeOf(join(catalogDir, 'catalog.json'))).toBe(0o600);
      } finally {
        await executor.close();
      }
    } finally {
      await ledger.close();
    }
  });
});

describe('a profile created from a shipped example', () => {
  it("is the operator's alone (0600 in a 0700 directory) and the example's exact text", async () => {
    expect(await createProfileFromExample(dir, 'sandbox', 'sandbox')).toBe('created');
    const { source } = profilePaths(dir, 'sandbox');
    expect(await modeOf(source)).toBe(0o600);
    expect(await modeOf(join(source, '..'))).toBe(0o700);
    expect(await readFile(source, 'utf8')).toBe(await readFile(exampleProfilePath('sandbox'), 'utf8'));
    expect(await createProfileFromExample(dir, 'sandbox', 'sandbox')).toBe('exists');
  });
});
