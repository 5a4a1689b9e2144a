import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { proofRun } from '../../bench/proof/driver.mjs';
import { makeTempDir, removeDir } from '../support/cli.js';
import { temporalCli } from '../support/temporal.js';

/*
 * The randomized proof runs (bench/proof; docs/reliability.md "Randomized runs") on a short, fixed
 * set of seeds, on both engines: a fresh stack per seed, concurrent `lexec run` executions, random
 * SIGKILLs of the executor, ledger, sandbox provider and Temporal child, random provider faults,
 * then the independent invariant checker on the stack at rest; what each run caused, beside its
 * schedule; a clean run's home removed. By hand: `node bench/proof/run.mjs`.
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
      // A broken run keeps its stack home under tmpdir (outside workDir, removed below); the failure says where.
      const result = await proofRun({ seed, engine, workDir, temporalCli: temporal, keepDir: tmpdir() });
      expect(result.violations, `its stack home is kept at ${String(result.keptHome)}`).toEqual([]);
      // What it caused, beside the schedule: every chaos event in order, when it happened, what it did.
      expect(result.events.map((event) => [event.kind, event.kind === 'kill' ? event.target : event.fault, event.scheduled_at])).toEqual(
        result.schedule.chaos.map((event) => [event.kind, event.kind === 'kill' ? event.target : event.fault.kind, event.at]),
      );
      for (const event of result.events) expect(event.at).toBeGreaterThanOrEqual(event.scheduled_at - 5);
      const killed = result.events.filter((event) => event.kind === 'kill' && event.outcome === 'killed');
      expect(Object.values(result.kills).reduce((total, count) => total + count, 0)).toBe(killed.length);
      expect(result.faults).toBe(result.events.filter((event) => event.kind === 'fault' && event.outcome === 'set').length);
      // The run did what its seed says: executions made (an agent that started afresh makes one more), something killed.
      expect(result.counts?.executions).toBeGreaterThanOrEqual(result.schedule.executions.length);
      expect(Object.values(result.kills).reduce((total, count) => total + count, 0)).toBeGreaterThan(0);
      // Every execution came to an end the agent was told: none was given up on.
      expect(result.outcomes.map((outcome) => outcome.outcome).filter((outcome) => outcome.startsWith('gave_up'))).toEqual([]);
      // A clean run's stack home is removed.
      expect(result.keptHome).toBeNull();
      expect(existsSync(result.home)).toBe(false);
    } finally {
      await removeDir(workDir);
    }
  }, 300_000);
});
