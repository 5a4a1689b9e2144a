import { z } from 'zod';
import { isLoopbackHost } from '../../config/schema-parts.js';

/*
 * A webhook sink's URL (docs/ledger.md "Webhooks"). https anywhere; plain http only to a loopback
 * host (127.0.0.0/8, ::1, localhost), so an event never crosses a network in clear. No user or
 * password in it, no fragment. Its path and query are treated as a secret — a Slack incoming
 * webhook's path IS its credential — so the URL is kept only in the ledger's database: answers,
 * logs and error bodies show `redactedWebhookUrl` (the origin and `/…`).
 */

const MESSAGE = 'must be an https:// URL, or http:// to a loopback host (127.0.0.0/8, ::1, localhost), without user, password or fragment';

function parse(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

export function isAcceptableWebhookUrl(value: string): boolean {
  const url = parse(value);
  if (url === null || url.hostname === '' || url.username !== '' || url.password !== '' || value.includes('#')) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

export const webhookUrl = z.string({ error: MESSAGE }).max(2048, 'must be at most 2048 characters').refine(isAcceptableWebhookUrl, MESSAGE);

/** What may be shown of a sink's URL: its origin, and `/…` when it has a path or a query (never either). */
export function redactedWebhookUrl(value: string): string {
  const url = parse(value);
  if (url === null) return '…';
  const hidden = (url.pathname !== '' && url.pathname !== '/') || url.search !== '';
  return `${url.origin}${hidden ? '/…' : '/'}`;
}
