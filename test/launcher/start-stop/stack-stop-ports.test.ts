import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonResult } from '../../support/stack-home.js';
import { tableAt } from '../../support/example-profiles.js';
import { startRunningStack, type RunningStack } from '../../support/running-stack.js';

/*
 * `lexec stack stop` looks for ports still in use where each component listened: a ledger on the
 * address of its `[ledger.http]` is probed on that address, not on 127.0.0.1 (where its port is
 * free whatever holds it). 127.0.0.2 stands for a host's own address here: it is loopback, so
 * the ledger may serve plain HTTP on it, and nothing beyond this machine is involved.
 */

let stack: RunningStack;
let squatter: Server | null = null;

beforeAll(async () => {
  stack = await startRunningStack({
    edit: (profile) => {
      tableAt(profile, 'ledger').http = { host: '127.0.0.2' };
    },
  });
}, 180_000);

afterAll(async () => {
  const server = squatter;
  if (server !== null) await new Promise((closed) => server.close(closed));
  await stack.stop();
}, 120_000);

describe('lexec stack stop with the ledger on its own address', () => {
  it('finds the ledger port free where it listened after the stop, and names a process that holds it there', async () => {
    const ledger = new URL(stack.ledgerUrl);
    expect(ledger.hostname).toBe('127.0.0.2');
    const port = Number(ledger.port);
    const stopped = await stack.lexec(['stack', 'stop', '--json'], { timeoutMs: 60_000 });
    expect(jsonResult(stopped)).toMatchObject({ outcome: 'stopped', forced: false, ports_busy: [] });

    // Another process takes the ledger's address and port: a stop names it (on 127.0.0.1 the port is free).
    const server = createServer();
    squatter = server;
    await new Promise<void>((listening, failed) => {
      server.once('error', failed);
      server.listen({ host: '127.0.0.2', port }, listening);
    });
    const again = await stack.lexec(['stack', 'stop', '--json'], { timeoutMs: 60_000 });
    expect(jsonResult(again)).toMatchObject({ outcome: 'already_stopped', ports_busy: [{ port, holder: { pid: process.pid } }] });
  }, 120_000);
});
