import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLedgerGateway, LedgerRefused, type LedgerGateway } from '../../src/executor/ledger-gateway.js';

/*
 * The executor's ledger client against a loopback server that records what it was sent: the
 * request it builds from the configured endpoint (host, port, path prefix, IPv6 literal), and
 * how it reads answers and refusals. The flows themselves are tested against a real ledger.
 */

interface Seen {
  method: string | undefined;
  url: string | undefined;
  authorization: string | undefined;
  body: unknown;
}

const servers: http.Server[] = [];
const gateways: LedgerGateway[] = [];

afterEach(async () => {
  for (const gateway of gateways.splice(0)) gateway.close();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const authorization = {
  token_id: 'b3fbf0ef-78ba-450a-a5ce-42e5a87ea168',
  account_id: 'acct_1',
  agent_id: 'agt_1',
  status: 'claimed',
  held_units: '900000',
  units_scale: 6,
  currency: 'USD',
  expires_at: '2026-11-21T12:00:00.000Z',
  execution_id: 'exe_1',
};

async function ledgerStub(host: string, answer: { status: number; body: unknown }) {
  const seen: Seen[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: request.method, url: request.url, authorization: request.headers.authorization, body: text === '' ? undefined : JSON.parse(text) });
      response.writeHead(answer.status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(answer.body));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as AddressInfo).port, seen };
}

function gateway(endpoint: string): LedgerGateway {
  const created = createLedgerGateway({ endpoint, credential: 'lexec_executor_secret' });
  gateways.push(created);
  return created;
}

describe('ledger gateway', () => {
  it('sends the conditional claim to the endpoint’s host, port and path prefix, and reads the resolution with exact amounts', async () => {
    const stub = await ledgerStub('127.0.0.1', { status: 200, body: { replayed: false, authorization } });
    const claimed = await gateway(`http://127.0.0.1:${stub.port}/ledger/`).claim(authorization.token_id, 'exe_1', { currency: 'USD', minHeldUnits: 6000n });
    expect(claimed).toMatchObject({ status: 'claimed', execution_id: 'exe_1', account_id: 'acct_1', agent_id: 'agt_1', held_units: 900_000n });
    expect(stub.seen).toEqual([
      {
        method: 'POST',
        url: `/ledger/executor/authorizations/${authorization.token_id}/claim`,
        authorization: 'Bearer lexec_executor_secret',
        body: { execution_id: 'exe_1', require: { currency: 'USD', min_held_units: '6000' } },
      },
    ]);
  });

  it('reaches an IPv6 literal endpoint', async () => {
    const stub = await ledgerStub('::1', { status: 200, body: { replayed: true, authorization } });
    const claimed = await gateway(`http://[::1]:${stub.port}`).claim(authorization.token_id, 'exe_1');
    expect(claimed.execution_id).toBe('exe_1');
    expect(stub.seen.map((seen) => [seen.url, seen.body])).toEqual([[`/executor/authorizations/${authorization.token_id}/claim`, { execution_id: 'exe_1' }]]);
  });

  it('turns a refused requirement into a LedgerRefused naming the code and reason', async () => {
    const stub = await ledgerStub('127.0.0.1', {
      status: 422,
      body: { error: { code: 'requirement_not_met', reason_code: 'hold_below_requirement', fields: ['require.min_held_units'] } },
    });
    const refused = await gateway(`http://127.0.0.1:${stub.port}`)
      .claim(authorization.token_id, 'exe_1', { currency: 'USD', minHeldUnits: 1_000_000n })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LedgerRefused);
    expect(refused).toMatchObject({ status: 422, code: 'requirement_not_met', reasonCode: 'hold_below_requirement' });
  });
});
