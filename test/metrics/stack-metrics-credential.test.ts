import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import { provisionLocalCredentials } from '../../src/launcher/handoff/stack-local-credentials.js';
import { call, startTestLedger, type TestLedger } from '../support/ledger.js';
import { scrape } from '../support/prometheus.js';

/*
 * A stack's start provisions one metrics capability for the profile (a private file in the
 * executor's managed credentials, where the executor reads it at its own start) and registers it
 * at the ledger, so a scraper can read the ledger's /metrics at once; a second start reuses it.
 */

let ledger: TestLedger;

beforeAll(async () => {
  ledger = await startTestLedger();
});

afterAll(async () => {
  await ledger.close();
});

describe("a stack's metrics capability", () => {
  it('is written 0600 and registered at the ledger by the start, and reused by the next start', async () => {
    const credentials = join(ledger.dir, 'profile-credentials');
    const request = {
      ledgerUrl: ledger.url,
      adminCapabilityPath: join(ledger.dir, 'credentials', 'admin.capability'),
      agentName: 'local',
      agentCapabilityPath: join(credentials, 'agent.capability'),
      approverCapabilityPath: join(credentials, 'approver.capability'),
      metricsCapabilityPath: join(credentials, 'executor', 'metrics.capability'),
    };
    const first = await provisionLocalCredentials(request);
    expect(first.metrics_credential).toBe('created');
    expect((await stat(request.metricsCapabilityPath)).mode & 0o777).toBe(0o600);
    const token = await readPrivateFile(request.metricsCapabilityPath, 'metrics capability');
    expect(token).toMatch(/^lexec_metrics_/);
    expect((await call(ledger.url, 'GET', '/credentials/self', { token })).body).toMatchObject({ credential: { kind: 'metrics' } });
    expect((await scrape(ledger.url, token)).status).toBe(200);

    const second = await provisionLocalCredentials(request);
    expect(second.metrics_credential).toBe('reused');
    expect(await readPrivateFile(request.metricsCapabilityPath, 'metrics capability')).toBe(token);
  });
});
