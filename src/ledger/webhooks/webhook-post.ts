import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/*
 * The webhook worker's HTTP client: node:http(s) with a keep-alive agent per scheme, so a sink's
 * deliveries reuse their connections. Measured on the ledger-cycles bench (docs/benchmarks.md),
 * global fetch cost the ledger about a third of a millisecond of CPU more per delivery, taken
 * from the request handling the deliveries share a thread with. HTTPS verifies the receiver's
 * certificate against Node's CAs (never skipped). Redirects are not followed (node:http never
 * does): a 3xx is an answer that is not 2xx.
 */

export interface WebhookPoster {
  /** POSTs `body`; answers the response's status once its head is in (the body is drained, never read). */
  post(url: string, headers: Readonly<Record<string, string>>, body: string, signal: AbortSignal): Promise<number>;
  /** Closes the kept-alive connections. */
  close(): void;
}

export function createWebhookPoster(): WebhookPoster {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  return {
    post(url, headers, body, signal) {
      return new Promise<number>((resolve, reject) => {
        const target = new URL(url);
        const secure = target.protocol === 'https:';
        const options = { method: 'POST', agent: secure ? agents.https : agents.http, headers: { ...headers, 'content-length': Buffer.byteLength(body) }, signal };
        const answered = (response: IncomingMessage) => {
          response.on('error', () => undefined);
          response.resume();
          resolve(response.statusCode ?? 0);
        };
        const request = secure ? httpsRequest(target, options, answered) : httpRequest(target, options, answered);
        request.on('error', reject);
        request.end(body);
      });
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
