import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../support/cli.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { checkInvariants, type InvariantInputs } from './check-invariants.js';

/*
 * The invariant checker on a whole stack's files (docs/reliability.md "Invariant checker"):
 *   - a real `lexec stack` (its supervisor runs the ledger, the executor and the sandbox, which
 *     keeps its jobs in `state/sandbox-jobs.jsonl`) runs jobs, stops, and its state directory is
 *     checked — the jobs file saying what reached the provider;
 *   - a stack of your own, stopped, when told where its files are (skipped otherwise):
 *       LEXEC_PROOF_STATE_DIR        a profile's state/ directory (ledger.db, executor.db,
 *                                    artifacts/, sandbox-jobs.jsonl when there)
 *       LEXEC_PROOF_LEDGER_DB, LEXEC_PROOF_EXECUTOR_DB, LEXEC_PROOF_ARTIFACT_ROOT,
 *       LEXEC_PROOF_JOBS_FILE        each file on its own (they win over the state directory)
 *       LEXEC_PROOF_SUBMISSIONS_LOG  a sandbox's --submissions-log, when it kept one
 */

/** What to check in a stack's files, from LEXEC_PROOF_* variables; null when they do not say. */
function stackInputs(env: Readonly<Record<string, string | undefined>>): InvariantInputs | null {
  const state = env.LEXEC_PROOF_STATE_DIR;
  const inState = (name: string) => (state === undefined ? undefined : join(state, name));
  const ledgerDatabase = env.LEXEC_PROOF_LEDGER_DB ?? inState('ledger.db');
  const executorDatabase = env.LEXEC_PROOF_EXECUTOR_DB ?? inState('executor.db');
  const artifactRoot = env.LEXEC_PROOF_ARTIFACT_ROOT ?? inState('artifacts');
  if (ledgerDatabase === undefined || executorDatabase === undefined || artifactRoot === undefined) return null;
  const jobs = env.LEXEC_PROOF_JOBS_FILE ?? inState('sandbox-jobs.jsonl');
  return {
    ledgerDatabase,
    executorDatabase,
    artifactRoot,
    submissionsLog: env.LEXEC_PROOF_SUBMISSIONS_LOG ?? null,
    sandboxJobsFile: jobs !== undefined && existsSync(jobs) ? jobs : null,
  };
}

const own = stackInputs(process.env);

describe('a stack of your own', () => {
  it.skipIf(own === null)('keeps every money and execution invariant', () => {
    if (own === null) return;
    const report = checkInvariants(own);
    console.log(JSON.stringify(report, null, 2));
    expect(report.violations).toEqual([]);
  });
});

describe('a real `lexec stack`, judged by its sandbox jobs file', () => {
  let home = '';
  let stack: RunningStack | undefined;
  afterAll(async () => {
    await stack?.stop();
    if (home !== '') await removeDir(home);
  }, 120_000);

  it('keeps every invariant after jobs ran (one with fewer images delivered than asked) and the stack stopped', async () => {
    home = await makeTempDir('lexec-proof-stack-');
    stack = await startRunningStack({ home });
    const out = join(home, 'out');
    const run = async (args: string[], exitCode = 0) => {
      const result = await stack?.lexec(['run', ...args, '--json'], { timeoutMs: 120_000 });
      expect(result?.exitCode, result?.stderr).toBe(exitCode);
    };
    await run(['a lighthouse on a cliff at dusk', '--count', '2', '--out', join(out, 'first')]);
    await stack.sandbox.setFaults([{ kind: 'fewer_images', omit: 1, times: 1 }]);
    // A partial delivery (1 of 2 images) exits 6 (docs/run.md).
    await run(['a harbour at dawn', '--count', '2', '--out', join(out, 'second')], 6);
    const { stateDir } = stack.paths;
    await stack.stop();
    stack = undefined;

    const inputs = stackInputs({ LEXEC_PROOF_STATE_DIR: stateDir });
    expect(inputs?.sandboxJobsFile).toMatch(/state\/sandbox-jobs\.jsonl$/);
    if (inputs?.sandboxJobsFile == null) return;
    const jobs = (await readFile(inputs.sandboxJobsFile, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line) as { type: string });
    expect(jobs.map((line) => line.type)).toEqual(['job', 'job']);
    const report = checkInvariants(inputs);
    expect(report.violations).toEqual([]);
    expect(report.counts).toEqual({ executions: 2, attempts: 2, submissions: 2, settlements: 2, releases: 0, reconciliations: 0, artifacts: 3 });
  }, 240_000);
});
