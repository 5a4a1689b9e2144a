import type { Facts } from './facts.ts';
import type { ExecutorRows } from './read-databases.ts';
import type { Fail } from './report.ts';
import { units } from './values.ts';

/*
 * The counts the ledger and the executor keep for their metrics, so that a scrape never reads the
 * whole history (ledger migration 18, executor migration 14): each is what the rows it stands for
 * count now — closed authorizations by status (the open ones are counted from the rows), the
 * settlements summed by agent and target, webhook deliveries by sink and status, ended executions
 * by state (the running ones are counted from the rows). A count nobody keeps is zero; a kept
 * count of zero is the same as none. A sink's delivered deliveries count those the retention has
 * removed too (tallied as `pruned`).
 */

const OPEN_STATUSES = new Set(['requested', 'approved', 'claimed']);
const RUNNING_STATES = new Set(['pending', 'scheduled', 'running']);

/** Tells each key whose kept figure differs from the rows' own (`subject` names the table and key). */
function compare(table: string, kept: ReadonlyMap<string, bigint | null>, counted: ReadonlyMap<string, bigint>, fail: Fail): void {
  for (const key of new Set([...kept.keys(), ...counted.keys()])) {
    const keeps = kept.has(key) ? (kept.get(key) ?? null) : 0n;
    const rows = counted.get(key) ?? 0n;
    if (keeps !== rows) fail('kept_counts_match', `${table}[${key}]`, `keeps ${keeps?.toString() ?? 'no integer'}, the rows count ${rows.toString()}`);
  }
}

function tally<T>(rows: readonly T[], key: (row: T) => string, amount: (row: T) => bigint = () => 1n): Map<string, bigint> {
  const counted = new Map<string, bigint>();
  for (const row of rows) counted.set(key(row), (counted.get(key(row)) ?? 0n) + amount(row));
  return counted;
}

export function checkLedgerCounts(facts: Facts, fail: Fail): void {
  const kept = facts.kept;
  if (kept === null) return;
  compare(
    'authorization_counts',
    new Map(kept.authorizations.map((row) => [row.status, units(row.count)])),
    tally(
      facts.authorizations.filter((row) => !OPEN_STATUSES.has(row.status)),
      (row) => row.status,
    ),
    fail,
  );
  // Summed by the authorization's agent and target ('' when requested without one); a settlement of an authorization the ledger lacks is another rule's.
  const settled = facts.settlements.flatMap((row) => {
    const authorization = facts.authorizationOf.get(row.token_id);
    return authorization === undefined ? [] : [{ key: `${authorization.agent_id}/${authorization.target_id ?? ''}`, units: units(row.amount_units) ?? 0n }];
  });
  compare(
    'settled_totals',
    new Map(kept.settled.map((row) => [`${row.agent_id}/${row.target_key}`, units(row.units)])),
    tally(settled, (row) => row.key, (row) => row.units),
    fail,
  );
  // A sink's delivered count keeps the deliveries the retention removed (ledger migration 19),
  // tallied beside it as `pruned`: delivered = the rows delivered + pruned.
  const rows = tally(kept.deliveryRows, (row) => `${row.sink_id}/${row.status}`);
  for (const row of kept.deliveries) {
    if (row.status !== 'pruned') continue;
    const pruned = units(row.count);
    if (pruned === null || pruned < 0n) {
      fail('kept_counts_match', `webhook_delivery_counts[${row.sink_id}/pruned]`, `keeps ${pruned?.toString() ?? 'no integer'}: not a count of removed deliveries`);
      continue;
    }
    rows.set(`${row.sink_id}/delivered`, (rows.get(`${row.sink_id}/delivered`) ?? 0n) + pruned);
  }
  compare(
    'webhook_delivery_counts',
    new Map(kept.deliveries.filter((row) => row.status !== 'pruned').map((row) => [`${row.sink_id}/${row.status}`, units(row.count)])),
    rows,
    fail,
  );
}

/** One executor's kept counts against its own executions. */
export function checkExecutionCounts(rows: ExecutorRows, fail: Fail): void {
  if (rows.keptStates === null) return;
  compare(
    'execution_counts',
    new Map(rows.keptStates.map((row) => [row.state, units(row.count)])),
    tally(
      rows.executions.filter((row) => !RUNNING_STATES.has(row.state)),
      (row) => row.state,
    ),
    fail,
  );
}
