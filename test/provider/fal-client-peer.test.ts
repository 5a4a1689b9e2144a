import { createFalClient } from '@fal-ai/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_MODEL, spawnSandbox, type SandboxProcess } from '../support/sandbox-process.js';

/*
 * The sandbox's fidelity, proven with fal's own client (@fal-ai/client, a dev dependency) as the
 * peer: its requests, built for https://queue.fal.run, are pointed at the sandbox's origin by a
 * request middleware and otherwise left exactly as the client builds them (submit under the
 * full model id; status, result and cancel under the app id).
 */

let sandbox: SandboxProcess;

beforeAll(async () => {
  sandbox = await spawnSandbox({ args: ['--complete-after-ms', '200'] });
}, 120_000);

afterAll(async () => {
  await sandbox.stop();
});

function falAgainstSandbox() {
  const seen: string[] = [];
  const fal = createFalClient({
    credentials: 'sandbox-key',
    suppressLocalCredentialsWarning: true,
    requestMiddleware: (request) => {
      const target = new URL(request.url);
      seen.push(`${request.method} ${target.pathname}`);
      return Promise.resolve({ ...request, url: `${sandbox.url}${target.pathname}${target.search}` });
    },
  });
  return { fal, seen };
}

describe('the sandbox behind fal’s own client', () => {
  it('queue.submit, queue.status and queue.result work unchanged', async () => {
    const { fal, seen } = falAgainstSandbox();
    const submitted = await fal.queue.submit(SANDBOX_MODEL, { input: { prompt: 'a peer in the sandbox', image_size: 'square', num_images: 2 } });
    expect(submitted.status).toBe('IN_QUEUE');
    const requestId = submitted.request_id;
    let status = await fal.queue.status(SANDBOX_MODEL, { requestId });
    for (let polls = 0; status.status !== 'COMPLETED' && polls < 100; polls += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = await fal.queue.status(SANDBOX_MODEL, { requestId });
    }
    expect(status.status).toBe('COMPLETED');
    const result = await fal.queue.result(SANDBOX_MODEL, { requestId });
    expect(result.requestId).toBe(requestId);
    const data = result.data as { images: { url: string; content_type: string }[]; prompt: string };
    expect(data.prompt).toBe('a peer in the sandbox');
    expect(data.images).toHaveLength(2);
    expect(data.images.every((image) => image.content_type === 'image/png')).toBe(true);
    // What the client asked for: submit under the model, the rest under the app id.
    expect(seen[0]).toBe(`POST /${SANDBOX_MODEL}`);
    expect(seen.slice(1).every((line) => line.startsWith(`GET /fal-ai/flux/requests/${requestId}`))).toBe(true);
  });

  it('queue.cancel of a queued request is accepted, and the sandbox records one submission per submit', async () => {
    const { fal } = falAgainstSandbox();
    const before = (await sandbox.submissions()).length;
    const slow = await spawnSandbox({ args: ['--complete-after-ms', '60000'] });
    try {
      const fal2 = createFalClient({
        credentials: 'sandbox-key',
        suppressLocalCredentialsWarning: true,
        requestMiddleware: (request) => Promise.resolve({ ...request, url: `${slow.url}${new URL(request.url).pathname}` }),
      });
      const submitted = await fal2.queue.submit(SANDBOX_MODEL, { input: { prompt: 'cancel me', image_size: 'square', num_images: 1 } });
      await fal2.queue.cancel(SANDBOX_MODEL, { requestId: submitted.request_id });
      expect((await fal2.queue.status(SANDBOX_MODEL, { requestId: submitted.request_id })).status).toBe('COMPLETED');
    } finally {
      await slow.stop();
    }
    await fal.queue.submit(SANDBOX_MODEL, { input: { prompt: 'one more', image_size: 'square', num_images: 1 } });
    expect((await sandbox.submissions()).length).toBe(before + 1);
  });
});
