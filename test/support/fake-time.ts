import type { TimerPort } from '../../src/executor/readiness-monitor.js';

/*
 * A manual clock and timer port: time moves only when a test calls advance(), timers fire in
 * due order (ties in the order they were set), and pending promise work is drained between them.
 * Nothing waits for real time.
 */

interface FakeTimer {
  readonly id: number;
  readonly due: number;
  readonly callback: () => void;
}

export interface FakeTime {
  readonly clock: { now(): number };
  readonly timers: TimerPort;
  /** Timers set and neither fired nor cleared. */
  pending(): number;
  /** Delays of the pending timers, relative to now, soonest first. */
  pendingDelays(): number[];
  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): Promise<void>;
  /** Lets already-resolved promise work run, without moving time. */
  settle(): Promise<void>;
}

/** Drains promise jobs: a few turns of the event loop's check phase, no real delay. */
async function drain(): Promise<void> {
  for (let turn = 0; turn < 5; turn += 1) {
    await new Promise<void>((resolve) => {
      setImmediate(resolve);
    });
  }
}

export function createFakeTime(start = 1_000_000): FakeTime {
  let now = start;
  let sequence = 0;
  const timers = new Map<number, FakeTimer>();

  const earliestDue = (limit: number): FakeTimer | undefined =>
    [...timers.values()].filter((timer) => timer.due <= limit).sort((a, b) => a.due - b.due || a.id - b.id)[0];

  return {
    clock: { now: () => now },
    timers: {
      setTimeout(callback, ms) {
        sequence += 1;
        timers.set(sequence, { id: sequence, due: now + Math.max(0, ms), callback });
        return sequence;
      },
      clearTimeout(handle) {
        timers.delete(handle as number);
      },
    },
    pending: () => timers.size,
    pendingDelays: () => [...timers.values()].map((timer) => timer.due - now).sort((a, b) => a - b),
    async advance(ms) {
      const target = now + ms;
      await drain();
      for (let timer = earliestDue(target); timer !== undefined; timer = earliestDue(target)) {
        now = timer.due;
        timers.delete(timer.id);
        timer.callback();
        await drain();
      }
      now = target;
      await drain();
    },
    settle: drain,
  };
}
