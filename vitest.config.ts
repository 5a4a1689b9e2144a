import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/support/longest-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // CLI tests spawn real processes, and the suite must pass on a 2-core machine that is busy
    // with other work (docs/testing.md): a timeout is a ceiling for a loaded machine, not an
    // estimate — a passing test never waits for it. The same for expect.poll (vitest's 1 s).
    testTimeout: 120_000,
    hookTimeout: 120_000,
    expect: { poll: { timeout: 30_000 } },
    pool: 'forks',
    // Four files at a time on two cores: the longest files mostly wait on real processes (a
    // ledger down for 40 s, a Temporal worker's task timing out after a SIGKILL), not on a CPU.
    // Measured on a clean clone: 889 s with three, 782 s with four (docs/testing.md).
    maxWorkers: 4,
    // The longest files first (test/support/longest-first-sequencer.ts): on a clean clone vitest
    // has no durations and starts the largest files first, which left the 2-3 minute proof
    // matrices (4-line files) for the end of the run.
    sequence: { sequencer: LongestFirstSequencer },
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
