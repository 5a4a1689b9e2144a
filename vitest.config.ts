import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // CLI tests spawn real processes; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Three files at a time on two cores: the longest files mostly wait on real processes (a
    // ledger down for 40 s, a Temporal worker's task timing out after a SIGKILL), not on a CPU.
    maxWorkers: 3,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
