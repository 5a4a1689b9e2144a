import { defineConfig } from 'vitest/config';

/**
 * Records Temporal workflow histories from a real server into test/fixtures/temporal-histories/
 * (docs/executions.md "Versioning the workflow"). Not part of the suite: run it on purpose with
 *   LEXEC_TEMPORAL_CLI="$(../shared/tools/temporal-cli-bin)" npx vitest run --config vitest.record.config.ts
 */
export default defineConfig({
  test: {
    include: ['test/**/*.record.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
