import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { initTeamCa, issueServerCertificate } from '../../src/launcher/tls/team-ca.js';
import { createWebhookPoster, WebhookTimeout, type WebhookPoster } from '../../src/ledger/webhooks/webhook-post.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * The webhook worker's HTTP client (src/ledger/webhooks/webhook-post.ts) against real loopback
 * servers: what it sends, that it answers at the response's head, its deadline, a refused
 * connection, a redirect not followed, a certificate Node does not trust refused, and close()
 * ending what is in flight. The delivery's retries and records: webhooks.test.ts and
 * webhooks-process.test.ts.
 */

const servers: Server[] = [];
let poster: WebhookPoster | undefined;

afterEach(() => {
  poster?.close();
  poster = undefined;
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function serve(handle: (request: IncomingMessage, body: string, response: ServerResponse) => void, server: Server = createServer()): Promise<string> {
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      handle(request, Buffer.concat(chunks).toString('utf8'), response);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  servers.push(server);
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const HEADERS = { 'content-type': 'application/json', 'x-lexec-event-id': '42', 'x-lexec-event-type': 'authorization.settled', 'x-lexec-signature': 't=1,v1=ab' };

describe('the webhook poster', () => {
  it('POSTs the body with the headers to the path and query, reusing the connection, and answers the status', async () => {
    const seen: { method: string | undefined; url: string | undefined; headers: IncomingMessage['headers']; body: string; socket: unknown }[] = [];
    const host = await serve((request, body, response) => {
      seen.push({ method: request.method, url: request.url, headers: request.headers, body, socket: request.socket });
      response.writeHead(seen.length === 1 ? 200 : 503).end('ok');
    });
    poster = createWebhookPoster();
    expect(await poster.post(`http://${host}/hooks/a?x=1#frag`, HEADERS, '{"event_id":"42"}', 5_000)).toBe(200);
    // The first answer's body drained meanwhile, its connection is free again.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await poster.post(`http://${host}/hooks/a?x=1`, HEADERS, '{"event_id":"43"}', 5_000)).toBe(503);
    expect(seen.map(({ method, url, body }) => ({ method, url, body }))).toEqual([
      { method: 'POST', url: '/hooks/a?x=1', body: '{"event_id":"42"}' },
      { method: 'POST', url: '/hooks/a?x=1', body: '{"event_id":"43"}' },
    ]);
    expect(seen[0]?.headers).toMatchObject({ ...HEADERS, 'content-length': '17', host });
    expect(seen[1]?.socket).toBe(seen[0]?.socket);
  });

  it('answers at the response head, without waiting for a body that never ends', async () => {
    const host = await serve((_request, _body, response) => {
      response.writeHead(200);
      response.write('partial');
    });
    poster = createWebhookPoster();
    const started = performance.now();
    expect(await poster.post(`http://${host}/`, HEADERS, '{}', 2_000)).toBe(200);
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  it('gives up at its deadline on a receiver that never answers (WebhookTimeout), and does not follow a redirect', async () => {
    const hanging = await serve(() => undefined);
    const redirecting = await serve((_request, _body, response) => response.writeHead(302, { location: `http://${hanging}/` }).end());
    poster = createWebhookPoster();
    const started = performance.now();
    const error = await poster.post(`http://${hanging}/`, HEADERS, '{}', 300).catch((failed: unknown) => failed);
    expect(error).toBeInstanceOf(WebhookTimeout);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(await poster.post(`http://${redirecting}/`, HEADERS, '{}', 5_000)).toBe(302);
  });

  it('rejects a refused connection with its code, and a certificate Node does not trust', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    poster = createWebhookPoster();
    const refused = (await poster.post(`http://127.0.0.1:${port}/`, HEADERS, '{}', 5_000).catch((failed: unknown) => failed)) as { code?: string };
    expect(refused.code).toBe('ECONNREFUSED');

    // A server whose certificate a team CA issued: Node's CAs do not include that CA, so the POST never reaches it.
    const home = await makeTempDir('lexec-webhook-post-');
    const env = { LEXEC_HOME: home };
    await initTeamCa({ env, force: false });
    const pair = await issueServerCertificate({ env, hosts: ['127.0.0.1'] });
    const [cert, key] = await Promise.all([readFile(pair.certificate_file, 'utf8'), readFile(pair.key_file, 'utf8')]);
    await removeDir(home);
    let reached = 0;
    const host = await serve(
      (_request, _body, response) => {
        reached += 1;
        response.writeHead(200).end();
      },
      createTlsServer({ cert, key }),
    );
    const untrusted = (await poster.post(`https://${host}/`, HEADERS, '{}', 5_000).catch((failed: unknown) => failed)) as { code?: string };
    expect(untrusted).toBeInstanceOf(Error);
    expect(untrusted.code).toMatch(/SELF_SIGNED|UNABLE_TO|CERT/);
    expect(reached).toBe(0);
  });

  it('close() ends the POSTs in flight at once', async () => {
    const host = await serve(() => undefined);
    poster = createWebhookPoster();
    const inFlight = poster.post(`http://${host}/`, HEADERS, '{}', 60_000).catch((failed: unknown) => failed);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = performance.now();
    poster.close();
    const ended = await inFlight;
    expect(ended).toBeInstanceOf(Error);
    expect(ended).not.toBeInstanceOf(WebhookTimeout);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
