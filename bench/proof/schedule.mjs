// What a seed makes of a randomized proof run (bench/proof/driver.mjs; docs/reliability.md
// "Randomized runs"), before anything runs: its mode, its executions and its chaos events — and
// how the events a run actually caused are told in one line.

/** mulberry32: a small, fast, seedable PRNG (32-bit state); `int(n)` is uniform in [0, n). */
export function prng(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (list) => list[Math.floor(next() * list.length)] };
}

/** Provider faults the schedule may set (the sandbox's control API); each lasts for `times` requests. */
const FAULTS = [
  { kind: 'drop_after_receipt', times: 1 },
  { kind: 'http_error', route: 'submit', status: 503, times: 1 },
  { kind: 'http_error', route: 'status', status: 503, times: 2 },
  { kind: 'complete_with_error', times: 1 },
  { kind: 'fewer_images', omit: 1, times: 1 },
  { kind: 'latency', routes: ['status'], ms: 400, times: 3 },
];

/**
 * The modes of a run. `single`: one stack (embedded, or a managed local Temporal server the
 * executor supervises). Temporal only — `two_executors`: two stacks with external engines on one
 * `temporal server start-dev` the driver runs, each polling its own derived task queue, the
 * executions, kills and faults spread over both; `terminations`: one managed stack whose
 * executions' workflow runs the driver terminates mid-run, as an operator in the Temporal UI
 * would, for the executor's closed-run sweep to bring to an end.
 */
export const MODES = ['single', 'two_executors', 'terminations'];

/**
 * What a seed makes of a run: the mode, the executions (image count, start offset, and in
 * `two_executors` the stack: 0 or 1) and the chaos events (kill, fault or termination, at an offset
 * from the start of the load). The mode and what only a mode needs are drawn after everything
 * else, so a `single` seed's schedule is the one it had before modes existed.
 */
export function scheduleOf(seed, engine) {
  const random = prng(seed);
  const executions = Array.from({ length: 3 + random.int(4) }, (_, index) => ({ index, images: 1 + random.int(3), at: random.int(3_000), stack: 0 }));
  const targets = engine === 'temporal' ? ['executor', 'ledger', 'sandbox', 'temporal'] : ['executor', 'ledger', 'sandbox'];
  const kills = Array.from({ length: 1 + random.int(3) }, () => ({ kind: 'kill', target: random.pick(targets), at: random.int(6_000), stack: 0 }));
  const faults = Array.from({ length: random.int(3) }, () => ({ kind: 'fault', fault: random.pick(FAULTS), at: random.int(4_000), stack: 0 }));
  // Half the Temporal seeds single, a quarter each of the others.
  const mode = engine === 'temporal' ? ['single', 'single', 'two_executors', 'terminations'][random.int(4)] : 'single';
  if (mode === 'two_executors') {
    for (const item of [...executions, ...kills, ...faults]) item.stack = random.int(2);
  }
  const terminations =
    mode === 'terminations'
      ? Array.from({ length: 1 + random.int(2) }, () => {
          const execution = random.int(executions.length);
          // Soon after that execution's agent started it: while its run is under way.
          return { kind: 'terminate', execution, at: executions[execution].at + 300 + random.int(1_500), stack: 0 };
        })
      : [];
  const chaos = [...kills, ...faults, ...terminations].sort((a, b) => a.at - b.at);
  return { seed, engine, mode, executions, chaos };
}

/** The names of a run's stacks, by the schedule's stack index (a two-stack run's lines say `a:` or `b:`). */
export const STACK_NAMES = ['a', 'b'];

/** The stack a caused event concerns in a two-stack run (`b:`), or nothing. */
function stackPrefix(event) {
  return typeof event.stack === 'string' ? `${event.stack}:` : '';
}

/** What an event acted on: a kill's target, a fault's kind, a termination's execution. */
function subjectOf(event) {
  if (event.kind === 'kill') return `${stackPrefix(event)}${event.target}`;
  if (event.kind === 'fault') return `${stackPrefix(event)}${event.fault}`;
  return `#${event.execution}`;
}

/** A run's events as one short text: `kill executor +1203ms killed`, `fault latency +3001ms refused (503)`, `terminate #2 +1800ms terminated`. */
export function describeEvents(events) {
  return events
    .map((event) => `${event.kind} ${subjectOf(event)} +${event.at}ms ${event.outcome}${event.status !== null && event.status !== undefined && event.outcome !== 'set' ? ` (${event.status})` : ''}`)
    .join(', ');
}
