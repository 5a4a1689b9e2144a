import { get } from 'node:http';
import { connect, type Socket } from 'node:net';

/*
 * Raw TCP connections that never finish a request, and a probe on a connection of its own, for
 * the connection-limit tests (issue 24 item 6). Nothing here waits a fixed time: each step waits
 * for the event it needs, under a deadline.
 */

export interface IdleFlood {
  /** How many connections were opened. */
  readonly count: number;
  /** Indexes (in opening order) of the connections the server has closed so far. */
  closed(): number[];
  /** Ends every connection still open. */
  end(): void;
}

/**
 * Opens `count` connections to `url` one after another: even ones send nothing, odd ones send
 * half a request header (a request line and one header, never the blank line that ends it).
 * Resolves once every connection has connected (or was closed at once).
 */
export async function openIdleConnections(url: string, count: number): Promise<IdleFlood> {
  const { hostname, port, host } = new URL(url);
  const sockets: Socket[] = [];
  const closed = new Set<number>();
  for (let index = 0; index < count; index += 1) {
    await new Promise<void>((resolve) => {
      const socket = connect({ host: hostname, port: Number(port) });
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => {
        closed.add(index);
        resolve();
      });
      socket.once('connect', () => {
        if (index % 2 === 1) socket.write(`GET /livez HTTP/1.1\r\nHost: ${host}\r\n`);
        resolve();
      });
    });
  }
  return {
    count,
    closed: () => [...closed].sort((a, b) => a - b),
    end() {
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** `GET url+path` on a new connection of its own; its status and how long the answer took. */
export function probe(url: string, path: string, timeoutMs = 10_000): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = get(`${url}${path}`, { agent: false, timeout: timeoutMs }, (response) => {
      response.resume();
      response.once('end', () => {
        resolve({ status: response.statusCode ?? 0, ms: performance.now() - started });
      });
    });
    request.once('timeout', () => request.destroy(new Error(`no answer to ${path} within ${timeoutMs} ms`)));
    request.once('error', reject);
  });
}

