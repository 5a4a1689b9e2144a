import { appIdOf } from '../fal-app-id.js';
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { IMAGE_SIZES } from '../image-sizes.js';
import { JSON_INVALID_DETAIL, parseSubmitBody, type ValidationDetail } from './fal-submit-body.js';
import { BODY_TOO_LARGE, decodeJson, readBody, sendBytes, sendJson } from './sandbox-http.js';
import { renderSandboxImage } from './sandbox-image.js';
import { FOREIGN_HOST_FIELDS, type FaultBook, type SandboxRoute } from './sandbox-faults.js';
import { jobError, jobStatus, type Job, type JobUrls, type SandboxState, type SubmissionRecord } from './sandbox-state.js';

/*
 * The fal queue protocol routes (docs/sandbox-provider.md): submit, status, result, cancel and
 * the media the result points at. Each request is checked, then faults decide its answer.
 */

export interface QueueContext {
  readonly origin: string;
  readonly completeAfterMs: number;
  /** Models that take no `seed` and refuse one (`--seedless-model`). */
  readonly seedlessModels: ReadonlySet<string>;
  readonly state: SandboxState;
  readonly faults: FaultBook;
  readonly logger: Logger;
  readonly now: () => number;
  readonly newRequestId: () => string;
  /** Waits `ms`; false when the client went away or the sandbox is closing (then do not answer). */
  readonly pause: (response: ServerResponse, ms: number) => Promise<boolean>;
  /** Withholds the answer until the client gives up or the sandbox closes. */
  readonly hang: (response: ServerResponse) => void;
}

/** fal's header carrying the queue request id on every per-request answer. */
const REQUEST_ID_HEADER = 'x-fal-request-id';

/** `Authorization: Key <key>` with a non-empty key. Only presence is ever kept, never the key. */
function hasKey(request: IncomingMessage): boolean {
  return /^Key \S/.test(request.headers.authorization ?? '');
}

/** Answers after the route's latency fault, if any; skips the answer if the client left meanwhile. */
async function answer(ctx: QueueContext, route: SandboxRoute, response: ServerResponse, send: () => void): Promise<void> {
  const latency = ctx.faults.take('latency', (fault) => fault.routes === undefined || fault.routes.includes(route));
  if (latency !== undefined && !(await ctx.pause(response, latency.ms))) return;
  send();
}

/** A 5xx from an `http_error` fault on `route`, answered; true when one applied. */
async function injectedError(ctx: QueueContext, route: SandboxRoute, response: ServerResponse): Promise<boolean> {
  const fault = ctx.faults.take('http_error', (candidate) => candidate.route === route);
  if (fault === undefined) return false;
  ctx.logger.info({ event: 'sandbox_fault_applied', kind: 'http_error', route, status: fault.status });
  await answer(ctx, route, response, () => {
    sendJson(response, fault.status, { detail: 'Internal Server Error' });
  });
  return true;
}

/** The seed of a request: the caller's, or one derived from the request id (stable per request). */
function seedFor(requestId: string, chosen: number | undefined): number {
  return chosen ?? createHash('sha256').update(requestId).digest().readUInt32BE(0);
}

export async function submit(ctx: QueueContext, request: IncomingMessage, response: ServerResponse, model: string): Promise<void> {
  const keyPresent = hasKey(request);
  const body = await readBody(request);
  const received = { received_at: new Date(ctx.now()).toISOString(), model, key_present: keyPresent };
  const record = (fields: Pick<SubmissionRecord, 'outcome'> & Partial<SubmissionRecord>): SubmissionRecord => {
    const entry = ctx.state.recordSubmission({ request_id: null, image_size: null, num_images: null, seed: null, faults: [], ...received, ...fields });
    ctx.logger.info({ event: 'sandbox_submission', sequence: entry.sequence, request_id: entry.request_id, model, outcome: entry.outcome, faults: entry.faults });
    return entry;
  };
  const refuse = (outcome: 'too_large' | 'unauthorized' | 'invalid', status: number, detail: string | ValidationDetail[]) => {
    record({ outcome });
    return answer(ctx, 'submit', response, () => {
      sendJson(response, status, { detail });
    });
  };
  if (body === BODY_TOO_LARGE) return refuse('too_large', 413, 'Request body too large');
  if (!keyPresent) return refuse('unauthorized', 401, 'Missing or malformed Authorization header: expected "Key <key>".');
  const decoded = decodeJson(body);
  if (!decoded.ok) return refuse('invalid', 422, JSON_INVALID_DETAIL);
  const parsed = parseSubmitBody(decoded.value, !ctx.seedlessModels.has(model));
  if (!parsed.ok) return refuse('invalid', 422, parsed.detail);
  const input = parsed.input;
  const asked = { image_size: input.imageSize, num_images: input.numImages, seed: input.seed ?? null };

  const httpError = ctx.faults.take('http_error', (fault) => fault.route === 'submit');
  if (httpError !== undefined) {
    record({ ...asked, outcome: 'http_error', faults: ['http_error'] });
    return answer(ctx, 'submit', response, () => {
      sendJson(response, httpError.status, { detail: 'Internal Server Error' });
    });
  }

  if (ctx.faults.take('unprocessable') !== undefined) {
    // The provider read the submission and refused it as fal refuses an input it cannot take.
    record({ ...asked, outcome: 'invalid', faults: ['unprocessable'] });
    return answer(ctx, 'submit', response, () => {
      sendJson(response, 422, { detail: [{ loc: ['body', 'prompt'], msg: 'Sandbox fault: the input was refused.', type: 'value_error' }] });
    });
  }

  // The job exists from here on: a dropped or withheld answer does not undo a received submit.
  const requestId = ctx.newRequestId();
  const applied: string[] = [];
  const failure = ctx.faults.take('complete_with_error');
  const neverCompletes = ctx.faults.take('never_complete') !== undefined;
  const fewer = ctx.faults.take('fewer_images');
  // As fal: status, result and cancel live under the app (`{owner}/{alias}`), without the model's sub-path.
  const base = `/${appIdOf(model)}/requests/${requestId}`;
  const urls: Record<keyof JobUrls, string> = {
    status_url: `${ctx.origin}${base}/status`,
    response_url: `${ctx.origin}${base}`,
    cancel_url: `${ctx.origin}${base}/cancel`,
    image_origin: ctx.origin,
  };
  for (const field of FOREIGN_HOST_FIELDS) {
    const foreign = ctx.faults.take('foreign_host', (fault) => fault.field === field);
    if (foreign === undefined) continue;
    applied.push(`foreign_host:${field}`);
    if (field === 'image_url') urls.image_origin = foreign.origin;
    else urls[field] = urls[field].replace(ctx.origin, foreign.origin);
  }
  if (failure !== undefined) applied.push('complete_with_error');
  if (neverCompletes) applied.push('never_complete');
  if (fewer !== undefined) applied.push('fewer_images');
  const job: Job = {
    requestId,
    model,
    prompt: input.prompt,
    imageSize: input.imageSize,
    numImages: input.numImages,
    seed: seedFor(requestId, input.seed),
    submittedAt: ctx.now(),
    completeAfterMs: ctx.completeAfterMs,
    urls,
    imagesReturned: Math.max(0, input.numImages - (fewer?.omit ?? 0)),
    failure: failure === undefined ? null : { error: 'Sandbox fault: the generation failed.', error_type: 'sandbox_generation_failed' },
    neverCompletes,
    cancelledAt: null,
  };
  ctx.state.addJob(job);

  if (ctx.faults.take('drop_after_receipt') !== undefined) {
    record({ ...asked, request_id: requestId, outcome: 'dropped', faults: [...applied, 'drop_after_receipt'] });
    response.socket?.destroy();
    return;
  }
  if (ctx.faults.take('hang_submit') !== undefined) {
    record({ ...asked, request_id: requestId, outcome: 'hung', faults: [...applied, 'hang_submit'] });
    ctx.hang(response);
    return;
  }
  record({ ...asked, request_id: requestId, outcome: 'accepted', faults: applied });
  await answer(ctx, 'submit', response, () => {
    sendJson(
      response,
      200,
      { status: 'IN_QUEUE', request_id: requestId, response_url: urls.response_url, status_url: urls.status_url, cancel_url: urls.cancel_url, queue_position: ctx.state.queuePosition(job, ctx.now()) },
      { [REQUEST_ID_HEADER]: requestId },
    );
  });
}

/**
 * Shared start of status, result and cancel: the key, then an injected 5xx, then the job (404
 * when unknown to this process or asked for under another model). Undefined when answered.
 */
async function findJob(ctx: QueueContext, route: SandboxRoute, request: IncomingMessage, response: ServerResponse, model: string, requestId: string) {
  if (!hasKey(request)) {
    await answer(ctx, route, response, () => {
      sendJson(response, 401, { detail: 'Missing or malformed Authorization header: expected "Key <key>".' });
    });
    return undefined;
  }
  if (await injectedError(ctx, route, response)) return undefined;
  const job = ctx.state.job(requestId);
  // The app id (fal's shape) or the full model id (accepted too, as older clients built it).
  if (job === undefined || (model !== job.model && model !== appIdOf(job.model))) {
    await answer(ctx, route, response, () => {
      sendJson(response, 404, route === 'cancel' ? { status: 'NOT_FOUND' } : { detail: 'Request not found' });
    });
    return undefined;
  }
  return job;
}

/** The id an answer reports: the job's own, or another one under a `mismatched_request_id` fault. */
function reportedId(ctx: QueueContext, route: 'status' | 'result', job: Job): string {
  if (ctx.faults.take('mismatched_request_id', (fault) => fault.route === route) === undefined) return job.requestId;
  ctx.logger.info({ event: 'sandbox_fault_applied', kind: 'mismatched_request_id', route });
  return ctx.newRequestId();
}

export async function status(ctx: QueueContext, request: IncomingMessage, response: ServerResponse, model: string, requestId: string, logs: boolean) {
  const job = await findJob(ctx, 'status', request, response, model, requestId);
  if (job === undefined) return;
  const now = ctx.now();
  const current = jobStatus(job, now);
  const id = reportedId(ctx, 'status', job);
  const body: Record<string, unknown> = { status: current, request_id: id, response_url: job.urls.response_url };
  if (current === 'IN_QUEUE') body.queue_position = ctx.state.queuePosition(job, now);
  if (logs) body.logs = [];
  if (current === 'COMPLETED') {
    body.metrics = { inference_time: job.completeAfterMs / 2000 };
    Object.assign(body, jobError(job) ?? {});
  }
  // fal answers 202 while the request is queued or running and 200 once it is completed.
  await answer(ctx, 'status', response, () => {
    sendJson(response, current === 'COMPLETED' ? 200 : 202, body, { [REQUEST_ID_HEADER]: id });
  });
}

export async function result(ctx: QueueContext, request: IncomingMessage, response: ServerResponse, model: string, requestId: string) {
  const job = await findJob(ctx, 'result', request, response, model, requestId);
  if (job === undefined) return;
  if (jobStatus(job, ctx.now()) !== 'COMPLETED') {
    await answer(ctx, 'result', response, () => {
      sendJson(response, 400, { detail: 'Request is still in progress' });
    });
    return;
  }
  const error = jobError(job);
  const id = reportedId(ctx, 'result', job);
  const { width, height } = IMAGE_SIZES[job.imageSize];
  const images = Array.from({ length: job.imagesReturned }, (_, index) => ({
    url: `${job.urls.image_origin}/media/${job.requestId}/${index}.png`,
    width,
    height,
    content_type: 'image/png',
  }));
  await answer(ctx, 'result', response, () => {
    if (error !== null) sendJson(response, 500, { detail: error.error, error_type: error.error_type }, { [REQUEST_ID_HEADER]: id });
    else
      sendJson(
        response,
        200,
        { images, timings: { inference: job.completeAfterMs / 2000 }, seed: job.seed, has_nsfw_concepts: images.map(() => false), prompt: job.prompt },
        { [REQUEST_ID_HEADER]: id },
      );
  });
}

export async function cancel(ctx: QueueContext, request: IncomingMessage, response: ServerResponse, model: string, requestId: string) {
  const job = await findJob(ctx, 'cancel', request, response, model, requestId);
  if (job === undefined) return;
  const current = jobStatus(job, ctx.now());
  // Queued work is removed (it ends COMPLETED with a cancellation error); running work goes on:
  // the sandbox's "model" ignores the signal, which is what a provider may legitimately do.
  if (current === 'IN_QUEUE') ctx.state.cancelJob(job, ctx.now());
  await answer(ctx, 'cancel', response, () => {
    if (current === 'COMPLETED') sendJson(response, 400, { status: 'ALREADY_COMPLETED' });
    else sendJson(response, 202, { status: 'CANCELLATION_REQUESTED' });
  });
}

export async function media(ctx: QueueContext, response: ServerResponse, requestId: string, index: number): Promise<void> {
  if (await injectedError(ctx, 'media', response)) return;
  const job = ctx.state.job(requestId);
  const available = job !== undefined && jobStatus(job, ctx.now()) === 'COMPLETED' && jobError(job) === null && index < job.imagesReturned;
  if (!available) {
    await answer(ctx, 'media', response, () => {
      sendJson(response, 404, { detail: 'Not Found' });
    });
    return;
  }
  const bytes = renderSandboxImage({ seed: job.seed, index, ...IMAGE_SIZES[job.imageSize] });
  await answer(ctx, 'media', response, () => {
    sendBytes(response, 200, 'image/png', bytes);
  });
}
