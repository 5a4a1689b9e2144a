import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonDepthIssue } from '../../config/json-depth.js';

/** Largest request body the sandbox reads (submit bodies and fault sets are a few hundred bytes). */
export const MAX_SANDBOX_BODY_BYTES = 64 * 1024;

/** Marks a body that passed the size limit; the rest of it was read and discarded. */
export const BODY_TOO_LARGE = Symbol('body too large');

/**
 * Reads the whole request body. Past the limit the bytes are drained, not kept, so the answer
 * can still be sent on a healthy connection. Rejects when the client goes away mid-body.
 */
export function readBody(request: IncomingMessage, limit = MAX_SANDBOX_BODY_BYTES): Promise<Buffer | typeof BODY_TOO_LARGE> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    request.on('data', (part: Buffer) => {
      size += part.length;
      if (size <= limit) parts.push(part);
    });
    request.once('end', () => {
      resolve(size > limit ? BODY_TOO_LARGE : Buffer.concat(parts));
    });
    request.once('error', reject);
    // After 'end' this is a no-op; before it, the client (or shutdown) cut the body short.
    request.once('close', () => {
      reject(new Error('request closed before its body ended'));
    });
  });
}

/**
 * Decodes a JSON body; `ok: false` when it is not JSON (the caller answers without quoting it),
 * or nests deeper than lexec reads anywhere (json-depth.ts): a walk of the value would recurse.
 */
export function decodeJson(body: Buffer): { ok: true; value: unknown } | { ok: false } {
  const text = body.toString('utf8');
  if (jsonDepthIssue(text) !== null) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(text);
}

export function sendBytes(response: ServerResponse, status: number, contentType: string, bytes: Buffer): void {
  response.writeHead(status, { 'content-type': contentType, 'content-length': bytes.length, 'cache-control': 'no-store' });
  response.end(bytes);
}
