import type { Logger } from 'pino';
import { readBuildInfo } from '../../build-info.js';
import type { RejectionSummaryTiming } from '../../http/rejection-summariser.js';
import { buildSandboxApp, type SandboxApp } from './sandbox-app.js';
import { createFaultBook, type Fault } from './sandbox-faults.js';
import { createSandboxState, type JobStore, type SandboxState } from './sandbox-state.js';

export interface ComposeSandboxOptions {
  /** The sandbox's own origin (`http://127.0.0.1:7420`), known once its server listens. */
  readonly origin: string;
  /** Milliseconds from submit to COMPLETED. */
  readonly completeAfterMs: number;
  /** Models that take no `seed` and refuse one (`--seedless-model`). */
  readonly seedlessModels?: readonly string[];
  /** Faults active from the start (`--latency-ms`, `--faults-file`). */
  readonly initialFaults?: readonly Fault[];
  /** Appends one line of the submissions log (`--submissions-log`); none when undefined. */
  readonly recordSubmission?: (line: string) => void;
  /** Keeps jobs across restarts (`--jobs-file`); in memory only when undefined. */
  readonly jobStore?: JobStore;
  readonly logger: Logger;
  /** The sandbox's clock (serve: Date.now; tests: one they move by hand). */
  readonly now?: () => number;
  /** How repeated rejections are collapsed in the log (serve: the system clock, 60 s; tests: a fake clock). */
  readonly rejectionSummary?: RejectionSummaryTiming;
}

/**
 * The sandbox provider's one composition root (STYLE.md habit 12), for `provider sandbox serve`
 * and the tests alike: its state (submissions), fault book and app. Nothing listens here.
 */
export function composeSandbox(options: ComposeSandboxOptions): { readonly app: SandboxApp; readonly state: SandboxState } {
  const state = createSandboxState(options.recordSubmission, options.jobStore);
  const app = buildSandboxApp({
    origin: options.origin,
    completeAfterMs: options.completeAfterMs,
    ...(options.seedlessModels === undefined ? {} : { seedlessModels: options.seedlessModels }),
    state,
    faults: createFaultBook(options.initialFaults ?? []),
    logger: options.logger,
    buildInfo: readBuildInfo(),
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.rejectionSummary === undefined ? {} : { rejectionSummary: options.rejectionSummary }),
  });
  return { app, state };
}
