import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { readBuildInfo } from '../build-info.js';
import { openDatabase } from '../storage/open-database.js';
import { ensureAdminCapability } from './admin-capability.js';
import { buildLedgerApp } from './http/ledger-app.js';
import { createLedgerAdmin } from './ledger-admin.js';
import { loadLedgerConfig } from './ledger-config.js';
import { createLedgerService } from './ledger-service.js';
import { LEDGER_MIGRATIONS } from './store/migrations.js';

export interface LedgerStopped {
  readonly status: 'stopped';
  readonly signal: string;
}

/**
 * Runs the ledger until SIGINT or SIGTERM: loads the configuration, opens (and migrates) its own
 * SQLite database, makes sure the admin capability exists, listens on loopback, and on a signal
 * stops accepting requests, lets in-flight ones finish and closes the database.
 */
export async function serveLedger(configPath: string): Promise<LedgerStopped> {
  const config = await loadLedgerConfig(configPath);
  const logger = pino({ base: { service: 'ledger' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
  const db = openDatabase(config.database_path, LEDGER_MIGRATIONS);
  try {
    const now = () => Date.now();
    const defaultPolicy = config.default_policy;
    const admin = createLedgerAdmin({ db, now, defaultPolicy });
    const service = createLedgerService({
      db,
      now,
      contractLevel: config.contract_level,
      authorizationTtlMs: config.authorization_ttl_seconds * 1000,
      defaultPolicy,
    });
    const adminCapability = await ensureAdminCapability(config.admin_capability_path, admin);
    // [ledger.default_policy] as configured now holds for every agent that follows it.
    const following = admin.applyDefaultPolicy();
    service.ownerAccountId();
    const buildInfo = readBuildInfo();
    const app = buildLedgerApp({ service, admin, buildInfo, contractLevel: config.contract_level, logger });
    await app.listen({ host: config.http.host, port: config.http.port });
    const { port } = app.server.address() as AddressInfo;
    logger.info({
      event: 'ledger_started',
      host: config.http.host,
      port,
      product_version: buildInfo.product_version,
      contract_level: config.contract_level,
      admin_capability: adminCapability,
      default_policy_applied_to: following.length,
    });
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGINT', () => {
        resolve('SIGINT');
      });
      process.once('SIGTERM', () => {
        resolve('SIGTERM');
      });
    });
    logger.info({ event: 'ledger_stopping', signal });
    await app.close();
    logger.info({ event: 'ledger_stopped', signal });
    return { status: 'stopped', signal };
  } finally {
    db.close();
  }
}
