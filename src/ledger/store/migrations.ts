import type { Migration } from '../../storage/open-database.js';
import { BUDGETS_EVENTS_AND_DELIVERY_MIGRATIONS } from './migrations/budgets-events-and-delivery.js';
import { MONEY_AND_AUTHORIZATION_MIGRATIONS } from './migrations/money-and-authorizations.js';
import { OPERATOR_GOVERNANCE_MIGRATIONS } from './migrations/operator-governance.js';
import { EXECUTOR_ENROLMENT_MIGRATIONS } from './migrations/executor-enrolment.js';
import { REFUSAL_RUNS_MIGRATIONS } from './migrations/refusal-runs.js';
import { COUNTED_UNITS_INDEX_MIGRATIONS } from './migrations/counted-units-index.js';
import { METRIC_COUNTS_MIGRATIONS } from './migrations/metric-counts.js';
import { DELIVERY_RETENTION_MIGRATIONS } from './migrations/delivery-retention.js';

/*
 * The ledger's schema history. Times are integer milliseconds since the epoch; amounts are
 * integer micro-units (`*_units`, `units_scale` 6) with whole-cent projections rounded up.
 * Triggers make settle XOR release a property of the store itself, not only of the code.
 */
export const LEDGER_MIGRATIONS: readonly Migration[] = [...MONEY_AND_AUTHORIZATION_MIGRATIONS, ...OPERATOR_GOVERNANCE_MIGRATIONS, ...BUDGETS_EVENTS_AND_DELIVERY_MIGRATIONS, ...EXECUTOR_ENROLMENT_MIGRATIONS, ...REFUSAL_RUNS_MIGRATIONS, ...COUNTED_UNITS_INDEX_MIGRATIONS, ...METRIC_COUNTS_MIGRATIONS, ...DELIVERY_RETENTION_MIGRATIONS];
