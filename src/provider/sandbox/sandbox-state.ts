import type { ImageSizePreset } from '../image-sizes.js';

/*
 * What the sandbox remembers: its queue requests ("jobs") and the submission log. In memory,
 * plus two optional files that survive a restart: the jobs file (`--jobs-file`, job-journal.ts:
 * a restarted sandbox still answers for its earlier requests, as a remote provider would) and
 * the submissions file (`--submissions-log`). Without a jobs file an old request id answers 404,
 * like a provider that lost it.
 */

export type QueueStatus = 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED';

/** Every URL a job's answers carry, fixed at submit (a `foreign_host` fault changes one). */
export interface JobUrls {
  readonly status_url: string;
  readonly response_url: string;
  readonly cancel_url: string;
  /** Origin of the image URLs in the result. */
  readonly image_origin: string;
}

export interface Job {
  readonly requestId: string;
  readonly model: string;
  readonly prompt: string;
  readonly imageSize: ImageSizePreset;
  readonly numImages: number;
  readonly seed: number;
  readonly submittedAt: number;
  readonly completeAfterMs: number;
  readonly urls: JobUrls;
  /** How many images the result lists (fewer than asked under a `fewer_images` fault). */
  readonly imagesReturned: number;
  /** Set by a `complete_with_error` fault: the job ends COMPLETED with this error. */
  readonly failure: { readonly error: string; readonly error_type: string } | null;
  /** Set by a `never_complete` fault: the job stays IN_PROGRESS forever. */
  readonly neverCompletes: boolean;
  /** When a cancellation was accepted while the job was still queued. */
  cancelledAt: number | null;
}

/** The job's status at `now`: queued for the first half of its delay, running for the second. */
export function jobStatus(job: Job, now: number): QueueStatus {
  if (job.cancelledAt !== null) return 'COMPLETED';
  const elapsed = now - job.submittedAt;
  if (elapsed < job.completeAfterMs / 2) return 'IN_QUEUE';
  if (job.neverCompletes || elapsed < job.completeAfterMs) return 'IN_PROGRESS';
  return 'COMPLETED';
}

/** The error a finished job reports, or null when it succeeded. */
export function jobError(job: Job): { readonly error: string; readonly error_type: string } | null {
  if (job.cancelledAt !== null) return { error: 'Request was cancelled before it started.', error_type: 'request_cancelled' };
  return job.failure;
}

/** What became of one received `POST /{model}`. */
export type SubmissionOutcome =
  | 'accepted' // answered 200 with the queue URLs
  | 'dropped' // job created, connection destroyed without an answer (drop_after_receipt)
  | 'hung' // job created, answer withheld until the client gives up (hang_submit)
  | 'http_error' // answered 5xx (http_error on submit); no job created
  | 'invalid' // answered 422; no job
  | 'unauthorized' // answered 401; no job
  | 'too_large'; // answered 413; no job

/** One line of the submission log. Never holds the key or the prompt. */
export interface SubmissionRecord {
  readonly sequence: number;
  readonly received_at: string;
  /** The queue request id, when a job was created; null otherwise. */
  readonly request_id: string | null;
  readonly model: string;
  /** Only valid values are recorded (null otherwise): submitted garbage is never echoed. */
  readonly image_size: ImageSizePreset | null;
  readonly num_images: number | null;
  /** The seed the caller chose (the correlation value lexec's executor sends); null when none or invalid. */
  readonly seed: number | null;
  readonly key_present: boolean;
  readonly outcome: SubmissionOutcome;
  /** Kinds of the faults that shaped this submission or its job. */
  readonly faults: readonly string[];
}

export interface SandboxState {
  addJob(job: Job): void;
  /** Cancels a job still queued (recorded in the jobs file, when there is one). */
  cancelJob(job: Job, at: number): void;
  job(requestId: string): Job | undefined;
  /** Jobs queued ahead of `job` at `now` (its fal `queue_position`). */
  queuePosition(job: Job, now: number): number;
  /** Appends to the log (and to the submissions file, when there is one) and returns the record. */
  recordSubmission(record: Omit<SubmissionRecord, 'sequence'>): SubmissionRecord;
  submissions(): readonly SubmissionRecord[];
}

/** Where jobs are kept across restarts (job-journal.ts). */
export interface JobStore {
  readonly restored: readonly Job[];
  recordJob(job: Job): void;
  recordCancel(requestId: string, at: number): void;
}

/**
 * `appendLine` persists one submission line; it must finish before the answer is decided.
 * `jobStore` restores earlier jobs and records new ones and their cancellations.
 */
export function createSandboxState(appendLine?: (line: string) => void, jobStore?: JobStore): SandboxState {
  const jobs = new Map<string, Job>((jobStore?.restored ?? []).map((job) => [job.requestId, job]));
  const log: SubmissionRecord[] = [];
  return {
    addJob(job) {
      jobStore?.recordJob(job);
      jobs.set(job.requestId, job);
    },
    cancelJob(job, at) {
      jobStore?.recordCancel(job.requestId, at);
      job.cancelledAt = at;
    },
    job(requestId) {
      return jobs.get(requestId);
    },
    queuePosition(job, now) {
      let ahead = 0;
      for (const other of jobs.values()) {
        if (other.submittedAt < job.submittedAt && jobStatus(other, now) === 'IN_QUEUE') ahead += 1;
      }
      return ahead;
    },
    recordSubmission(fields) {
      // Fixed key order, so file lines and API answers read the same way.
      const record: SubmissionRecord = {
        sequence: log.length + 1,
        received_at: fields.received_at,
        request_id: fields.request_id,
        model: fields.model,
        image_size: fields.image_size,
        num_images: fields.num_images,
        seed: fields.seed,
        key_present: fields.key_present,
        outcome: fields.outcome,
        faults: fields.faults,
      };
      log.push(record);
      appendLine?.(`${JSON.stringify(record)}\n`);
      return record;
    },
    submissions() {
      return log;
    },
  };
}
