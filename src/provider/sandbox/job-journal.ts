import { closeSync, constants, openSync, readFileSync, writeSync } from 'node:fs';
import { z } from 'zod';
import { IMAGE_SIZE_PRESETS } from '../image-sizes.js';
import { errorCode, UserError } from '../../errors.js';
import { tightenOpenFile } from '../../storage/private-state.js';
import type { Job } from './sandbox-state.js';

/*
 * The sandbox's jobs on disk (`--jobs-file`), so that a restarted sandbox still knows its queue
 * requests — as a remote provider would: a job submitted before the restart keeps its timeline
 * (its status is derived from the clock and its submit time) and its result. One JSON line per
 * event, written before the answer that depends on it: `job` (created) and `cancel`. Written,
 * not fsynced: the file outlives the sandbox process, which is what the tests and a local stack need.
 * The file holds prompts, so it is created 0600. A torn last line (a crash mid-write) is
 * ignored; any other unreadable line refuses the start.
 */

const jobLine = z.object({
  type: z.literal('job'),
  request_id: z.string().min(1).max(128),
  model: z.string().min(1).max(256),
  prompt: z.string(),
  image_size: z.enum(IMAGE_SIZE_PRESETS),
  num_images: z.number().int().min(1).max(64),
  seed: z.number().int().min(0),
  submitted_at: z.number().int().min(0),
  complete_after_ms: z.number().int().min(0),
  urls: z.object({ status_url: z.string(), response_url: z.string(), cancel_url: z.string(), image_origin: z.string() }),
  images_returned: z.number().int().min(0),
  failure: z.object({ error: z.string(), error_type: z.string() }).nullable(),
  never_completes: z.boolean(),
});
const cancelLine = z.object({ type: z.literal('cancel'), request_id: z.string().min(1).max(128), at: z.number().int().min(0) });
const journalLine = z.discriminatedUnion('type', [jobLine, cancelLine]);

export interface JobJournal {
  /** The jobs recorded before this start, cancellations applied. */
  readonly restored: readonly Job[];
  recordJob(job: Job): void;
  recordCancel(requestId: string, at: number): void;
  close(): void;
}

function jobOf(line: z.output<typeof jobLine>): Job {
  return {
    requestId: line.request_id,
    model: line.model,
    prompt: line.prompt,
    imageSize: line.image_size,
    numImages: line.num_images,
    seed: line.seed,
    submittedAt: line.submitted_at,
    completeAfterMs: line.complete_after_ms,
    urls: line.urls,
    imagesReturned: line.images_returned,
    failure: line.failure,
    neverCompletes: line.never_completes,
    cancelledAt: null,
  };
}

function restore(path: string): Job[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw new UserError('jobs_file_unreadable', `The sandbox jobs file ${path} cannot be read (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check its permissions, or start without --jobs-file.',
    });
  }
  const lines = text.split('\n');
  const torn = !text.endsWith('\n') && text !== '';
  const jobs = new Map<string, Job>();
  for (const [index, raw] of lines.entries()) {
    if (raw === '') continue;
    if (torn && index === lines.length - 1) break;
    let parsed: z.output<typeof journalLine> | null;
    try {
      const result = journalLine.safeParse(JSON.parse(raw));
      parsed = result.success ? result.data : null;
    } catch {
      parsed = null;
    }
    if (parsed === null) {
      throw new UserError('jobs_file_invalid', `Line ${index + 1} of the sandbox jobs file ${path} is not a job record.`, {
        nextStep: 'Move the file away to start with no jobs (earlier requests then answer 404).',
      });
    }
    if (parsed.type === 'job') jobs.set(parsed.request_id, jobOf(parsed));
    else {
      const job = jobs.get(parsed.request_id);
      if (job !== undefined) job.cancelledAt = parsed.at;
    }
  }
  return [...jobs.values()];
}

/** Opens (creating 0600) the jobs file at `path`, reading back what an earlier run recorded. */
export function openJobJournal(path: string): JobJournal {
  const restored = restore(path);
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    // It holds prompts: a file an older release created 0644 becomes private too.
    tightenOpenFile(fd);
  } catch (error) {
    throw new UserError('jobs_file_unwritable', `The sandbox jobs file ${path} cannot be opened for appending (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check the directory exists and is writable, or start without --jobs-file.',
    });
  }
  const append = (line: unknown) => {
    writeSync(fd, `${JSON.stringify(line)}\n`);
  };
  return {
    restored,
    recordJob(job) {
      append({
        type: 'job',
        request_id: job.requestId,
        model: job.model,
        prompt: job.prompt,
        image_size: job.imageSize,
        num_images: job.numImages,
        seed: job.seed,
        submitted_at: job.submittedAt,
        complete_after_ms: job.completeAfterMs,
        urls: job.urls,
        images_returned: job.imagesReturned,
        failure: job.failure,
        never_completes: job.neverCompletes,
      });
    },
    recordCancel(requestId, at) {
      append({ type: 'cancel', request_id: requestId, at });
    },
    close() {
      closeSync(fd);
    },
  };
}
