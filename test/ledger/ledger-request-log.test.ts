import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createFakeTime, type FakeTime } from '../support/fake-time.js';
import { call, startTestLedger, type TestLedger } from '../support/ledger.js';

/*
 * The request log of a lexec HTTP server (src/http/json-server.ts), on a real ledger built by its
 * composition root and listening on loopback, with the rejection summary's clock in the test's
 * hand: repeated identical rejections are one line and a summary per interval, written by the
 * timer while the server runs, and at close; successes are never collapsed.
 */

const INTERVAL = 60_000;
let ledger: TestLedger | undefined;
let time: FakeTime;

afterEach(async () => {
  await ledger?.close();
  ledger = undefined;
});

async function start(): Promise<TestLedger> {
  time = createFakeTime(Date.parse('2026-03-01T12:00:00.000Z'));
  ledger = await startTestLedger({ rejectionSummary: { intervalMs: INTERVAL, clock: time.clock, timers: time.timers } });
  return ledger;
}

const events = (of: TestLedger, name: string) => of.logs().filter((line) => line.event === name);

/** GET `path` sent exactly as written (fetch would normalise it). */
function rawGet(url: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${url}/`, { path }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.once('end', () => {
        resolve({ status: response.statusCode ?? 0, body });
      });
    });
    outgoing.once('error', reject);
    outgoing.end();
  });
}

describe('the request log of a lexec server', () => {
  it('logs the first of identical rejections and summarises the rest when the interval ends, while the server runs', async () => {
    const server = await start();
    for (let index = 0; index < 5; index += 1) expect((await call(server.url, 'GET', '/agents', { token: 'lexec_admin_forged' })).status).toBe(401);
    expect(events(server, 'http_request').filter((line) => line.status === 401)).toMatchObject([
      { method: 'GET', route: '/agents', status: 401, code: 'unauthorized' },
    ]);
    expect(events(server, 'http_rejections_repeated')).toEqual([]);

    await time.advance(INTERVAL);
    expect(events(server, 'http_rejections_repeated')).toMatchObject([
      { level: 40, method: 'GET', route: '/agents', status: 401, code: 'unauthorized', count: 4, interval_ms: INTERVAL, first_at: '2026-03-01T12:00:00.000Z' },
    ]);
    // A new interval: its first rejection is logged again.
    await call(server.url, 'GET', '/agents', { token: 'lexec_admin_forged' });
    expect(events(server, 'http_request').filter((line) => line.status === 401)).toHaveLength(2);
    expect(JSON.stringify(server.logs())).not.toContain('lexec_admin_forged');
  });

  it('never collapses successes', async () => {
    const server = await start();
    for (let index = 0; index < 3; index += 1) expect((await call(server.url, 'GET', '/agents', { token: server.adminToken })).status).toBe(200);
    await time.advance(INTERVAL);
    expect(events(server, 'http_request').filter((line) => line.route === '/agents' && line.status === 200)).toHaveLength(3);
    expect(events(server, 'http_rejections_repeated')).toEqual([]);
  });

  it('answers a URL it cannot decode with 400 malformed_url without quoting it, and logs it like any rejection', async () => {
    const server = await start();
    for (const path of ['/%', '/agents/%zz-MARKER', '/%']) {
      const answer = await rawGet(server.url, path);
      expect(answer).toEqual({ status: 400, body: JSON.stringify({ error: { code: 'invalid_request', reason_code: 'malformed_url' } }) });
    }
    expect(events(server, 'http_request')).toMatchObject([{ method: 'GET', route: 'unmatched', status: 400, code: 'invalid_request', reason_code: 'malformed_url' }]);
    await server.close();
    ledger = undefined;
    // Closing writes the summary still pending and leaves no timer behind.
    expect(events(server, 'http_rejections_repeated')).toMatchObject([{ route: 'unmatched', status: 400, reason_code: 'malformed_url', count: 2 }]);
    expect(time.pending()).toBe(0);
    expect(JSON.stringify(server.logs())).not.toContain('MARKER');
  });
});
