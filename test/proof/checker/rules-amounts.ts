import type Database from 'better-sqlite3';
import type { Fail } from './report.ts';

/*
 * `amounts_are_integers`: every amount, units, cents, cost, scale and image-count column of both
 * databases (a fixed list, which must still exist, and any found by name) holds INTEGER (or
 * NULL); no column anywhere holds a REAL. Read from the schema and the cells' storage classes,
 * inside the read transaction of its database.
 */

/**
 * Every column that holds an amount, a count of money or a scale, per table, as the migrations
 * have them today. Columns are also found by name (AMOUNT_NAME); this list must still be found,
 * so a renamed column fails loudly instead of silently dropping out of the check.
 */
const AMOUNT_COLUMNS: Readonly<Record<'ledger' | 'executor', Readonly<Record<string, readonly string[]>>>> = {
  ledger: {
    authorizations: ['amount_units', 'amount_cents', 'units_scale'],
    settlements: ['amount_units', 'amount_cents', 'units_scale'],
    policies: ['per_authorization_cap_units', 'daily_cap_units', 'approval_threshold_units', 'units_scale'],
  },
  executor: {
    executions: ['authorization_held_cents', 'authorization_held_units', 'quoted_units', 'units_scale'],
    provider_attempts: ['cost_cents', 'exact_amount', 'scale', 'delivered_images'],
    receipts: ['amount_cents', 'amount_units', 'exact_amount', 'scale', 'units_scale'],
    reconciliation_resolutions: ['images_billed', 'amount_units'],
  },
};
const AMOUNT_NAME = /(^|_)(amount|units|cents|cost|scale|images)(_|$)/;

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Amounts: INTEGER storage in every amount column (known or found by name), and no REAL anywhere. */
export function checkIntegers(side: 'ledger' | 'executor', db: Database.Database, fail: Fail): void {
  const known = AMOUNT_COLUMNS[side];
  const found = new Set<string>();
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
  for (const table of tables) {
    for (const column of db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[]) {
      const amount = AMOUNT_NAME.test(column) || (known[table]?.includes(column) ?? false);
      if (amount) found.add(`${table}.${column}`);
      const wrong = amount ? `typeof(${quoted(column)}) NOT IN ('integer', 'null')` : `typeof(${quoted(column)}) = 'real'`;
      const rows = db.prepare(`SELECT rowid AS id, typeof(${quoted(column)}) AS kind FROM ${quoted(table)} WHERE ${wrong}`).all() as { id: bigint; kind: string }[];
      for (const row of rows) fail('amounts_are_integers', `${side}.${table}.${column}#${String(row.id)}`, `stored as ${row.kind}`);
    }
  }
  for (const [table, columns] of Object.entries(known)) {
    for (const column of columns) if (!found.has(`${table}.${column}`)) fail('amounts_are_integers', `${side}.${table}.${column}`, 'not in the schema: the checker\'s knowledge of it is stale');
  }
}
