import { Agent } from 'undici';

/*
 * The webhook worker's HTTP client: an undici `Agent` (the undici package, already the stack's
 * client for team-CA TLS), which keeps each origin's connections alive, so a sink's deliveries reuse
 * them. Measured per POST on this worker's load (docs/benchmarks.md, 2026-11-28 tenth session):
 * about half the CPU of node:http with an `AbortSignal.timeout` and `AbortSignal.any` per request
 * (those two alone were a third of it); global fetch cost more than either. Each POST's deadline is
 * one timer of its own. HTTPS verifies the receiver's certificate against Node's CAs (never
 * skipped). Redirects are not followed (no redirect interceptor): a 3xx is an answer that is not 2xx.
 */

/** The answer's head did not arrive within the deadline. */
export class WebhookTimeout extends Error {
  override readonly name = 'WebhookTimeout';
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

export interface WebhookPoster {
  /**
   * POSTs `body`; answers the response's status once its head is in (the body is drained, never
   * read). Rejects with WebhookTimeout when the head is not in within `timeoutMs`, with the
   * connection's error otherwise (`code` ECONNREFUSED for a refused connection).
   */
  post(url: string, headers: Readonly<Record<string, string>>, body: string, timeoutMs: number): Promise<number>;
  /** Aborts the POSTs in flight (they reject) and closes the kept-alive connections. */
  close(): void;
}

export function createWebhookPoster(): WebhookPoster {
  const agent = new Agent();
  // A sink's URL as the agent takes it, parsed once (sinks are few, their URLs fixed).
  const targets = new Map<string, { readonly origin: string; readonly path: string }>();
  const target = (url: string) => {
    let known = targets.get(url);
    if (known === undefined) {
      const parsed = new URL(url);
      known = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      targets.set(url, known);
    }
    return known;
  };

  return {
    async post(url, headers, body, timeoutMs) {
      const { origin, path } = target(url);
      const deadline = new AbortController();
      const timer = setTimeout(() => {
        deadline.abort(new WebhookTimeout(timeoutMs));
      }, timeoutMs);
      try {
        const answer = await agent.request({ origin, path, method: 'POST', headers, body, signal: deadline.signal });
        answer.body.dump().catch(() => undefined);
        return answer.statusCode;
      } catch (error) {
        if (deadline.signal.aborted) throw new WebhookTimeout(timeoutMs);
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      void agent.destroy().catch(() => undefined);
    },
  };
}
