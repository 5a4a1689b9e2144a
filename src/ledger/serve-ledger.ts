import type { AddressInfo } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { pino } from 'pino';
import { CRASH_FILE_ENV } from '../crash-points.js';
import { followTlsReload, loadServerTls } from '../http/server-tls.js';
import { restrictProcessUmask } from '../storage/private-state.js';
import { composeLedger } from './compose-ledger.js';
import { loadLedgerConfig } from './ledger-config.js';
import { stopSignal } from '../process/stop-signal.js';

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
  restrictProcessUmask();
  const config = await loadLedgerConfig(configPath);
  // Read and checked before anything is opened: a bad certificate or key stops the start here.
  const tls = config.http.tls === undefined ? undefined : await loadServerTls(config.http.tls);
  const logger = pino({ base: { service: 'ledger' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
  const ledger = await composeLedger({ config, logger, env: process.env, webhookDelivery: 'thread', ...(tls === undefined ? {} : { tls }) });
  let stopFollowing: () => void = () => undefined;
  try {
    const { app, buildInfo } = ledger;
    await app.listen({ host: config.http.host, port: config.http.port });
    const { port } = app.server.address() as AddressInfo;
    // SIGHUP: the certificate and key are read again and served to new connections.
    if (config.http.tls !== undefined) stopFollowing = followTlsReload(app.server as unknown as TlsServer, config.http.tls, logger);
    // Listened for before the start line (stop-signal.ts).
    const stopping = stopSignal();
    logger.info({
      event: 'ledger_started',
      host: config.http.host,
      port,
      scheme: tls === undefined ? 'http' : 'https',
      ...(tls === undefined ? {} : { tls_serial_number: tls.serialNumber, tls_valid_to: tls.validTo }),
      product_version: buildInfo.product_version,
      contract_level: config.contract_level,
      admin_capability: ledger.adminCapability,
      default_policy_applied_to: ledger.defaultPolicyAppliedTo,
    });
    // Claims no executor can tell its own (ledger migration 4): a human settles or releases them.
    if (ledger.unattributedClaims > 0) logger.warn({ event: 'ledger_unattributed_claims', claims: ledger.unattributedClaims });
    // The admin file's capability was revoked or rotated away: admin commands with it are refused.
    if (ledger.adminCapability === 'revoked') logger.warn({ event: 'ledger_admin_capability_revoked', path: config.admin_capability_path });
    if (ledger.crashPointsEnabled) logger.warn({ event: 'crash_points_enabled', variable: CRASH_FILE_ENV });
    const signal = await stopping;
    logger.info({ event: 'ledger_stopping', signal });
    await app.close();
    logger.info({ event: 'ledger_stopped', signal });
    return { status: 'stopped', signal };
  } finally {
    stopFollowing();
    ledger.close();
  }
}
