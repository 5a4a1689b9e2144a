import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { composeSandbox } from '../../src/provider/sandbox/compose-sandbox.js';
import type { SandboxApp } from '../../src/provider/sandbox/sandbox-app.js';
import { MAX_JSON_DEPTH } from '../../src/config/json-depth.js';
import { nestedJson, shapeLevels } from '../support/nested-json.js';
import { falCall, falSubmit, SANDBOX_MODEL } from '../support/sandbox-process.js';

/*
 * The built sandbox app on an in-process loopback server with a hand-driven clock, so the exact
 * queue transitions (and cancellation, which depends on them) are tested without timing races.
 * The real process is tested in sandbox-process.test.ts and sandbox-faults.test.ts.
 */

let server: Server;
let app: SandboxApp;
let url: string;
let clock: number;
let logLines: string[];

const COMPLETE_AFTER_MS = 100;
/** A model the sandbox is told takes no seed (`--seedless-model`). */
const SEEDLESS_MODEL = 'fal-ai/test-seedless';

beforeEach(async () => {
  clock = 1_000_000;
  logLines = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  server = createServer();
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The same composition root as `provider sandbox serve`, with a clock moved by hand.
  ({ app } = composeSandbox({
    origin: url,
    completeAfterMs: COMPLETE_AFTER_MS,
    seedlessModels: [SEEDLESS_MODEL],
    logger: pino({ base: null }, sink),
    now: () => clock,
  }));
  server.on('request', app.handle);
});

afterEach(async () => {
  await app.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const prompt = { prompt: 'a lighthouse at dusk', image_size: 'square', num_images: 2 };

describe('sandbox queue lifecycle (hand-driven clock)', () => {
  it('is IN_QUEUE (202, queue_position) for the first half of the delay, IN_PROGRESS (202) for the second, then COMPLETED (200)', async () => {
    const submitted = await falSubmit(url, prompt);
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ status: 'IN_QUEUE', queue_position: 0 });
    const { status_url: statusUrl, response_url: responseUrl } = submitted.body;

    const queued = await falCall(statusUrl);
    expect([queued.status, queued.body]).toEqual([202, { status: 'IN_QUEUE', request_id: submitted.body.request_id, response_url: responseUrl, queue_position: 0 }]);
    expect((await falCall(responseUrl)).status).toBe(400);

    clock += COMPLETE_AFTER_MS / 2 - 1;
    expect((await falCall(statusUrl)).body.status).toBe('IN_QUEUE');
    clock += 1;
    const running = await falCall(statusUrl);
    expect([running.status, running.body]).toEqual([202, { status: 'IN_PROGRESS', request_id: submitted.body.request_id, response_url: responseUrl }]);
    const early = await falCall(responseUrl);
    expect([early.status, early.body]).toEqual([400, { detail: 'Request is still in progress' }]);

    clock += COMPLETE_AFTER_MS / 2;
    const done = await falCall(statusUrl);
    expect([done.status, done.body]).toEqual([200, { status: 'COMPLETED', request_id: submitted.body.request_id, response_url: responseUrl, metrics: { inference_time: 0.05 } }]);
    const resultAnswer = await falCall<{ images: unknown[] }>(responseUrl);
    expect(resultAnswer.status).toBe(200);
    expect(resultAnswer.body.images).toHaveLength(2);
  });

  it('reports how many queued requests are ahead, and includes logs only when asked (?logs=1)', async () => {
    const positions: number[] = [];
    const urls: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const submitted = await falSubmit(url, prompt);
      positions.push(submitted.body.queue_position);
      urls.push(submitted.body.status_url);
      clock += 1;
    }
    expect(positions).toEqual([0, 1, 2]);
    expect((await falCall(urls[2] ?? '')).body.queue_position).toBe(2);
    expect((await falCall(`${urls[0] ?? ''}?logs=1`)).body.logs).toEqual([]);
    expect((await falCall(urls[0] ?? '')).body).not.toHaveProperty('logs');
  });

  it('cancels queued work (COMPLETED with a cancellation error, no result), not running work, and refuses finished work', async () => {
    const queued = (await falSubmit(url, prompt)).body;
    const cancelled = await falCall(queued.cancel_url, { method: 'PUT' });
    expect([cancelled.status, cancelled.body]).toEqual([202, { status: 'CANCELLATION_REQUESTED' }]);
    const after = await falCall(queued.status_url);
    expect(after.body).toMatchObject({ status: 'COMPLETED', error: 'Request was cancelled before it started.', error_type: 'request_cancelled' });
    expect((await falCall(queued.response_url)).status).toBe(500);
    expect((await fetch(`${url}/media/${queued.request_id}/0.png`)).status).toBe(404);

    const running = (await falSubmit(url, prompt)).body;
    clock += COMPLETE_AFTER_MS / 2;
    expect((await falCall(running.cancel_url, { method: 'PUT' })).status).toBe(202);
    clock += COMPLETE_AFTER_MS / 2;
    expect((await falCall(running.status_url)).body).not.toHaveProperty('error');
    expect((await falCall(running.response_url)).status).toBe(200);
    const late = await falCall(running.cancel_url, { method: 'PUT' });
    expect([late.status, late.body]).toEqual([400, { status: 'ALREADY_COMPLETED' }]);
  });

  it('serves media only once completed, and only for listed indexes', async () => {
    const submitted = (await falSubmit(url, prompt)).body;
    const media = (index: number) => fetch(`${url}/media/${submitted.request_id}/${index}.png`);
    expect((await media(0)).status).toBe(404);
    clock += COMPLETE_AFTER_MS;
    const image = await media(1);
    expect([image.status, image.headers.get('content-type')]).toEqual([200, 'image/png']);
    expect((await media(2)).status).toBe(404);
  });
});

describe('sandbox routing and refusals', () => {
  it('answers 404 for an unknown request id, for a request asked for under another model, and for paths outside the protocol', async () => {
    const submitted = (await falSubmit(url, prompt)).body;
    const unknown = await falCall(`${url}/${SANDBOX_MODEL}/requests/00000000-0000-4000-8000-000000000000/status`);
    expect([unknown.status, unknown.body]).toEqual([404, { detail: 'Request not found' }]);
    // Another app, or the same app under another model's sub-path: not this request.
    expect((await falCall(`${url}/fal-ai/recraft/requests/${submitted.request_id}/status`)).status).toBe(404);
    expect((await falCall(`${url}/fal-ai/flux/dev/requests/${submitted.request_id}/status`)).status).toBe(404);
    expect((await falCall(`${url}/${SANDBOX_MODEL}/requests/not-a-uuid/status`)).status).toBe(404);
    expect((await falCall(`${url}/Fal-AI/Flux`)).status).toBe(404);
    expect((await falSubmit(url, prompt, { model: 'fal-ai/requests/x' })).status).toBe(404);
    expect((await fetch(`${url}/__sandbox/nothing`)).status).toBe(404);
    expect((await fetch(`${url}/media/${submitted.request_id}/7.png`)).status).toBe(404);
  });

  it('answers 405 for a known path with the wrong method', async () => {
    const submitted = (await falSubmit(url, prompt)).body;
    expect((await falCall(`${url}/${SANDBOX_MODEL}`)).status).toBe(405);
    expect((await falCall(submitted.status_url, { method: 'POST' })).status).toBe(405);
    expect((await falCall(submitted.cancel_url)).status).toBe(405);
    expect((await fetch(`${url}/__sandbox/submissions`, { method: 'DELETE' })).status).toBe(405);
  });

  it('needs the key on submit, status, result and cancel, but not on media', async () => {
    const submitted = (await falSubmit(url, prompt)).body;
    clock += COMPLETE_AFTER_MS;
    for (const [target, method] of [
      [submitted.status_url, 'GET'],
      [submitted.response_url, 'GET'],
      [submitted.cancel_url, 'PUT'],
    ] as const) {
      expect((await falCall(target, { method, key: null })).status).toBe(401);
    }
    expect((await falCall(submitted.status_url, { key: '' })).status).toBe(401);
    expect((await fetch(`${url}/media/${submitted.request_id}/0.png`)).status).toBe(200);
    const noKey = await falSubmit(url, prompt, { key: null });
    expect(noKey.status).toBe(401);
  });

  it('refuses a body over 64 KiB with 413 and logs it as too_large', async () => {
    const answer = await falSubmit(url, { prompt: 'x'.repeat(70 * 1024) });
    expect([answer.status, answer.body]).toEqual([413, { detail: 'Request body too large' }]);
    const submissions = (await falCall<{ submissions: { outcome: string }[] }>(`${url}/__sandbox/submissions`)).body.submissions;
    expect(submissions.map((entry) => entry.outcome)).toEqual(['too_large']);
  });

  it('refuses a submit or a fault set nested deeper than lexec reads anywhere as undecodable: no submission accepted, no crash', async () => {
    // A valid prompt beside the deep value: without the bound the submit was accepted.
    const deep = (depth: number) => `{"prompt":"a lighthouse","extra":${nestedJson(shapeLevels('mixed', depth))}}`;
    for (const depth of [MAX_JSON_DEPTH, 5000]) {
      const answer = await falSubmit(url, deep(depth));
      expect([answer.status, answer.body]).toEqual([422, { detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }] }]);
    }
    expect((await falSubmit(url, deep(MAX_JSON_DEPTH - 1))).status).toBe(200);
    const faults = await fetch(`${url}/__sandbox/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: `{"faults":${nestedJson(shapeLevels('array', 5000))}}` });
    expect(faults.status).toBe(400);
    const submissions = (await falCall<{ submissions: { outcome: string }[] }>(`${url}/__sandbox/submissions`)).body.submissions;
    expect(submissions.map((entry) => entry.outcome)).toEqual(['invalid', 'invalid', 'accepted']);
    expect(logLines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50)).toEqual([]);
  });

  it('uses the seed the caller chose: equal seeds give equal images', async () => {
    const first = (await falSubmit(url, { ...prompt, seed: 42 })).body;
    const second = (await falSubmit(url, { ...prompt, seed: 42 })).body;
    clock += COMPLETE_AFTER_MS;
    expect((await falCall(first.response_url)).body.seed).toBe(42);
    const bytes = async (id: string) => Buffer.from(await (await fetch(`${url}/media/${id}/1.png`)).arrayBuffer());
    expect((await bytes(first.request_id)).equals(await bytes(second.request_id))).toBe(true);
  });

  it('a seedless model refuses a submission carrying a seed (422 extra_forbidden, no job) and takes one without; other models still take the seed', async () => {
    const refused = await falSubmit(url, { ...prompt, seed: 42 }, { model: SEEDLESS_MODEL });
    expect([refused.status, refused.body]).toEqual([422, { detail: [{ loc: ['body', 'seed'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' }] }]);
    const taken = await falSubmit(url, prompt, { model: SEEDLESS_MODEL });
    expect(taken.status).toBe(200);
    const seeded = await falSubmit(url, { ...prompt, seed: 42 });
    expect(seeded.status).toBe(200);
    const submissions = (await falCall<{ submissions: { model: string; outcome: string; seed: number | null }[] }>(`${url}/__sandbox/submissions`)).body.submissions;
    expect(submissions.map((entry) => [entry.model, entry.outcome, entry.seed])).toEqual([
      [SEEDLESS_MODEL, 'invalid', null],
      [SEEDLESS_MODEL, 'accepted', null],
      [SANDBOX_MODEL, 'accepted', 42],
    ]);
  });

  it('logs one line per request with the route template, never the URL, prompt or key', async () => {
    await falSubmit(url, prompt, { key: 'KEY-VALUE-MARKER' });
    await fetch(`${url}/__sandbox/health`);
    const events = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.filter((event) => event.event === 'http_request').map((event) => event.route)).toEqual(['POST /{model}']);
    expect(logLines.join('\n')).not.toMatch(/KEY-VALUE-MARKER|lighthouse|requests\//);
  });
});
