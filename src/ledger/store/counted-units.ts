/*
 * What the daily cap counts (docs/ledger.md "Policies", "Budgets"), as SQL: one definition for the
 * cap, `spending`, calendar budgets, spend reports and the metrics. An authorization holds its
 * amount while it is requested or approved and not expired at `@now`, or claimed; once settled,
 * its settlement's amount is spent.
 */

/** Whether the authorization (columns of `authorizations`, prefixed `alias.` when given) holds its amount at `@now`. */
export const holdsNow = (alias?: string) => {
  const column = (name: string) => (alias === undefined ? name : `${alias}.${name}`);
  return `((${column('status')} IN ('requested', 'approved') AND ${column('expires_at')} > @now) OR ${column('status')} = 'claimed')`;
};

/** The columns `spent` and `held` over `authorizations a LEFT JOIN settlements s ON s.token_id = a.token_id`. */
export const SPENT_AND_HELD = `
  COALESCE(SUM(CASE WHEN a.status = 'settled' THEN s.amount_units ELSE 0 END), 0) AS spent,
  COALESCE(SUM(CASE WHEN ${holdsNow('a')} THEN a.amount_units ELSE 0 END), 0) AS held`;
