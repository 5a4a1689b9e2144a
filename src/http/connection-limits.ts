import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/*
 * The connection limits of every lexec HTTP server (executor, ledger, console, sandbox provider;
 * docs/decisions.md "Connection limits"). The danger they answer: connections that send nothing,
 * or half a request header, held open until the process runs out of file descriptors — then
 * accept() fails and the launcher's `/readyz` probe (or `/livez`, `/health`) is refused like
 * everyone else. Node's `server.maxConnections` would refuse the probe too, so instead a
 * connection that is not being answered is shed:
 *   - one that has not sent a complete request header within `headersTimeoutMs` (from
 *     connecting, or from the start of its next request) is answered 408 and closed by Node;
 *     a whole request (header and body) must arrive within `requestTimeoutMs`;
 *   - at `maxConnections`, a new connection makes room by closing the oldest connection that
 *     has no request being answered (never one with an answer under way, such as a long-poll);
 *     only when every connection is busy is the new one closed instead.
 * Kept-alive idle connections keep the server's own keep-alive timeout (Fastify's 72 s, Node's
 * 5 s for the sandbox): clients reuse them, and at the limit they are the first to go anyway.
 */

export interface ConnectionLimits {
  /** Most connections held open at once. */
  readonly maxConnections: number;
  /** How long a connection may take to send a complete request header. */
  readonly headersTimeoutMs: number;
  /** How long a whole request (header and body) may take to arrive; never the answer. */
  readonly requestTimeoutMs: number;
  /** How often Node looks for connections past those two timeouts. */
  readonly checkIntervalMs: number;
}

/**
 * 256 connections: far above what a local stack's clients hold (a few CLI commands, agents, the
 * console, the launcher's probes, the executor's provider client) and far below the usual file
 * descriptor limit (1024 soft; Node raises it to the hard limit at start). 10 s for a header
 * that a loopback client sends in microseconds; 30 s for a request body of at most 64 KiB;
 * checked every second, so a stalled header is shed 10-11 s after it began.
 */
export const CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 256,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  checkIntervalMs: 1_000,
};

/** At most one `http_connections_shed` line per this interval (the first at once). */
const SHED_LOG_INTERVAL_MS = 60_000;

export interface LimitConnectionsOptions {
  readonly limits?: ConnectionLimits;
  /** Structured events (`http_connections_shed`: how many, the limit); no address or content. */
  readonly log?: (event: Record<string, unknown>) => void;
}

/**
 * Applies the limits to a `node:http` server before it listens (the check interval is read when
 * it starts listening). Called where each server is built, so tests of the built app get them.
 */
export function limitConnections(server: Server, options: LimitConnectionsOptions = {}): void {
  const limits = options.limits ?? CONNECTION_LIMITS;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  // A `createServer` option that Node keeps as this property and reads when the server starts
  // listening (lib/_http_server.js setupConnectionsTracking); @types/node does not declare it.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = limits.checkIntervalMs;

  // Open connections, oldest first (a Map keeps insertion order), with their requests being answered.
  const open = new Map<Socket, { answering: number }>();
  let shedSinceLog = 0;
  let loggedAt = -Infinity;
  const shed = (socket: Socket) => {
    open.delete(socket);
    socket.destroy();
    shedSinceLog += 1;
    const now = Date.now();
    if (options.log === undefined || now - loggedAt < SHED_LOG_INTERVAL_MS) return;
    options.log({ event: 'http_connections_shed', count: shedSinceLog, max_connections: limits.maxConnections });
    shedSinceLog = 0;
    loggedAt = now;
  };

  server.on('connection', (socket: Socket) => {
    open.set(socket, { answering: 0 });
    socket.once('close', () => open.delete(socket));
    if (open.size <= limits.maxConnections) return;
    for (const [candidate, state] of open) {
      if (candidate !== socket && state.answering === 0) {
        shed(candidate);
        return;
      }
    }
    shed(socket);
  });

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const state = open.get(request.socket);
    if (state === undefined) return;
    state.answering += 1;
    response.once('close', () => {
      state.answering -= 1;
    });
  });
}
