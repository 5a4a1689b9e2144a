import { z } from 'zod';

/*
 * Fault injection for the sandbox provider (docs/sandbox-provider.md, "Faults"). A fault set is
 * a list; each fault is one-shot (`times`: the next N requests it applies to) or persistent (no
 * `times`). Every fault acts after the request was fully received: a submit is always logged
 * before any fault decides what its answer (if any) will be.
 */

/** The protocol routes a fault can target. The control API (`/__sandbox/…`) is never faulted. */
export const SANDBOX_ROUTES = ['submit', 'status', 'result', 'cancel', 'media'] as const;
export type SandboxRoute = (typeof SANDBOX_ROUTES)[number];

/** The URL fields of an answer that a `foreign_host` fault can move to another origin. */
export const FOREIGN_HOST_FIELDS = ['status_url', 'response_url', 'cancel_url', 'image_url'] as const;
export type ForeignHostField = (typeof FOREIGN_HOST_FIELDS)[number];

const times = z
  .number({ error: 'must be a whole number of requests (omit it for a persistent fault)' })
  .int('must be a whole number of requests')
  .min(1, 'must be at least 1 (omit it for a persistent fault)')
  .max(1_000_000, 'must be at most 1000000')
  .optional();
const route = z.enum(SANDBOX_ROUTES, { error: `must be one of ${SANDBOX_ROUTES.join(', ')}` });
const origin = z
  .string({ error: 'must be an http:// or https:// origin' })
  .regex(/^https?:\/\/[a-z0-9.-]+(?::[0-9]{1,5})?$/, 'must be an http:// or https:// origin (scheme, host, optional port; no path)');

export const faultSchema = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({
      kind: z.literal('latency'),
      ms: z.number({ error: 'must be milliseconds' }).int('must be whole milliseconds').min(0).max(600_000, 'must be at most 600000'),
      routes: z.array(route).min(1, 'must name at least one route (omit it for every route)').optional(),
      times,
    }),
    z.strictObject({
      kind: z.literal('http_error'),
      route,
      status: z.number({ error: 'must be an HTTP status' }).int().min(500, 'must be a 5xx status').max(599, 'must be a 5xx status').default(500),
      times,
    }),
    z.strictObject({ kind: z.literal('unprocessable'), times }),
    z.strictObject({ kind: z.literal('drop_after_receipt'), times }),
    z.strictObject({ kind: z.literal('hang_submit'), times }),
    z.strictObject({ kind: z.literal('complete_with_error'), times }),
    z.strictObject({ kind: z.literal('never_complete'), times }),
    z.strictObject({
      kind: z.literal('fewer_images'),
      omit: z.number({ error: 'must be a number of images' }).int().min(1, 'must be at least 1').max(4, 'must be at most 4').default(1),
      times,
    }),
    z.strictObject({
      kind: z.literal('foreign_host'),
      field: z.enum(FOREIGN_HOST_FIELDS, { error: `must be one of ${FOREIGN_HOST_FIELDS.join(', ')}` }).default('status_url'),
      origin: origin.default('http://evil.example'),
      times,
    }),
    z.strictObject({
      kind: z.literal('mismatched_request_id'),
      route: z.enum(['status', 'result'], { error: 'must be status or result' }),
      times,
    }),
  ],
  { error: 'must be a fault with a known kind' },
);
export type Fault = z.output<typeof faultSchema>;
export type FaultKind = Fault['kind'];

/** Body of `PUT /__sandbox/faults` and content of `--faults-file`. */
export const faultSetSchema = z.strictObject({ faults: z.array(faultSchema).max(64, 'must list at most 64 faults') });

/** A fault as the control API shows it: `remaining` is null for a persistent fault. */
export type FaultView = Fault & { readonly remaining: number | null };

export interface FaultBook {
  /** Replaces every fault with `faults`. */
  replace(faults: readonly Fault[]): void;
  clear(): void;
  list(): FaultView[];
  /**
   * The first fault of `kind` that matches `applies`, used up once (a one-shot fault disappears
   * when its count reaches 0); undefined when none applies.
   */
  take<K extends FaultKind>(kind: K, applies?: (fault: Extract<Fault, { kind: K }>) => boolean): Extract<Fault, { kind: K }> | undefined;
}

/** The sandbox's current faults, in the order they were set. State lives only in memory. */
export function createFaultBook(initial: readonly Fault[] = []): FaultBook {
  let entries: { fault: Fault; remaining: number | null }[] = [];
  const book: FaultBook = {
    replace(faults) {
      entries = faults.map((fault) => ({ fault, remaining: fault.times ?? null }));
    },
    clear() {
      entries = [];
    },
    list() {
      return entries.map(({ fault, remaining }) => ({ ...fault, remaining }));
    },
    take(kind, applies) {
      type Wanted = Extract<Fault, { kind: typeof kind }>;
      const entry = entries.find(({ fault }) => fault.kind === kind && (applies === undefined || applies(fault as Wanted)));
      if (entry === undefined) return undefined;
      if (entry.remaining !== null) {
        entry.remaining -= 1;
        if (entry.remaining === 0) entries = entries.filter((other) => other !== entry);
      }
      return entry.fault as Wanted;
    },
  };
  book.replace(initial);
  return book;
}
