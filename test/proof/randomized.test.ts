import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { proofRun, type CausedEvent, type ChaosEvent, type ProofMode } from '../../bench/proof/driver.mjs';
import { makeTempDir, removeDir } from '../support/cli.js';
import { temporalCli } from '../support/temporal.js';

/*
 * The randomized proof runs (bench/proof; docs/reliability.md "Randomized runs") on a short, fixed
 * set of seeds, on both engines and — on Temporal — one seed of each mode: a single stack; two
 * stacks on one Temporal server; a stack whose workflow runs are terminated mid-run. Each: fresh
 * stacks, concurrent `lexec run` executions, random SIGKILLs of the executor, ledger, sandbox
 * provider and Temporal server, random provider faults, then the independent invariant checker on
 * the stacks at rest (on Temporal: every workflow run closed, COMPLETED); what each run caused,
 * beside its schedule; a clean run's home removed. By hand: `node bench/proof/run.mjs`.
 */

const SEEDS: { embedded: readonly [number, ProofMode][]; temporal: readonly [number, ProofMode][] } = {
  embedded: [
    [7, 'single'],
    [19, 'single'],
    [23, 'single'],
  ],
  temporal: [
    [11, 'single'],
    [29, 'two_executors'],
    [51, 'terminations'],
  ],
};

const cli = temporalCli();

/** What a scheduled or caused event acts on: a kill's target, a fault's kind, a termination's execution. */
const subjectOf = (event: ChaosEvent | CausedEvent) => {
  if (event.kind === 'kill') return event.target;
  if (event.kind === 'fault') return typeof event.fault === 'string' ? event.fault : String(event.fault.kind);
  return `#${String(event.execution)}`;
};

describe.each([
  ['embedded', SEEDS.embedded, null],
  ['temporal', SEEDS.temporal, cli],
] as const)('randomized runs on the %s engine', (engine, seeds, temporal) => {
  it.skipIf(engine === 'temporal' && temporal === null).each(seeds.map(([seed, mode]) => ({ seed, mode })))('seed $seed ($mode): no money rule broken after kills and faults', async ({ seed, mode }) => {
    const workDir = await makeTempDir(`lexec-proof-${engine}-`);
    try {
      // A broken run keeps its stack home under tmpdir (outside workDir, removed below); the failure says where.
      const result = await proofRun({ seed, engine, workDir, temporalCli: temporal, keepDir: tmpdir() });
      expect(result.violations, `its stack home is kept at ${String(result.keptHome)}`).toEqual([]);
      expect(result.mode).toBe(mode);
      // What it caused, beside the schedule: every chaos event in order, when it happened, what it did.
      expect(result.events.map((event) => [event.kind, subjectOf(event), event.scheduled_at])).toEqual(result.schedule.chaos.map((event) => [event.kind, subjectOf(event), event.at]));
      for (const event of result.events) expect(event.at).toBeGreaterThanOrEqual(event.scheduled_at - 5);
      const killed = result.events.filter((event) => event.kind === 'kill' && event.outcome === 'killed');
      expect(Object.values(result.kills).reduce((total, count) => total + count, 0)).toBe(killed.length);
      expect(result.faults).toBe(result.events.filter((event) => event.kind === 'fault' && event.outcome === 'set').length);
      // The run did what its seed says: executions made (an agent that started afresh makes one more), something killed.
      expect(result.counts?.executions).toBeGreaterThanOrEqual(result.schedule.executions.length);
      expect(Object.values(result.kills).reduce((total, count) => total + count, 0)).toBeGreaterThan(0);
      if (mode === 'two_executors') {
        // Executions on both stacks, both checked (the counts add up both).
        expect(new Set(result.outcomes.map((outcome) => outcome.stack))).toEqual(new Set([0, 1]));
      }
      if (mode === 'terminations') {
        // Runs terminated mid-run, each started again by the closed-run sweep and brought to an end.
        expect(result.terminations).toBeGreaterThan(0);
        expect(result.rescheduled).toBeGreaterThan(0);
      }
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
