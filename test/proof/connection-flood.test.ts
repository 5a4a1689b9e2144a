import { connect } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { composeConsole } from '../../src/console/compose-console.js';
import { CONNECTION_LIMITS } from '../../src/http/connection-limits.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { openIdleConnections, probe, type IdleFlood } from '../support/connection-flood.js';
import { eventually } from '../support/stack-home.js';
import { startTestExecutor } from '../support/executor.js';
import { startTestLedger } from '../support/ledger.js';
import { ledgerConfig } from '../support/ledger-process.js';
import { spawnSandbox } from '../support/sandbox-process.js';
import { spawnServerProcess } from '../support/server-process.js';

/*
 * Issue 24 item 6: a flood of idle connections must not starve the probes. Each lexec server, as
 * built by its own composition root and listening on a real loopback socket, gets more idle TCP
 * connections than its limit (half of them sending nothing, half sending half a request header);
 * then `/readyz` and `/livez` (the ledger's `/health`, the console's `/login`, the sandbox's
 * `/__sandbox/health`) must still answer promptly on a new connection, and the oldest idle
 * connections are the ones shed. Under a file-descriptor limit — where a server without the
 * limit runs out of descriptors and refuses the probe — the ledger process still answers.
 */

const LIMIT = CONNECTION_LIMITS.maxConnections;
const FLOOD = LIMIT + 44;
/** How long a probe waits for its answer: a starved one never gets it; a busy machine's is merely late. */
const PROMPT_MS = 30_000;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function flood(url: string, count = FLOOD): Promise<IdleFlood> {
  const opened = await openIdleConnections(url, count);
  cleanups.push(() => {
    opened.end();
    return Promise.resolve();
  });
  return opened;
}

/** The probes answer promptly, and the server keeps at most its limit by closing the oldest idle connections. */
async function expectProbesAnswered(url: string, paths: readonly string[], opened: IdleFlood, status = 200): Promise<void> {
  for (const path of paths) {
    // Answered at all (the probe gives up after PROMPT_MS).
    const answer = await probe(url, path, PROMPT_MS);
    expect(answer.status, path).toBe(status);
  }
  const closed = await eventually('the oldest idle connections shed', () => {
    const now = opened.closed();
    return now.length >= opened.count - LIMIT ? now : undefined;
  });
  expect(closed).toContain(0);
  expect(closed).not.toContain(opened.count - 1);
}

describe('a flood of idle connections does not starve the probes', () => {
  it('the executor: /readyz and /livez answer; the oldest idle connections are shed', async () => {
    const ledger = await startTestLedger();
    cleanups.push(() => ledger.close());
    const executor = await startTestExecutor(ledger);
    cleanups.push(() => executor.close());
    const opened = await flood(executor.url);
    await expectProbesAnswered(executor.url, ['/readyz', '/livez'], opened);
  }, 120_000);

  it('the ledger: /health and /version answer', async () => {
    const ledger = await startTestLedger();
    cleanups.push(() => ledger.close());
    const opened = await flood(ledger.url);
    await expectProbesAnswered(ledger.url, ['/health', '/version'], opened);
  }, 120_000);

  it('the console: its login page answers', async () => {
    const home = await makeTempDir('lexec-console-flood-');
    cleanups.push(() => removeDir(home));
    const served = await composeConsole({ env: { LEXEC_HOME: home }, profile: 'sandbox', logger: pino(new PassThrough()) });
    cleanups.push(() => served.close());
    const origin = await served.listen(0);
    const opened = await flood(origin);
    await expectProbesAnswered(origin, ['/login'], opened);
  }, 120_000);

  it('the sandbox provider (its own process): /__sandbox/health answers', async () => {
    const sandbox = await spawnSandbox();
    cleanups.push(() => sandbox.stop('SIGKILL'));
    const url = `http://127.0.0.1:${String(sandbox.port)}`;
    const opened = await flood(url);
    await expectProbesAnswered(url, ['/__sandbox/health'], opened);
    expect(sandbox.events().some((event) => event.event === 'http_connections_shed')).toBe(true);
  }, 120_000);

  it('the ledger process under a file-descriptor limit: descriptors never run out, so the probe is not refused', async () => {
    const dir = await makeTempDir('lexec-fd-limit-');
    cleanups.push(() => removeDir(dir));
    const configPath = join(dir, 'ledger.json');
    await writeFile(configPath, JSON.stringify(ledgerConfig(dir)));
    // Room for the process's own descriptors (about 30) and the limit, not for the flood.
    const server = await spawnServerProcess(['ledger', 'serve', '--config', configPath], {
      startedEvent: 'ledger_started',
      env: { PATH: process.env.PATH ?? '', HOME: dir },
      openFileLimit: LIMIT + 64,
    });
    cleanups.push(() => server.stop('SIGKILL'));
    const url = `http://127.0.0.1:${String(server.started.port)}`;
    const opened = await flood(url, LIMIT + 150);
    await expectProbesAnswered(url, ['/health'], opened);
    expect(server.events().filter((event) => event.event === 'http_connections_shed')).toHaveLength(1);
  }, 120_000);
});

describe('a connection that does not send a complete request header is closed', () => {
  it('after the headers timeout (408), whether it sent nothing or half a header; a kept-alive idle connection stays', async () => {
    const ledger = await startTestLedger();
    cleanups.push(() => ledger.close());
    const { hostname, port } = new URL(ledger.url);
    const started = Date.now();
    const watch = (send: string) =>
      new Promise<{ answer: string; ms: number; open: boolean }>((resolve) => {
        let answer = '';
        const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(send));
        cleanups.push(() => {
          socket.destroy();
          return Promise.resolve();
        });
        socket.on('data', (chunk: Buffer) => {
          answer += chunk.toString('latin1');
          // The kept-alive one: answered, then it stays open until the test looks.
          if (send.endsWith('\r\n\r\n') && answer.includes('\r\n\r\n')) {
            setTimeout(() => {
              resolve({ answer, ms: Date.now() - started, open: !socket.destroyed });
            }, CONNECTION_LIMITS.headersTimeoutMs + 3_000);
          }
        });
        socket.on('error', () => undefined);
        socket.once('close', () => {
          resolve({ answer, ms: Date.now() - started, open: false });
        });
      });
    const [silent, half, kept] = await Promise.all([watch(''), watch(`GET /health HTTP/1.1\r\nHost: ${hostname}\r\n`), watch(`GET /health HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`)]);
    for (const stalled of [silent, half]) {
      expect(stalled.answer).toMatch(/^HTTP\/1\.1 408 /);
      // Not closed before the header limit (a busy machine only makes it later; how much later is
      // not a test's business).
      expect(stalled.ms).toBeGreaterThanOrEqual(CONNECTION_LIMITS.headersTimeoutMs - 100);
    }
    expect(kept.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(kept.open).toBe(true);
  }, 120_000);
});
