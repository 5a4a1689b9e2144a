/**
 * Whether the executor admits new executions (spec §3 readiness). Reads never consult it.
 * Startup begins withdrawn; the dependency proofs restore it; shutdown withdraws it first.
 */
export interface Readiness {
  isReady(): boolean;
  reason(): string;
  withdraw(reason: string): void;
  restore(): void;
}

export function createReadiness(initialReason = 'starting'): Readiness {
  let ready = false;
  let why = initialReason;
  return {
    isReady: () => ready,
    reason: () => (ready ? 'ready' : why),
    withdraw(reason) {
      ready = false;
      why = reason;
    },
    restore() {
      ready = true;
    },
  };
}
