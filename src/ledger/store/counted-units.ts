/*
 * What the daily cap counts (docs/ledger.md "Policies", "Budgets"), as SQL: one definition for the
 * cap, `spending`, calendar budgets, spend reports and the metrics. An authorization holds its
 * amount while it is requested or approved and not expired at `@now`, or claimed; once settled,
 * its settlement's amount is spent — read from `settled_units`, the settlement's amount copied onto
 * the authorization (ledger migration 17), so a sum over a window reads the covering indexes
 * `authorizations_by_agent`, `_by_time` and `_by_agent_target` alone and no settlement rows.
 */

/** Whether the authorization (columns of `authorizations`, prefixed `alias.` when given) holds its amount at `@now`. */
export const holdsNow = (alias?: string) => {
  const column = (name: string) => (alias === undefined ? name : `${alias}.${name}`);
  return `((${column('status')} IN ('requested', 'approved') AND ${column('expires_at')} > @now) OR ${column('status')} = 'claimed')`;
};

/** The columns `spent` and `held` over `authorizations a`. */
export const SPENT_AND_HELD = `
  COALESCE(SUM(CASE WHEN a.status = 'settled' THEN a.settled_units ELSE 0 END), 0) AS spent,
  COALESCE(SUM(CASE WHEN ${holdsNow('a')} THEN a.amount_units ELSE 0 END), 0) AS held`;

/**
 * The sums read in a spend request's transaction, one statement per scope so each ranges over its
 * covering index (an `@x IS NULL OR` test would defeat it): `@since` exclusive for the rolling
 * window (what the daily cap counts, and `spending`), inclusive for a calendar period.
 */
export const WINDOW_SUMS = {
  /** What the daily cap counts: held and spent in one figure. */
  rollingCommitted: `
    SELECT COALESCE(SUM(CASE
      WHEN ${holdsNow('a')} THEN a.amount_units
      WHEN a.status = 'settled' THEN a.settled_units
      ELSE 0 END), 0) AS units
    FROM authorizations a
    WHERE a.agent_id = @agent_id AND a.created_at > @since`,
  rollingAgent: `SELECT ${SPENT_AND_HELD} FROM authorizations a WHERE a.agent_id = @agent_id AND a.created_at > @since`,
  periodAgent: `SELECT ${SPENT_AND_HELD} FROM authorizations a WHERE a.agent_id = @agent_id AND a.created_at >= @since`,
  periodTarget: `SELECT ${SPENT_AND_HELD} FROM authorizations a WHERE a.agent_id = @agent_id AND a.target_id = @target_id AND a.created_at >= @since`,
  periodInstallation: `SELECT ${SPENT_AND_HELD} FROM authorizations a WHERE a.created_at >= @since`,
} as const;
