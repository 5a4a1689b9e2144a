import type { ExecutorConfig } from '../config/executor-config-schema.js';
import { DEFAULT_POLLING, type PollingPolicy } from '../domain/provider-polling.js';
import { LIVE_MEDIA_ORIGINS, LIVE_QUEUE_ORIGIN, type ProviderEndpoint } from './fal-queue-client.js';

/**
 * Where provider traffic may go (spec §1.5, ARCHITECTURE.md "Provider protocol"): nowhere when
 * disabled; the sandbox's own loopback origin for submission, polling and media; in live mode
 * only the fixed queue origin over https and the fixed media origins, with the provider key.
 */
export function providerEndpoint(config: ExecutorConfig, liveKey: string | undefined): ProviderEndpoint | null {
  const { providers } = config;
  if (providers.mode === 'disabled') return null;
  if (providers.mode === 'sandbox') {
    const origin = new URL(providers.base_url).origin;
    return { submitBase: providers.base_url, apiKey: 'sandbox', pollingOrigins: [origin], mediaOrigins: [origin], timeoutMs: providers.request_timeout_seconds * 1000 };
  }
  if (liveKey === undefined || liveKey === '') throw new Error('live mode needs the provider key (resolved at startup)');
  return { submitBase: LIVE_QUEUE_ORIGIN, apiKey: liveKey, pollingOrigins: [LIVE_QUEUE_ORIGIN], mediaOrigins: [...LIVE_MEDIA_ORIGINS], timeoutMs: providers.request_timeout_seconds * 1000 };
}

/** How status polls are spaced (domain/provider-polling.ts); the defaults without a provider. */
export function pollingPolicy(config: ExecutorConfig): PollingPolicy {
  if (config.providers.mode === 'disabled') return DEFAULT_POLLING;
  // The schema refuses a maximum below the initial wait.
  return { initialMs: config.providers.poll_initial_ms, maxMs: config.providers.poll_max_ms };
}

/** The deadline of a provider operation in milliseconds (the configured seconds; 10 min without a provider). */
export function operationDeadlineMs(config: ExecutorConfig): number {
  return config.providers.mode === 'disabled' ? 600_000 : config.providers.operation_deadline_seconds * 1000;
}
