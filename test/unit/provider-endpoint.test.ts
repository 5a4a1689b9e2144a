import { describe, expect, it } from 'vitest';
import { LIVE_SPEND_ACKNOWLEDGEMENT } from '../../src/executor/config/executor-config-schema.js';
import { parseExecutorConfig } from '../../src/executor/config/parse-executor-config.js';
import { operationDeadlineMs, providerEndpoint } from '../../src/executor/provider/provider-endpoint.js';
import { sandboxConfig, type JsonObject } from '../support/config-fixtures.js';

function config(providers: JsonObject) {
  const document = sandboxConfig();
  document.providers = providers;
  const parsed = parseExecutorConfig(document);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.value;
}

describe('provider endpoint', () => {
  it('disabled: no provider traffic at all', () => {
    expect(providerEndpoint(config({ mode: 'disabled' }), undefined)).toBeNull();
  });

  it('sandbox: submission, polling and media only on the sandbox origin', () => {
    const endpoint = providerEndpoint(config({ mode: 'sandbox', base_url: 'http://127.0.0.1:7420', operation_deadline_seconds: 30, request_timeout_seconds: 5 }), undefined);
    expect(endpoint).toEqual({ submitBase: 'http://127.0.0.1:7420', apiKey: 'sandbox', pollingOrigins: ['http://127.0.0.1:7420'], mediaOrigins: ['http://127.0.0.1:7420'], timeoutMs: 5_000 });
    expect(operationDeadlineMs(config({ mode: 'sandbox', base_url: 'http://127.0.0.1:7420', operation_deadline_seconds: 30 }))).toBe(30_000);
  });

  it('live: only the fixed https queue and media origins, with the resolved key', () => {
    const live = config({
      mode: 'live',
      target_id: 'lexec:target:v1:flux-schnell',
      credential: { store: 'file', path: '/etc/lexec/fal.key' },
      spend_ceiling: { amount_units: '1000000', units_scale: 6, currency: 'USD' },
      acknowledgement: LIVE_SPEND_ACKNOWLEDGEMENT,
    });
    expect(providerEndpoint(live, 'key-material')).toEqual({
      submitBase: 'https://queue.fal.run',
      apiKey: 'key-material',
      pollingOrigins: ['https://queue.fal.run'],
      mediaOrigins: ['https://fal.media', 'https://v2.fal.media', 'https://v3.fal.media'],
      // Each request answered within 30 s unless configured otherwise.
      timeoutMs: 30_000,
    });
    expect(() => providerEndpoint(live, undefined)).toThrow(/provider key/);
  });
});
