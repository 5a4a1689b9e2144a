import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../src/storage/group-commit.js';
import { openDatabase, withoutOwnFsync } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

let dir: string;
let db: Database.Database;
/** A second connection: it sees only what the first one committed. */
let reader: Database.Database;

beforeEach(async () => {
  dir = await makeTempDir('lexec-commits-');
  db = openDatabase(join(dir, 'test.db'), [
    {
      version: 1,
      name: 'tables',
      up: `CREATE TABLE parents (id INTEGER PRIMARY KEY);
           CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
             parent_id INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED);`,
    },
  ]);
  reader = new Database(join(dir, 'test.db'), { readonly: true });
});

afterEach(async () => {
  reader.close();
  db.close();
  await removeDir(dir);
});

const committedNames = () => (reader.prepare('SELECT name FROM items ORDER BY id').all() as { name: string }[]).map((row) => row.name);

describe('group commit', () => {
  it('commits the writes asked for in one turn together, each caller settling after that commit', async () => {
    const insert = db.prepare('INSERT INTO items (name, parent_id) VALUES (?, NULL)');
    const seenByOthers: string[][] = [];
    const write = createGroupCommit(db, (name: string) => {
      insert.run(name);
      // Inside the batch: nothing of it is committed yet, so another connection sees none of it.
      seenByOthers.push(committedNames());
      return name.toUpperCase();
    });
    const results = await Promise.all([write('a'), write('b'), write('c')]);
    expect(results).toEqual(['A', 'B', 'C']);
    expect(seenByOthers).toEqual([[], [], []]);
    expect(committedNames()).toEqual(['a', 'b', 'c']);

    // A write alone is its own batch, committed by the time its caller resumes.
    expect(await write('d')).toBe('D');
    expect(committedNames()).toEqual(['a', 'b', 'c', 'd']);
    expect(db.inTransaction).toBe(false);
  });

  it('a write that throws fails only its own caller; the others of the batch commit', async () => {
    const insert = db.prepare('INSERT INTO items (name, parent_id) VALUES (?, NULL)');
    const write = createGroupCommit(db, (names: string[]) => {
      for (const name of names) insert.run(name);
    });
    const outcomes = await Promise.allSettled([write(['a']), write(['b', 'a']), write(['c'])]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toContain('UNIQUE');
    // The failing write's own first row ('b') was rolled back with it.
    expect(committedNames()).toEqual(['a', 'c']);
  });

  it('a commit that fails fails every write of the batch and stores nothing of it', async () => {
    const insert = db.prepare('INSERT INTO items (name, parent_id) VALUES (?, ?)');
    const write = createGroupCommit(db, ({ name, parent }: { name: string; parent: number | null }) => {
      insert.run(name, parent);
    });
    // The deferred foreign key is checked at COMMIT: the orphan makes the whole commit fail.
    const outcomes = await Promise.allSettled([write({ name: 'a', parent: null }), write({ name: 'orphan', parent: 42 }), write({ name: 'c', parent: null })]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(String((outcomes[0] as PromiseRejectedResult).reason)).toContain('FOREIGN KEY');
    expect(committedNames()).toEqual([]);
    expect(db.inTransaction).toBe(false);

    // The next batch is unaffected.
    await write({ name: 'b', parent: null });
    expect(committedNames()).toEqual(['b']);
  });
});

describe('withoutOwnFsync', () => {
  const level = () => db.pragma('synchronous', { simple: true }) as bigint;

  it('runs its work at synchronous NORMAL and returns the connection to FULL, also when the work throws', () => {
    expect(level()).toBe(2n);
    expect(withoutOwnFsync(db, () => level())).toBe(1n);
    expect(level()).toBe(2n);
    expect(() =>
      withoutOwnFsync(db, () => {
        throw new Error('work failed');
      }),
    ).toThrow('work failed');
    expect(level()).toBe(2n);
  });

  it('commits what the work wrote (visible to another connection at once)', () => {
    withoutOwnFsync(db, () => db.prepare("INSERT INTO items (name) VALUES ('x')").run());
    expect(committedNames()).toEqual(['x']);
  });
});
