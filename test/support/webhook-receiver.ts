import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got: its headers, its raw body, and how it was answered (null: left hanging). */
export interface ReceivedWebhook {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  readonly answered: number | null;
  readonly at: number;
}

/** How the receiver answers from now on: a status code, or `hang` (never answers). */
export type ReceiverMode = number | 'hang';

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` (bound to port 0, read back). */
  readonly origin: string;
  readonly received: ReceivedWebhook[];
  setMode(mode: ReceiverMode): void;
  /** Resolves once `predicate` holds of what was received (checked on every request; rejects after `timeoutMs`). */
  until(predicate: (received: readonly ReceivedWebhook[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A real webhook receiver on loopback, for the delivery tests and the bench. */
export async function startWebhookReceiver(initial: ReceiverMode = 200): Promise<WebhookReceiver> {
  let mode = initial;
  const received: ReceivedWebhook[] = [];
  const hanging = new Set<ServerResponse>();
  const waiters = new Set<() => void>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const answered = mode === 'hang' ? null : mode;
      received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), answered, at: Date.now() });
      if (answered === null) hanging.add(response);
      else response.writeHead(answered, { 'content-type': 'text/plain' }).end(answered < 300 ? 'ok' : 'no');
      for (const waiter of [...waiters]) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${String(port)}`,
    received,
    setMode(next) {
      mode = next;
    },
    until(predicate, timeoutMs = 15_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!predicate(received)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the webhook receiver did not get what was awaited within ${String(timeoutMs)} ms (${String(received.length)} requests)`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}

/** Event ids a receiver answered with a 2xx. */
export function deliveredIds(received: readonly ReceivedWebhook[]): Set<string> {
  return new Set(received.filter((request) => request.answered !== null && request.answered < 300).map((request) => String(request.headers['x-lexec-event-id'])));
}
