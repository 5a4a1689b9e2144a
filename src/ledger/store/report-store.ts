import type Database from 'better-sqlite3';
import type { SpendRow } from '../summarise-spend.js';
import { holdsNow } from './counted-units.js';

/** A half-open range of instants, ms since the epoch; null: unbounded on that side. */
export interface SpendRange {
  readonly since: number | null;
  readonly until: number | null;
}

interface RawRow {
  agent_id: string;
  target_id: string | null;
  at: bigint;
  amount_units: bigint;
}

const toRow = (raw: RawRow): SpendRow => ({ agentId: raw.agent_id, targetId: raw.target_id, at: Number(raw.at), amountUnits: raw.amount_units });

/**
 * The rows of a spend report (docs/ledger.md "Spend reports"). Settlements are read from the
 * settlements table — the record of money spent — by when they were settled; holds are the
 * authorizations holding an amount now (requested or approved and not expired, or claimed), by
 * when they were requested. Statements are prepared on first use: a ledger that never reports
 * prepares nothing.
 */
export function createReportStore(db: Database.Database) {
  let statements: { settled: Database.Statement; held: Database.Statement; names: Database.Statement } | undefined;
  const prepared = () =>
    (statements ??= {
      settled: db.prepare(`
        SELECT a.agent_id, a.target_id, s.created_at AS at, s.amount_units
        FROM settlements s JOIN authorizations a ON a.token_id = s.token_id
        WHERE (@since IS NULL OR s.created_at >= @since) AND (@until IS NULL OR s.created_at < @until)`),
      held: db.prepare(`
        SELECT agent_id, target_id, created_at AS at, amount_units FROM authorizations
        WHERE ${holdsNow()}
          AND (@since IS NULL OR created_at >= @since) AND (@until IS NULL OR created_at < @until)`),
      names: db.prepare('SELECT agent_id, name FROM agents'),
    });

  return {
    /** Both sets of rows in one read transaction, so a settlement between the two reads is counted once. */
    read(range: SpendRange, now: number): { settlements: SpendRow[]; holds: SpendRow[]; agentNames: Map<string, string> } {
      const { settled, held, names } = prepared();
      return db.transaction(() => ({
        agentNames: new Map((names.all() as { agent_id: string; name: string }[]).map((row) => [row.agent_id, row.name])),
        settlements: (settled.all({ since: range.since, until: range.until }) as RawRow[]).map(toRow),
        holds: (held.all({ since: range.since, until: range.until, now }) as RawRow[]).map(toRow),
      }))();
    },
  };
}

export type ReportStore = ReturnType<typeof createReportStore>;
