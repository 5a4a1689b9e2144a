import { existsSync, readFileSync } from 'node:fs';

/*
 * What reached the provider, from either or both of the sandbox's files (each is judged on its
 * own when both are given; either missing on disk reads as empty):
 *   - `submissionsLog` (`--submissions-log`): one JSON line per received `POST /{model}`,
 *     `{"sequence":n,"request_id":string|null,"model":…,"seed":number|null,"outcome":…,…}`; a
 *     line with a null request id is a submission that created no job (5xx, refusal) and still
 *     reached it; `seed` is the one the caller sent (null when it sent none);
 *   - `sandboxJobsFile` (`--jobs-file`, what a `lexec stack` sandbox keeps in
 *     `state/sandbox-jobs.jsonl`): `{"type":"job","request_id":…,"model":…,"seed":…,…}` per
 *     submission that created a job (accepted, dropped or hung) — its seed is the caller's, or
 *     one the sandbox made up from the request id when the caller sent none — and
 *     `{"type":"cancel","request_id":…,"at":…}` lines, which are read and otherwise ignored. A
 *     torn last line (no newline: the sandbox died mid-write) is ignored, as the sandbox itself
 *     does; it never answered that submission.
 */

/** One submission the provider received, from one of its files. */
export interface Submission {
  readonly line: number;
  readonly request_id: string | null;
  readonly model: string;
  /** The seed the submission carried (the jobs file: or the sandbox's own); null when none is recorded. */
  readonly seed: number | null;
}

export interface SubmissionSource {
  readonly name: 'submissions log' | 'jobs file';
  readonly submissions: readonly Submission[];
  /** Line numbers that are not a record of this file's kind. */
  readonly unreadable: readonly number[];
}

function jsonLines(path: string): { text: string; number: number; last: boolean }[] {
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  return lines.map((line, index) => ({ text: line, number: index + 1, last: index === lines.length - 1 })).filter((line) => line.text.trim() !== '');
}

function parsed(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A seed as recorded: a whole number ≥ 0, else none. */
function seedOf(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** The `--submissions-log`: every line one received submission (sandbox-state.ts SubmissionRecord). */
export function readSubmissionsLog(path: string): SubmissionSource {
  const submissions: Submission[] = [];
  const unreadable: number[] = [];
  if (existsSync(path)) {
    for (const line of jsonLines(path)) {
      const value = parsed(line.text);
      const requestId = value?.request_id;
      if (
        value !== null &&
        typeof value.sequence === 'number' &&
        (requestId === null || (typeof requestId === 'string' && requestId !== '')) &&
        typeof value.model === 'string' &&
        typeof value.outcome === 'string'
      ) {
        submissions.push({ line: line.number, request_id: requestId, model: value.model, seed: seedOf(value.seed) });
      } else unreadable.push(line.number);
    }
  }
  return { name: 'submissions log', submissions, unreadable };
}

/** The `--jobs-file`: a `job` line per submission that created a job; `cancel` lines are not submissions. */
export function readJobsFile(path: string): SubmissionSource {
  const submissions: Submission[] = [];
  const unreadable: number[] = [];
  if (existsSync(path)) {
    const torn = !readFileSync(path, 'utf8').endsWith('\n');
    for (const line of jsonLines(path)) {
      if (torn && line.last) continue;
      const value = parsed(line.text);
      const requestId = value?.request_id;
      if (value?.type === 'job' && typeof requestId === 'string' && requestId !== '' && typeof value.model === 'string') {
        submissions.push({ line: line.number, request_id: requestId, model: value.model, seed: seedOf(value.seed) });
      } else if (!(value?.type === 'cancel' && typeof requestId === 'string' && requestId !== '')) unreadable.push(line.number);
    }
  }
  return { name: 'jobs file', submissions, unreadable };
}

/** The sources a check was given, the submissions log first. */
export function readSources(inputs: { readonly submissionsLog: string | null; readonly sandboxJobsFile?: string | null }): SubmissionSource[] {
  return [
    ...(inputs.submissionsLog === null ? [] : [readSubmissionsLog(inputs.submissionsLog)]),
    ...(inputs.sandboxJobsFile == null ? [] : [readJobsFile(inputs.sandboxJobsFile)]),
  ];
}
