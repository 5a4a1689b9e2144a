import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { falCall, falSubmit, pollUntilCompleted, SANDBOX_APP, SANDBOX_MODEL, spawnSandbox, type SandboxProcess } from '../support/sandbox-process.js';

/*
 * Every fault of the sandbox provider, against the real process, set at runtime through the
 * control API (start-up faults are covered in sandbox-process.test.ts). Faults are cleared after
 * each test, so one process serves the whole file.
 */

let sandbox: SandboxProcess;

beforeAll(async () => {
  sandbox = await spawnSandbox();
});
afterAll(async () => {
  await sandbox.stop();
});
afterEach(async () => {
  await sandbox.clearFaults();
});

const body = { prompt: 'a windmill', image_size: 'square', num_images: 2 };

async function completed(statusUrl: string) {
  return (await pollUntilCompleted(statusUrl)).at(-1);
}

async function lastSubmission() {
  return (await sandbox.submissions()).at(-1);
}

describe('sandbox faults: submit', () => {
  it('http_error on submit answers the 5xx, creates no job, and logs the receipt; one-shot faults then run out', async () => {
    await sandbox.setFaults([{ kind: 'http_error', route: 'submit', status: 503, times: 2 }]);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const answer = await falSubmit(sandbox.url, body);
      expect([answer.status, answer.body]).toEqual([503, { detail: 'Internal Server Error' }]);
      expect(await lastSubmission()).toMatchObject({ outcome: 'http_error', request_id: null, image_size: 'square', num_images: 2, faults: ['http_error'] });
    }
    expect(await sandbox.faults()).toEqual([]);
    expect((await falSubmit(sandbox.url, body)).status).toBe(200);
  });

  it('submit faults are used only by an authorized, valid submit', async () => {
    await sandbox.setFaults([{ kind: 'drop_after_receipt', times: 1 }]);
    expect((await falSubmit(sandbox.url, body, { key: null })).status).toBe(401);
    expect((await falSubmit(sandbox.url, { ...body, num_images: 5 })).status).toBe(422);
    expect((await sandbox.faults()).map((fault) => fault.remaining)).toEqual([1]);
    await expect(falSubmit(sandbox.url, body)).rejects.toThrow();
  });

  it('drop_after_receipt logs the submission and creates the job, then destroys the connection without an answer', async () => {
    await sandbox.setFaults([{ kind: 'drop_after_receipt', times: 1 }]);
    const before = (await sandbox.submissions()).length;
    await expect(falSubmit(sandbox.url, body)).rejects.toThrow();
    const records = (await sandbox.submissions()).slice(before);
    expect(records).toHaveLength(1);
    const dropped = records[0];
    expect(dropped).toMatchObject({ outcome: 'dropped', key_present: true, image_size: 'square', num_images: 2, faults: ['drop_after_receipt'] });
    // The provider has the work: its status URL (rebuilt from the logged id) completes.
    const statusUrl = `${sandbox.url}/${SANDBOX_MODEL}/requests/${dropped?.request_id ?? ''}/status`;
    expect((await completed(statusUrl))?.body.status).toBe('COMPLETED');
    expect((await falSubmit(sandbox.url, body)).status).toBe(200);
  });

  it('unprocessable answers 422 with a validation detail, logs the submission as invalid and creates no job', async () => {
    await sandbox.setFaults([{ kind: 'unprocessable', times: 1 }]);
    const refused = await falSubmit(sandbox.url, body);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ detail: [{ loc: ['body', 'prompt'], type: 'value_error' }] });
    expect(await lastSubmission()).toMatchObject({ outcome: 'invalid', request_id: null, faults: ['unprocessable'] });
    expect((await falSubmit(sandbox.url, body)).status).toBe(200);
  });

  it('hang_submit withholds the answer until the client gives up; the submission was logged and its job exists', async () => {
    await sandbox.setFaults([{ kind: 'hang_submit', times: 1 }]);
    const startedAt = Date.now();
    await expect(falSubmit(sandbox.url, body, { signal: AbortSignal.timeout(300) })).rejects.toThrow(/abort|timeout/i);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(290);
    const hung = await lastSubmission();
    expect(hung).toMatchObject({ outcome: 'hung', faults: ['hang_submit'] });
    expect((await falCall(`${sandbox.url}/${SANDBOX_MODEL}/requests/${hung?.request_id ?? ''}/status`)).status).not.toBe(404);
    await expect.poll(() => sandbox.events().some((event) => event.route === 'POST /{model}' && event.answered === false)).toBe(true);
    expect((await falSubmit(sandbox.url, body)).status).toBe(200);
  });

  it('latency delays the answers of the routes it names, for as many requests as asked', async () => {
    const submitted = await falSubmit(sandbox.url, body);
    await sandbox.setFaults([{ kind: 'latency', ms: 250, routes: ['status'], times: 1 }]);
    const timed = async () => {
      const startedAt = Date.now();
      await falCall(submitted.body.status_url);
      return Date.now() - startedAt;
    };
    expect(await timed()).toBeGreaterThanOrEqual(240);
    expect(await timed()).toBeLessThan(240);
    const startedAt = Date.now();
    await sandbox.setFaults([{ kind: 'latency', ms: 250 }]);
    await falSubmit(sandbox.url, body);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(240);
    // The control API is never delayed.
    const controlStartedAt = Date.now();
    await sandbox.submissions();
    expect(Date.now() - controlStartedAt).toBeLessThan(240);
  });
});

describe('sandbox faults: status, result and media', () => {
  it.each(['status', 'result', 'media'] as const)('http_error on %s answers the 5xx once, then the route recovers', async (route) => {
    const submitted = await falSubmit(sandbox.url, body);
    await completed(submitted.body.status_url);
    const target = {
      status: submitted.body.status_url,
      result: submitted.body.response_url,
      media: `${sandbox.url}/media/${submitted.body.request_id}/0.png`,
    }[route];
    await sandbox.setFaults([{ kind: 'http_error', route, status: 502, times: 1 }]);
    expect((await falCall(target)).status).toBe(502);
    expect((await falCall(target)).status).toBe(200);
  });

  it('a persistent fault keeps applying until the faults are cleared', async () => {
    const submitted = await falSubmit(sandbox.url, body);
    await sandbox.setFaults([{ kind: 'http_error', route: 'status' }]);
    for (let attempt = 0; attempt < 3; attempt += 1) expect((await falCall(submitted.body.status_url)).status).toBe(500);
    expect(await sandbox.faults()).toEqual([{ kind: 'http_error', route: 'status', status: 500, remaining: null }]);
    await sandbox.clearFaults();
    expect((await falCall(submitted.body.status_url)).status).toBeLessThan(300);
  });

  it('complete_with_error ends the job COMPLETED with an error: the result is an error and there is no media', async () => {
    await sandbox.setFaults([{ kind: 'complete_with_error', times: 1 }]);
    const submitted = await falSubmit(sandbox.url, body);
    expect(submitted.status).toBe(200);
    expect(await lastSubmission()).toMatchObject({ outcome: 'accepted', faults: ['complete_with_error'] });
    const final = await completed(submitted.body.status_url);
    expect(final?.body).toMatchObject({ status: 'COMPLETED', error: expect.any(String) as string, error_type: 'sandbox_generation_failed' });
    const result = await falCall(submitted.body.response_url);
    expect(result.status).toBe(500);
    expect(result.body).toMatchObject({ detail: expect.any(String) as string });
    expect((await fetch(`${sandbox.url}/media/${submitted.body.request_id}/0.png`)).status).toBe(404);
  });

  it('never_complete keeps the job IN_PROGRESS long after its delay', async () => {
    await sandbox.setFaults([{ kind: 'never_complete', times: 1 }]);
    const submitted = await falSubmit(sandbox.url, body);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const answer = await falCall(submitted.body.status_url);
    expect([answer.status, answer.body.status]).toEqual([202, 'IN_PROGRESS']);
    expect((await falCall(submitted.body.response_url)).status).toBe(400);
  });

  it('fewer_images lists fewer images than asked; the missing ones are 404', async () => {
    await sandbox.setFaults([{ kind: 'fewer_images', omit: 2, times: 1 }]);
    const submitted = await falSubmit(sandbox.url, { ...body, num_images: 3 });
    await completed(submitted.body.status_url);
    const result = await falCall<{ images: { url: string }[]; has_nsfw_concepts: boolean[] }>(submitted.body.response_url);
    expect(result.body.images.map((image) => image.url)).toEqual([`${sandbox.url}/media/${submitted.body.request_id}/0.png`]);
    expect(result.body.has_nsfw_concepts).toEqual([false]);
    expect((await fetch(`${sandbox.url}/media/${submitted.body.request_id}/1.png`)).status).toBe(404);
    expect(await lastSubmission()).toMatchObject({ num_images: 3, faults: ['fewer_images'] });
  });

  it('foreign_host moves the status URL (by default), or any other URL, to a foreign origin; the rest stay on the sandbox', async () => {
    await sandbox.setFaults([{ kind: 'foreign_host', times: 1 }]);
    const submitted = await falSubmit(sandbox.url, body);
    const id = submitted.body.request_id;
    expect(submitted.body.status_url).toBe(`http://evil.example/${SANDBOX_APP}/requests/${id}/status`);
    expect(submitted.body.response_url).toBe(`${sandbox.url}/${SANDBOX_APP}/requests/${id}`);
    expect(submitted.body.cancel_url.startsWith(sandbox.url)).toBe(true);

    await sandbox.setFaults([
      { kind: 'foreign_host', field: 'response_url', origin: 'https://queue.attacker.test:8443', times: 1 },
      { kind: 'foreign_host', field: 'image_url', times: 1 },
    ]);
    const other = await falSubmit(sandbox.url, body);
    expect(other.body.response_url).toBe(`https://queue.attacker.test:8443/${SANDBOX_APP}/requests/${other.body.request_id}`);
    expect(other.body.status_url.startsWith(sandbox.url)).toBe(true);
    const final = await completed(other.body.status_url);
    expect(final?.body.response_url).toBe(other.body.response_url);
    const result = await falCall<{ images: { url: string }[] }>(other.body.response_url.replace('https://queue.attacker.test:8443', sandbox.url));
    expect(result.body.images.map((image) => image.url)).toEqual([0, 1].map((index) => `http://evil.example/media/${other.body.request_id}/${index}.png`));
    expect(await lastSubmission()).toMatchObject({ faults: ['foreign_host:response_url', 'foreign_host:image_url'] });

    // Another port on the same loopback host is foreign too.
    await sandbox.setFaults([{ kind: 'foreign_host', origin: 'http://127.0.0.1:9', times: 1 }]);
    const sameHost = await falSubmit(sandbox.url, body);
    expect(sameHost.body.status_url).toBe(`http://127.0.0.1:9/${SANDBOX_APP}/requests/${sameHost.body.request_id}/status`);
  });

  it('mismatched_request_id reports another request id in the status body and header, or in the result header', async () => {
    const submitted = await falSubmit(sandbox.url, body);
    const id = submitted.body.request_id;
    await completed(submitted.body.status_url);
    await sandbox.setFaults([
      { kind: 'mismatched_request_id', route: 'status', times: 1 },
      { kind: 'mismatched_request_id', route: 'result', times: 1 },
    ]);
    const status = await falCall(submitted.body.status_url);
    expect(status.body.request_id).not.toBe(id);
    expect(status.headers.get('x-fal-request-id')).toBe(status.body.request_id);
    const result = await falCall(submitted.body.response_url);
    expect(result.status).toBe(200);
    expect(result.headers.get('x-fal-request-id')).not.toBe(id);
    expect((await falCall(submitted.body.status_url)).body.request_id).toBe(id);
    expect((await falCall(submitted.body.response_url)).headers.get('x-fal-request-id')).toBe(id);
  });
});

describe('sandbox control API', () => {
  it('replaces the whole set on PUT, shows what remains on GET, and empties it on DELETE', async () => {
    await sandbox.setFaults([{ kind: 'latency', ms: 1, times: 3 }]);
    const set = await sandbox.setFaults([{ kind: 'fewer_images', times: 2 }, { kind: 'hang_submit' }]);
    expect(set).toEqual([
      { kind: 'fewer_images', omit: 1, times: 2, remaining: 2 },
      { kind: 'hang_submit', remaining: null },
    ]);
    await sandbox.clearFaults();
    expect(await sandbox.faults()).toEqual([]);
  });

  it('refuses an invalid fault set with 400 and field paths, never echoing values, and keeps the current faults', async () => {
    await sandbox.setFaults([{ kind: 'never_complete', times: 1 }]);
    const marker = 'FAULT-VALUE-MARKER';
    const response = await fetch(`${sandbox.url}/__sandbox/faults`, {
      method: 'PUT',
      body: JSON.stringify({ faults: [{ kind: 'http_error', route: marker }, { kind: 'latency', ms: -5 }, { kind: marker }, { kind: 'hang_submit', times: 0, extra: 1 }] }),
    });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).not.toContain(marker);
    expect((JSON.parse(text) as { error: { fields: string[] } }).error.fields).toEqual(['faults[0].route', 'faults[1].ms', 'faults[2].kind', 'faults[3].times', 'faults[3].extra']);
    const notJson = await fetch(`${sandbox.url}/__sandbox/faults`, { method: 'PUT', body: '{' });
    expect(notJson.status).toBe(400);
    expect((await sandbox.faults()).map((fault) => fault.kind)).toEqual(['never_complete']);
  });
});
