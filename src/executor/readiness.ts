/**
 * Whether the executor admits new executions (spec §3 readiness). Reads never consult it.
 * Startup begins withdrawn; the dependency proofs restore it; shutdown withdraws it first.
 */
export interface Readiness {
  isReady(): boolean;
  reason(): string;
  /** The directory a `disk_full` withdrawal names (`/readyz` shows it); undefined otherwise. */
  path(): string | undefined;
  withdraw(reason: string, path?: string): void;
  restore(): void;
}

export function createReadiness(initialReason = 'starting'): Readiness {
  let ready = false;
  let why = initialReason;
  let where: string | undefined;
  return {
    isReady: () => ready,
    reason: () => (ready ? 'ready' : why),
    path: () => (ready ? undefined : where),
    withdraw(reason, path) {
      ready = false;
      why = reason;
      where = path;
    },
    restore() {
      ready = true;
    },
  };
}
