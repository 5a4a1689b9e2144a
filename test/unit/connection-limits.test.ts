import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { limitConnections, type ConnectionLimits } from '../../src/http/connection-limits.js';
import { openIdleConnections, probe, type IdleFlood } from '../support/connection-flood.js';
import { eventually } from '../support/stack-home.js';

/*
 * The shedding rule of limitConnections on a real loopback server, with a small limit so each
 * case is exact: at the limit a new connection closes the oldest connection that has no answer
 * under way — never one being answered (a long-poll) — and only when all are busy is the new
 * one closed instead. The real servers with the real numbers: test/proof/connection-flood.test.ts.
 */

const LIMITS: ConnectionLimits = { maxConnections: 6, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000, checkIntervalMs: 1_000 };

let server: Server;
let url: string;
let held: ServerResponse[];
let events: Record<string, unknown>[];
const floods: IdleFlood[] = [];

beforeEach(async () => {
  held = [];
  events = [];
  server = createServer((request, response) => {
    // `/hold` is answered only when the test says so (a long-poll); anything else at once.
    if (request.url === '/hold') held.push(response);
    else response.end('ok');
  });
  limitConnections(server, { limits: LIMITS, log: (event) => events.push(event) });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  for (const flood of floods.splice(0)) flood.end();
  for (const response of held) response.end();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Starts `count` requests to /hold, each on its own connection, and waits until the server holds them. */
async function hold(count: number): Promise<Promise<unknown>[]> {
  const answers = Array.from({ length: count }, () => probe(url, '/hold', 30_000).catch((error: unknown) => error));
  await eventually('requests held', () => (held.length === count ? true : undefined));
  return answers;
}

describe('limitConnections', () => {
  it('at the limit, a new connection closes the oldest idle one, never one being answered', async () => {
    const answers = await hold(2);
    const flood = await openIdleConnections(url, 4);
    floods.push(flood);
    // Six open: two held, four idle. A probe makes room by closing the oldest idle connection.
    expect((await probe(url, '/ok')).status).toBe(200);
    expect(await eventually('one shed', () => (flood.closed().length === 1 ? flood.closed() : undefined))).toEqual([0]);
    // The probe's connection closed with its answer; one more idle makes six again, and the next
    // probe closes the oldest idle one left — not the newest, and not a held one.
    const newer = await openIdleConnections(url, 1);
    floods.push(newer);
    expect((await probe(url, '/ok')).status).toBe(200);
    expect(await eventually('two shed', () => (flood.closed().length === 2 ? flood.closed() : undefined))).toEqual([0, 1]);
    expect(newer.closed()).toEqual([]);
    // The held requests were never cut: they are answered when released.
    for (const response of held) response.end('released');
    for (const answer of await Promise.all(answers)) expect(answer).toMatchObject({ status: 200 });
    // One line for the first shed; the next is counted into a line at most a minute later.
    expect(events).toEqual([{ event: 'http_connections_shed', count: 1, max_connections: 6 }]);
  });

  it('when every connection is being answered, the new connection is the one closed', async () => {
    const answers = await hold(6);
    await expect(probe(url, '/ok', 5_000)).rejects.toThrow();
    expect(held).toHaveLength(6);
    for (const response of held) response.end('released');
    for (const answer of await Promise.all(answers)) expect(answer).toMatchObject({ status: 200 });
    // Room again: answered.
    expect((await probe(url, '/ok')).status).toBe(200);
  });
});
