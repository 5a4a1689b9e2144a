import { stripVTControlCharacters } from 'node:util';
import { z } from 'zod';
import type { LogComponent } from '../../process/log-files.js';

/*
 * Pure handling of managed log lines (docs/stack-logs.md): what a line is, which execution it
 * belongs to, how the components' lines are merged by time, and which lines are admission
 * rejections. No file access here; the readers live in log-chain.ts, read-lines-backward.ts
 * and follow-log.ts.
 */

/** One log line as read: payload text free of terminal control sequences, plus what parsing found. */
export interface LogLine {
  readonly component: LogComponent;
  readonly text: string;
  /** Epoch milliseconds from the JSON `time` field (pino writes ISO strings here, epoch ms by default). */
  readonly time: number | null;
  readonly level: number | null;
  /** The line's JSON object, when it is one; every key and string in it is sanitised like `text`. */
  readonly parsed: Readonly<Record<string, unknown>> | null;
}

// Control characters other than tab: a log payload may carry them (a child could print anything),
// and printed raw they would recolour, move the cursor or rewrite the operator's terminal.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

// A lexec capability (src/credentials/capability.ts). The servers never log one; masking anything
// shaped like one here is a second line of defence for every reader of the logs.
const CAPABILITY = /lexec_[a-z]+_[A-Za-z0-9_-]{43}/g;

/**
 * A payload made safe to print and to put into JSON: ANSI/VT sequences and other controls
 * removed, anything shaped like a capability replaced by `[capability hidden]`. The one
 * sanitiser of every log reader (`stack logs`, and the lines a failed start quotes).
 */
export function sanitizePayload(text: string): string {
  return stripVTControlCharacters(text).replace(CONTROL_CHARACTERS, '').replace(CAPABILITY, '[capability hidden]');
}

function sanitizeValue(value: unknown): unknown {
  if (typeof value === 'string') return sanitizePayload(value);
  if (Array.isArray(value)) return value.map(sanitizeValue);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [sanitizePayload(key), sanitizeValue(inner)]));
  }
  return value;
}

function timeOf(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? null : ms;
  }
  return null;
}

/** Reads one raw line of a component's log. Lines that are not a JSON object stay plain text. */
export function parseLogLine(component: LogComponent, raw: string): LogLine {
  const text = sanitizePayload(raw);
  let document: unknown = null;
  if (text.startsWith('{')) {
    try {
      document = JSON.parse(text);
    } catch {
      document = null;
    }
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return { component, text, time: null, level: null, parsed: null };
  }
  const parsed = sanitizeValue(document) as Record<string, unknown>;
  const level = typeof parsed.level === 'number' ? parsed.level : null;
  return { component, text, time: timeOf(parsed.time), level, parsed };
}

/** Executor log lines name their execution in `execution_id` (src/executor/execution-runner.ts, serve-executor.ts). */
export function belongsToExecution(line: LogLine, executionId: string): boolean {
  return line.parsed?.execution_id === executionId;
}

/** An execution id as the executor issues it (src/executor/domain/execution-states.ts). */
export const EXECUTION_ID = /^exe_[0-9a-f]{32}$/;

/**
 * Merges the components' lines into one sequence by time. Each component's own order is kept
 * whatever its timestamps say (this is a merge, not a sort); a line without a time takes the
 * time of the line before it in its component (or, at the start, of the first timed line after
 * it; for a component whose lines have no time at all, `timesBefore`: the time of its last timed
 * line before them, when known), so plain lines travel with their neighbours. Ties go to the
 * component listed first.
 */
export function mergeByTime(sequences: readonly (readonly LogLine[])[], timesBefore: readonly (number | null)[] = []): LogLine[] {
  const keyed = sequences.map((lines, index) => {
    const firstTime = lines.find((line) => line.time !== null)?.time ?? timesBefore[index] ?? Number.NEGATIVE_INFINITY;
    let current = firstTime;
    return lines.map((line) => {
      if (line.time !== null) current = line.time;
      return { line, key: current };
    });
  });
  const heads = keyed.map(() => 0);
  const merged: LogLine[] = [];
  for (;;) {
    let best = -1;
    for (let index = 0; index < keyed.length; index += 1) {
      const candidate = keyed[index]?.[heads[index] ?? 0];
      if (candidate === undefined) continue;
      const bestEntry = best === -1 ? undefined : keyed[best]?.[heads[best] ?? 0];
      if (bestEntry === undefined || candidate.key < bestEntry.key) best = index;
    }
    if (best === -1) return merged;
    const entry = keyed[best]?.[heads[best] ?? 0];
    if (entry !== undefined) merged.push(entry.line);
    heads[best] = (heads[best] ?? 0) + 1;
  }
}

/** Marker searched for before a line is parsed, so a scan of every retained file stays cheap. */
export const ADMISSION_REJECTED_EVENT = 'executor_admission_rejected';

/** The allowlisted fields of spec §6 `executor_admission_rejected`; pino's own fields are ignored. */
const admissionRejectedSchema = z.object({
  event: z.literal(ADMISSION_REJECTED_EVENT),
  route: z.string().max(100),
  route_version: z.number().int(),
  status: z.number().int(),
  code: z.string().max(100),
  reason_code: z.string().max(100),
  fields: z.array(z.string().max(200)).max(50),
});

/** One distinct admission rejection found in the retained logs, with when and how often it was logged. */
export interface AdmissionRejection {
  readonly route: string;
  readonly route_version: number;
  readonly status: number;
  readonly code: string;
  readonly reason_code: string;
  readonly fields: readonly string[];
  /** ISO times of the oldest and newest line logging it (null when the lines carry no time). */
  readonly first_seen: string | null;
  readonly last_seen: string | null;
  /** How many times it was logged; the executor logs each pair once per process start. */
  readonly occurrences: number;
}

/** Most distinct rejections kept; the executor's allowlist has a handful, so more means a damaged log. */
export const MAX_ADMISSION_REJECTIONS = 50;

/**
 * Collects admission rejections from lines seen in any order, grouped by what was rejected.
 * Memory is bounded by MAX_ADMISSION_REJECTIONS whatever the log holds.
 */
export function createAdmissionRejectionCollector() {
  const byKey = new Map<string, { rejection: Omit<AdmissionRejection, 'first_seen' | 'last_seen' | 'occurrences'>; first: number | null; last: number | null; occurrences: number }>();
  return {
    add(line: LogLine): void {
      const parsed = admissionRejectedSchema.safeParse(line.parsed);
      if (!parsed.success) return;
      const { route, route_version, status, code, reason_code, fields } = parsed.data;
      const rejection = { route, route_version, status, code, reason_code, fields };
      const key = JSON.stringify([rejection.route, rejection.route_version, rejection.status, rejection.code, rejection.reason_code, rejection.fields]);
      const known = byKey.get(key);
      if (known === undefined) {
        if (byKey.size >= MAX_ADMISSION_REJECTIONS) return;
        byKey.set(key, { rejection, first: line.time, last: line.time, occurrences: 1 });
        return;
      }
      known.occurrences += 1;
      if (line.time !== null) {
        known.first = known.first === null ? line.time : Math.min(known.first, line.time);
        known.last = known.last === null ? line.time : Math.max(known.last, line.time);
      }
    },
    /** Oldest first by when each was last logged, like log lines. */
    result(): AdmissionRejection[] {
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
      return [...byKey.values()]
        .sort((a, b) => (a.last ?? Number.NEGATIVE_INFINITY) - (b.last ?? Number.NEGATIVE_INFINITY))
        .map((entry) => ({ ...entry.rejection, first_seen: iso(entry.first), last_seen: iso(entry.last), occurrences: entry.occurrences }));
    },
  };
}
