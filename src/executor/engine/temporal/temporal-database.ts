import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineLogger } from './temporal-engine.js';

/*
 * The managed dev server's database, `<data_dir>/temporal.db` (docs/decisions.md "A Temporal
 * database that never served is made again"). The CLI creates its schema at the first start of a
 * new file and skips that step whenever the file exists: a child killed in those first moments
 * (a stop, a crash, the host going down) leaves a file without its tables, and every later start
 * exits at once ("no such table: namespaces"), for good. So a new file is marked before its first
 * child is spawned, the mark is taken away once a child has served from it, and a file still
 * marked at the next spawn — one no child ever served from, so it holds no history — is removed
 * with its WAL and shared-memory files and made again. The engine holds no truth either way: the
 * executor schedules every unfinished execution again at its stable workflow id.
 */

const DATABASE = 'temporal.db';
const UNSERVED_MARK = 'temporal.db.unserved';

/** The database's file, as the server is given it (`--db-filename`). */
export function temporalDatabasePath(dataDir: string): string {
  return join(dataDir, DATABASE);
}

/** Before a child is spawned: removes a database no child ever served from, and marks a new one. */
export function prepareTemporalDatabase(dataDir: string, logger: EngineLogger): void {
  const database = temporalDatabasePath(dataDir);
  const mark = join(dataDir, UNSERVED_MARK);
  if (existsSync(mark) && existsSync(database)) {
    for (const file of [database, `${database}-wal`, `${database}-shm`]) rmSync(file, { force: true });
    logger.warn({ event: 'temporal_database_remade', reason: 'never_served', path: database });
  }
  if (!existsSync(database)) writeFileSync(mark, '', { mode: 0o600 });
}

/** After a child served: its database has its schema, and is kept from now on. */
export function temporalDatabaseServed(dataDir: string): void {
  rmSync(join(dataDir, UNSERVED_MARK), { force: true });
}
