import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFalQueueClient, TransmissionAmbiguous } from '../../src/executor/provider/fal-queue-client.js';
import { spawnSandbox, type SandboxProcess } from '../support/sandbox-process.js';

/*
 * The executor's provider client over kept-alive sockets, against the real sandbox provider:
 * a long poll carries many requests on one socket, and none of them may leave a listener behind
 * (before the fix every request added `connect`/`secureConnect` listeners that never fired:
 * MaxListenersExceededWarning after a few executions, unbounded on a long poll).
 */

let sandbox: SandboxProcess;

beforeAll(async () => {
  sandbox = await spawnSandbox({ args: ['--complete-after-ms', '60000'] });
}, 120_000);

afterAll(async () => {
  await sandbox.stop();
});

describe('the fal queue client on a kept-alive socket', () => {
  it('polls many times over one socket without piling up listeners', async () => {
    const client = createFalQueueClient({ submitBase: sandbox.url, apiKey: 'sandbox-key', pollingOrigins: [sandbox.url], mediaOrigins: [sandbox.url] });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const operation = await client.submit('fal-ai/flux/schnell', { prompt: 'a long poll', image_size: 'square', num_images: 1, seed: 7 });
      for (let poll = 0; poll < 40; poll += 1) expect((await client.status(operation)).status).not.toBe('COMPLETED');
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});

describe('a refused acceptance', () => {
  it('keeps the request id the provider answered with, so the job can be found at the provider', async () => {
    const client = createFalQueueClient({ submitBase: sandbox.url, apiKey: 'sandbox-key', pollingOrigins: [sandbox.url], mediaOrigins: [sandbox.url] });
    await sandbox.setFaults([{ kind: 'foreign_host', field: 'status_url' }]);
    try {
      const refused = await client.submit('fal-ai/flux/schnell', { prompt: 'refused', image_size: 'square', num_images: 1, seed: 7 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TransmissionAmbiguous);
      const submissions = await sandbox.submissions();
      expect((refused as TransmissionAmbiguous).receivedRequestId).toBe(submissions.at(-1)?.request_id);
      expect((refused as TransmissionAmbiguous).detail).toBe('polling host not allowed');
    } finally {
      await sandbox.setFaults([]);
    }
  });
});

describe('a submission never rides a kept-alive socket', () => {
  /*
   * A provider that closes an idle kept-alive socket just as the next request reaches it (the
   * race between its idle timeout and the client's reuse, made certain here): a second request on
   * a socket is cut off unanswered. A status read before it is answered and leaves its socket in
   * the client's pool. Before the fix the submission reused that socket, was cut off, and the
   * execution was parked as `submission_unconfirmed` (money held for a human) for a job the
   * provider never saw.
   */
  it('goes on a connection of its own, so a socket the provider closed never makes it ambiguous', async () => {
    const served = new WeakSet<Socket>();
    const posts: (string | undefined)[] = [];
    let connections = 0;
    const server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      if (served.has(socket)) {
        socket.destroy();
        return;
      }
      served.add(socket);
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      request.resume();
      request.on('end', () => {
        response.setHeader('content-type', 'application/json');
        if (request.method === 'POST') {
          posts.push(request.headers.connection);
          response.end(JSON.stringify({ request_id: 'req-1', status_url: `${origin}/fal-ai/flux/requests/req-1/status`, response_url: `${origin}/fal-ai/flux/requests/req-1` }));
        } else {
          response.end(JSON.stringify({ status: 'IN_QUEUE', request_id: 'req-0' }));
        }
      });
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = createFalQueueClient({ submitBase: origin, apiKey: 'a-key', pollingOrigins: [origin], mediaOrigins: [origin] });
    try {
      // A status read first: its socket is kept alive in the client's pool.
      expect((await client.status({ requestId: 'req-0', operationId: 'fal-ai/flux/requests/req-0', pollingOrigin: origin })).status).toBe('IN_QUEUE');
      const operation = await client.submit('fal-ai/flux/schnell', { prompt: 'a fresh socket', image_size: 'square', num_images: 1, seed: 7 });
      expect(operation).toEqual({ requestId: 'req-1', operationId: 'fal-ai/flux/requests/req-1', pollingOrigin: origin });
      // The submission reached the provider, on a second connection, asking it closed after.
      expect(posts).toEqual(['close']);
      expect(connections).toBe(2);
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
