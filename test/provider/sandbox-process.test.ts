import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { IMAGE_SIZES } from '../../src/provider/image-sizes.js';
import { makeTempDir, removeDir, runLexec } from '../support/cli.js';
import { freePorts } from '../support/free-ports.js';
import { decodePng } from '../support/png.js';
import { falCall, falSubmit, pollUntilCompleted, SANDBOX_APP, SANDBOX_MODEL, spawnSandbox, type SandboxProcess } from '../support/sandbox-process.js';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const KEY = 'fal-key-VALUE-4d2c91';

describe('sandbox provider process: the fal queue protocol', () => {
  let sandbox: SandboxProcess;

  beforeAll(async () => {
    sandbox = await spawnSandbox();
  });
  afterAll(async () => {
    await sandbox.stop();
  });

  it('runs submit → status polling → result → media with fal-shaped URLs on its own origin', async () => {
    expect(sandbox.url).toBe(`http://127.0.0.1:${sandbox.port}`);
    const submitted = await falSubmit(sandbox.url, { prompt: 'a red fox', image_size: 'landscape_16_9', num_images: 3 }, { key: KEY });
    expect(submitted.status).toBe(200);
    const id = submitted.body.request_id;
    expect(id).toMatch(new RegExp(`^${UUID}$`));
    expect(submitted.headers.get('x-fal-request-id')).toBe(id);
    // As fal: status, result and cancel under the app id, without the model's sub-path (`/schnell`).
    const base = `${sandbox.url}/${SANDBOX_APP}/requests/${id}`;
    expect(submitted.body).toEqual({ status: 'IN_QUEUE', request_id: id, status_url: `${base}/status`, response_url: base, cancel_url: `${base}/cancel`, queue_position: 0 });

    // The full model path (as clients built it before) answers for the same request.
    expect((await falCall(`${sandbox.url}/${SANDBOX_MODEL}/requests/${id}/status`, { key: KEY })).body).toMatchObject({ request_id: id });
    const statuses = await pollUntilCompleted(submitted.body.status_url);
    const seen = statuses.map((answer) => answer.body.status);
    expect(seen.at(-1)).toBe('COMPLETED');
    expect(seen.every((value, index) => index === 0 || ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'].indexOf(String(value)) >= ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'].indexOf(String(seen[index - 1])))).toBe(true);
    expect(statuses.every((answer) => answer.body.request_id === id)).toBe(true);

    const result = await falCall<{ images: { url: string; width: number; height: number; content_type: string }[]; seed: number; timings: unknown; has_nsfw_concepts: boolean[]; prompt: string }>(
      submitted.body.response_url,
      { key: KEY },
    );
    expect(result.status).toBe(200);
    expect(result.headers.get('x-fal-request-id')).toBe(id);
    expect(result.body).toMatchObject({ prompt: 'a red fox', has_nsfw_concepts: [false, false, false], timings: { inference: expect.any(Number) as number } });
    expect(Number.isInteger(result.body.seed)).toBe(true);
    expect(result.body.images).toEqual(
      [0, 1, 2].map((index) => ({ url: `${sandbox.url}/media/${id}/${index}.png`, width: 1024, height: 576, content_type: 'image/png' })),
    );
    const pictures = await Promise.all(
      result.body.images.map(async (image) => {
        const response = await fetch(image.url);
        expect(response.headers.get('content-type')).toBe('image/png');
        return Buffer.from(await response.arrayBuffer());
      }),
    );
    for (const bytes of pictures) {
      const png = decodePng(bytes);
      expect([png.width, png.height]).toEqual([1024, 576]);
      expect(png.chunks.every((chunk) => chunk.crcValid)).toBe(true);
    }
    expect(pictures[0]?.equals(pictures[1] ?? Buffer.alloc(0))).toBe(false);
    const again = Buffer.from(await (await fetch(result.body.images[0]?.url ?? '')).arrayBuffer());
    expect(again.equals(pictures[0] ?? Buffer.alloc(0))).toBe(true);
  });

  it.each(Object.entries(IMAGE_SIZES))('makes %s images of its preset size', async (preset, size) => {
    const submitted = await falSubmit(sandbox.url, { prompt: 'sizes', image_size: preset, num_images: 1 });
    await pollUntilCompleted(submitted.body.status_url);
    const result = await falCall<{ images: { url: string; width: number; height: number }[] }>(submitted.body.response_url);
    const image = result.body.images[0];
    expect(image).toMatchObject(size);
    const png = decodePng(Buffer.from(await (await fetch(image?.url ?? '')).arrayBuffer()));
    expect({ width: png.width, height: png.height }).toEqual(size);
  });

  it('refuses bad input with 422 {detail:[…]} naming fields and rules, never the submitted values, and creates no job', async () => {
    const before = (await sandbox.submissions()).length;
    const marker = 'ECHO-MARKER-77';
    const cases: [unknown, string[][]][] = [
      [{ image_size: 'square' }, [['body', 'prompt']]],
      [{ prompt: '', image_size: marker, num_images: 9 }, [['body', 'prompt'], ['body', 'image_size'], ['body', 'num_images']]],
      [{ prompt: marker, num_images: 0 }, [['body', 'num_images']]],
      [{ prompt: marker, num_images: marker }, [['body', 'num_images']]],
      [{ prompt: marker, image_size: { width: 100, height: 100 } }, [['body', 'image_size']]],
      [[marker], [['body']]],
      [`{"prompt": "${marker}"`, [['body']]],
    ];
    for (const [body, locations] of cases) {
      const answer = await falSubmit(sandbox.url, body);
      expect(answer.status).toBe(422);
      const detail = (answer.body as unknown as { detail: { loc: string[]; msg: string; type: string }[] }).detail;
      expect(detail.map((entry) => entry.loc)).toEqual(locations);
      expect(detail.every((entry) => typeof entry.msg === 'string' && typeof entry.type === 'string' && Object.keys(entry).length === 3)).toBe(true);
      expect(answer.text).not.toContain(marker);
    }
    const records = (await sandbox.submissions()).slice(before);
    expect(records.map((record) => [record.outcome, record.request_id, record.image_size, record.num_images])).toEqual(cases.map(() => ['invalid', null, null, null]));
    expect(JSON.stringify(records) + sandbox.stderrLines().join('\n')).not.toContain(marker);
  });

  it('accepts defaults and unknown fields like fal (landscape_4_3, one image)', async () => {
    const submitted = await falSubmit(sandbox.url, { prompt: 'defaults', enable_safety_checker: true, num_inference_steps: 4 });
    expect(submitted.status).toBe(200);
    const record = (await sandbox.submissions()).at(-1);
    expect(record).toMatchObject({ request_id: submitted.body.request_id, image_size: 'landscape_4_3', num_images: 1, outcome: 'accepted' });
  });

  it('records every submit with request id, model, size, count, key presence and time; never the key or the prompt', async () => {
    const before = (await sandbox.submissions()).length;
    const prompt = 'PROMPT-MARKER-31';
    const accepted = await falSubmit(sandbox.url, { prompt, image_size: 'square_hd', num_images: 4 }, { key: KEY, model: 'fal-ai/flux-pro/v1.1' });
    const unauthorized = await falSubmit(sandbox.url, { prompt, image_size: 'square', num_images: 1 }, { key: null });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.text).not.toContain(prompt);
    const records = (await sandbox.submissions()).slice(before);
    expect(records).toEqual([
      {
        sequence: before + 1,
        received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) as string,
        request_id: accepted.body.request_id,
        model: 'fal-ai/flux-pro/v1.1',
        image_size: 'square_hd',
        num_images: 4,
        seed: null,
        key_present: true,
        outcome: 'accepted',
        faults: [],
      },
      expect.objectContaining({ sequence: before + 2, request_id: null, key_present: false, outcome: 'unauthorized' }) as unknown,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const everything = JSON.stringify(await sandbox.submissions()) + sandbox.stderrLines().join('\n');
    expect(everything).not.toContain(KEY);
    expect(everything).not.toContain(prompt);
  });

  it('answers health and version on the control API without logging them', async () => {
    const before = sandbox.events().length;
    expect(await (await fetch(`${sandbox.url}/__sandbox/health`)).json()).toEqual({ status: 'ok' });
    const version = (await (await fetch(`${sandbox.url}/__sandbox/version`)).json()) as Record<string, unknown>;
    const cli = JSON.parse((await runLexec(['version', '--json'])).stdout) as { result: Record<string, unknown> };
    expect(version).toEqual(cli.result);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sandbox.events().slice(before).filter((event) => String(event.route).match(/health|version/))).toEqual([]);
  });
});

describe('provider sandbox serve: the command', () => {
  let dir: string;
  const running: SandboxProcess[] = [];

  beforeEach(async () => {
    dir = await makeTempDir('lexec-sandbox-');
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((sandbox) => sandbox.stop('SIGKILL')));
    await removeDir(dir);
  });

  async function start(args: string[] = []): Promise<SandboxProcess> {
    const sandbox = await spawnSandbox({ args });
    running.push(sandbox);
    return sandbox;
  }

  it('logs sandbox_started with its port, and stops gracefully on SIGTERM and SIGINT, even with an answer withheld', async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const sandbox = await start();
      expect(sandbox.events().find((event) => event.event === 'sandbox_started')).toMatchObject({
        service: 'sandbox-provider',
        host: '127.0.0.1',
        port: sandbox.port,
        origin: sandbox.url,
        complete_after_ms: 40,
      });
      await sandbox.setFaults([{ kind: 'hang_submit' }]);
      const hanging = falSubmit(sandbox.url, { prompt: 'wait' }).catch((error: unknown) => error);
      await expect.poll(async () => (await sandbox.submissions()).length).toBe(1);
      const stoppedAt = Date.now();
      expect(await sandbox.stop(signal)).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(4_000);
      expect(await hanging).toBeInstanceOf(Error);
      expect(sandbox.events().map((event) => event.event)).toEqual(expect.arrayContaining(['sandbox_stopping', 'sandbox_stopped']));
      expect(sandbox.stdoutLines()).toEqual([`sandbox provider stopped (${signal}; 1 submission received)`]);
      const withheld = sandbox.events().find((event) => event.route === 'POST /{model}');
      expect(withheld).toMatchObject({ answered: false, status: null });
    }
  });

  it('keeps its state in memory only; --submissions-log keeps counting across a restart', async () => {
    const log = join(dir, 'submissions.jsonl');
    // Restarted on its port below: a port of this worker's own, not one the kernel gave out (free-ports.ts).
    const [port = 0] = await freePorts(1);
    const first = await start(['--submissions-log', log, '--port', String(port)]);
    const accepted = await falSubmit(first.url, { prompt: 'one' });
    await first.setFaults([{ kind: 'drop_after_receipt' }]);
    await expect(falSubmit(first.url, { prompt: 'two' })).rejects.toThrow();
    expect(await first.stop('SIGKILL')).not.toBe(0);

    const second = await start(['--submissions-log', log, '--port', String(first.port)]);
    expect(await second.submissions()).toEqual([]);
    const forgotten = await falCall(accepted.body.status_url);
    expect(forgotten.status).toBe(404);
    await falSubmit(second.url, { prompt: 'three' });
    const lines = (await readFile(log, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.outcome)).toEqual(['accepted', 'dropped', 'accepted']);
    expect(lines[0]?.request_id).toBe(accepted.body.request_id);
    expect(lines[1]?.request_id).toEqual(expect.stringMatching(new RegExp(`^${UUID}$`)));
    expect(await second.submissions()).toHaveLength(1);
  });

  it('applies --complete-after-ms, --latency-ms and --faults-file from the start', async () => {
    const faultsFile = join(dir, 'faults.json');
    await writeFile(faultsFile, JSON.stringify({ faults: [{ kind: 'http_error', route: 'submit', status: 503, times: 1 }] }));
    const sandbox = await start(['--complete-after-ms', '1500', '--latency-ms', '150', '--faults-file', faultsFile]);
    expect((await sandbox.faults()).map((fault) => [fault.kind, fault.remaining])).toEqual([
      ['latency', null],
      ['http_error', 1],
    ]);
    const startedAt = Date.now();
    expect((await falSubmit(sandbox.url, { prompt: 'x' })).status).toBe(503);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(140);
    const submitted = await falSubmit(sandbox.url, { prompt: 'x' });
    expect(submitted.status).toBe(200);
    expect((await falCall(submitted.body.status_url)).body.status).not.toBe('COMPLETED');
    const seen = (await pollUntilCompleted(submitted.body.status_url)).map((answer) => answer.body.status);
    expect(seen).toContain('COMPLETED');
    expect(new Set(seen).size).toBeGreaterThanOrEqual(2);
  });

  it('refuses a non-loopback host, bad numbers and relative paths as usage errors (exit 2) without echoing them', async () => {
    for (const args of [
      ['--host', '0.0.0.0'],
      ['--host', '192.168.1.20'],
      ['--port', '70000'],
      ['--port', 'SECRET-LIKE-VALUE'],
      ['--complete-after-ms', '-1'],
      ['--latency-ms', '1.5'],
      ['--submissions-log', 'relative.jsonl'],
      ['--faults-file', 'faults.json'],
    ]) {
      const run = await runLexec(['provider', 'sandbox', 'serve', ...args, '--json']);
      expect(run.exitCode, args.join(' ')).toBe(2);
      expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, error: { kind: 'usage', code: 'invalid_flag_value' } });
      expect(run.stdout + run.stderr).not.toContain(args[1] === '0.0.0.0' ? '0.0.0.0' : (args[1] ?? ''));
    }
  });

  it('reports an invalid faults file with field paths, and a taken port, as failures (exit 1)', async () => {
    const faultsFile = join(dir, 'faults.json');
    await writeFile(faultsFile, JSON.stringify({ faults: [{ kind: 'http_error', route: 'everywhere' }, { kind: 'teleport' }] }));
    const bad = await runLexec(['provider', 'sandbox', 'serve', '--faults-file', faultsFile, '--json']);
    expect(bad.exitCode).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ error: { code: 'faults_invalid', issues: [{ path: 'faults[0].route' }, { path: 'faults[1].kind' }] } });

    const sandbox = await start();
    const taken = await runLexec(['provider', 'sandbox', 'serve', '--port', String(sandbox.port), '--json']);
    expect(taken.exitCode).toBe(1);
    expect(JSON.parse(taken.stdout)).toMatchObject({ error: { code: 'listen_failed' } });
  });

  it('listens on ::1 with a bracketed origin', async () => {
    const sandbox = await start(['--host', '::1']);
    expect(sandbox.url).toBe(`http://[::1]:${sandbox.port}`);
    const submitted = await falSubmit(sandbox.url, { prompt: 'v6' });
    expect(submitted.body.status_url.startsWith(`http://[::1]:${sandbox.port}/`)).toBe(true);
  });
});

describe('sandbox provider process: jobs that survive a restart (--jobs-file)', () => {
  let dir: string;
  const running: SandboxProcess[] = [];
  beforeEach(async () => {
    dir = await makeTempDir('lexec-sandbox-jobs-');
  });
  afterEach(async () => {
    for (const sandbox of running.splice(0)) await sandbox.stop('SIGKILL');
    await removeDir(dir);
  });

  it('a SIGKILLed sandbox started again on the same port answers for its earlier requests: status on the same timeline, result, cancellation kept', async () => {
    const jobsFile = join(dir, 'jobs.jsonl');
    const [port = 0] = await freePorts(1);
    const first = await spawnSandbox({ args: ['--port', String(port), '--complete-after-ms', '1500', '--jobs-file', jobsFile] });
    running.push(first);
    const kept = await falSubmit(first.url, { prompt: 'kept across a restart', image_size: 'square', num_images: 2 });
    const cancelled = await falSubmit(first.url, { prompt: 'cancelled', image_size: 'square', num_images: 1 });
    expect((await falCall(cancelled.body.cancel_url, { method: 'PUT' })).status).toBe(202);
    expect(((await stat(jobsFile)).mode & 0o777).toString(8)).toBe('600');
    await first.stop('SIGKILL');

    const second = await spawnSandbox({ args: ['--port', String(first.port), '--complete-after-ms', '1500', '--jobs-file', jobsFile] });
    running.push(second);
    expect(second.events().find((event) => event.event === 'sandbox_started')).toMatchObject({ jobs_restored: 2 });
    // The same URLs work: the job is found, and finishes on its original timeline.
    const statuses = await pollUntilCompleted(kept.body.status_url, 10_000, 50);
    expect(statuses.at(-1)?.body).toMatchObject({ status: 'COMPLETED', request_id: kept.body.request_id });
    const result = await falCall<{ images: unknown[]; prompt: string }>(kept.body.response_url);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ prompt: 'kept across a restart' });
    expect(result.body.images).toHaveLength(2);
    expect((await falCall(cancelled.body.response_url)).body).toMatchObject({ detail: expect.any(String) as unknown });
    expect((await falCall(cancelled.body.status_url)).body).toMatchObject({ status: 'COMPLETED' });

    // Without the file the same ids are unknown, as with a provider that lost them.
    await second.stop('SIGKILL');
    const third = await spawnSandbox({ args: ['--port', String(first.port)] });
    running.push(third);
    expect((await falCall(kept.body.status_url)).status).toBe(404);
  }, 120_000);

  it('a torn last line (a crash mid-write) is ignored; any other unreadable line refuses the start', async () => {
    const jobsFile = join(dir, 'jobs.jsonl');
    await writeFile(jobsFile, '{"type":"job","request_id":"x"', { mode: 0o600 });
    const torn = await spawnSandbox({ args: ['--jobs-file', jobsFile] });
    running.push(torn);
    expect(torn.events().find((event) => event.event === 'sandbox_started')).toMatchObject({ jobs_restored: 0 });
    await torn.stop('SIGKILL');
    await writeFile(jobsFile, 'not a job\n{"type":"cancel","request_id":"x","at":1}\n', { mode: 0o600 });
    const refused = await runLexec(['provider', 'sandbox', 'serve', '--port', '0', '--jobs-file', jobsFile, '--json']);
    expect(refused.exitCode).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, error: { code: 'jobs_file_invalid' } });
  }, 120_000);
});
