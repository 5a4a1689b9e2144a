import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Registry } from 'prom-client';
import { ApiError } from './api-error.js';

/**
 * Whether `address` (a socket's remote address) is the loopback interface: 127.0.0.0/8, ::1, or
 * an IPv4 loopback address mapped into IPv6 (a dual-stack listener reports ::ffff:127.0.0.1).
 */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  if (isIP(v4) === 4) return v4.split('.')[0] === '127';
  return isIP(address) === 6 && address === '::1';
}

/**
 * Refuses a request whose remote address is not loopback (403 `forbidden` / `metrics_loopback_only`),
 * before the capability is even looked at: a scrape is a local operator's, whatever address the
 * server listens on (docs/metrics.md).
 */
function loopbackOnly(request: FastifyRequest): Promise<void> {
  if (isLoopbackAddress(request.socket.remoteAddress)) return Promise.resolve();
  return Promise.reject(new ApiError(403, 'forbidden', { reasonCode: 'metrics_loopback_only' }));
}

/**
 * `GET /metrics`: the registry's metrics in the Prometheus text format, to a loopback caller that
 * presents a `metrics` capability (`requiresMetrics`, the server's credential guard). Every value
 * is gathered when it is asked for (the registry's collect functions read the database then).
 */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry, requiresMetrics: onRequestAsyncHookHandler): void {
  app.get('/metrics', { onRequest: [loopbackOnly, requiresMetrics] }, async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
}
