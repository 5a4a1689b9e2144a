import type { Migration } from '../../../storage/open-database.js';
import { executionListIndexes, embeddedEngine, frozenSeedDecision, installationIdentity, parkEvidence, submitWindow } from './durable-engine.js';
import { executionCounts, executorCredentials, ledgerRecordAnswered, ledgerRecordRecheck, metricsCredentials } from './ledger-records-and-credentials.js';
import { legacySchema, microUnits, preciseReceipts } from './whole-cents-to-micro-units.js';

export { applyPreciseReceiptConversion, MigrationRefused } from './whole-cents-to-micro-units.js';

/** The executor's schema history, one file per era (this folder); applied in order by openDatabase. */
export const EXECUTOR_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'legacy_v4_3_whole_cents', up: legacySchema },
  { version: 2, name: 'micro_units', up: microUnits },
  { version: 3, name: 'precise_receipts', up: preciseReceipts },
  { version: 4, name: 'embedded_engine', up: embeddedEngine },
  { version: 5, name: 'submit_window', up: submitWindow },
  { version: 6, name: 'execution_list_indexes', up: executionListIndexes },
  { version: 7, name: 'installation_identity', up: installationIdentity },
  { version: 8, name: 'frozen_seed_decision', up: frozenSeedDecision },
  { version: 9, name: 'park_evidence', up: parkEvidence },
  { version: 10, name: 'ledger_record_answered', up: ledgerRecordAnswered },
  { version: 11, name: 'ledger_record_recheck', up: ledgerRecordRecheck },
  { version: 12, name: 'executor_credentials', up: executorCredentials },
  { version: 13, name: 'metrics_credentials', up: metricsCredentials },
  { version: 14, name: 'execution_counts', up: executionCounts },
];
