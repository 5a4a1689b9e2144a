import { describe, expect, it } from 'vitest';
import { proofRun } from '../../bench/proof/driver.mjs';
import { makeTempDir, removeDir } from '../support/cli.js';
import { temporalCli } from '../support/temporal.js';

/*
 * The randomized proof runs (bench/proof; docs/reliability.md "Randomized runs") on a short, fixed
 * set of seeds, on both engines: a fresh stack per seed, concurrent `lexec run` executions, random
 * SIGKILLs of the executor, ledger, sandbox provider and Temporal child, random provider faults,
 * then the independent invariant checker on the stack at rest. By hand: `node bench/proof/run.mjs`.
 */

const SEEDS = { embedded: [7, 19, 23], temporal: [11, 29] } as const;

const cli = temporalCli();

describe.each([
  ['embedded', SEEDS.embedded, null],
  ['temporal', SEEDS.temporal, cli],
] as const)('randomized runs on the %s engine', (engine, seeds, temporal) => {
  it.skipIf(engine === 'temporal' && temporal === null).each([...seeds])('seed %i: no money rule broken after kills and faults', async (seed) => {
    const workDir = await makeTempDir(`lexec-proof-${engine}-`);
    try {
      const result = await proofRun({ seed, engine, workDir, temporalCli: temporal });
      expect(result.violations).toEqual([]);
      // The run did what its seed says: executions made (an agent that started afresh makes one more), something killed.
      expect(result.counts?.executions).toBeGreaterThanOrEqual(result.schedule.executions.length);
      expect(Object.values(result.kills).reduce((total, count) => total + count, 0)).toBeGreaterThan(0);
      // Every execution came to an end the agent was told: none was given up on.
      expect(result.outcomes.map((outcome) => outcome.outcome).filter((outcome) => outcome.startsWith('gave_up'))).toEqual([]);
    } finally {
      await removeDir(workDir);
    }
  }, 300_000);
});
