import { afterAll, beforeAll, expect } from 'vitest';
import { makeTempDir, removeDir, type CliRun } from './cli.js';
import { startBackgroundRun, type BackgroundRun } from './background-run.js';
import { startRunningStack, type RunningStack, type RunningStackOptions } from './running-stack.js';

/*
 * The set-up of a `lexec run` test file: one running sandbox stack and a working directory for
 * the whole file, every CLI run of the file kept, and at the end — the stack stopped — none of
 * those runs may have printed a capability.
 */

export interface RunSession {
  readonly stack: RunningStack;
  /** The working directory the runs start in (relative --out directories land here). */
  readonly work: string;
  /** `lexec <args>` through the stack's home, in `work`; kept for the final check. */
  readonly lexec: (args: readonly string[]) => Promise<CliRun>;
  /** `lexec run <args>` as a child that keeps running while the test acts; kept for the final check. */
  readonly startRun: (args: readonly string[]) => BackgroundRun;
}

export function runSessionPerFile(use: (session: RunSession) => void, options: RunningStackOptions = {}): void {
  let stack: RunningStack | undefined;
  let work = '';
  const runs: CliRun[] = [];

  beforeAll(async () => {
    work = await makeTempDir('lexec-run-work-');
    const started = await startRunningStack(options);
    stack = started;
    use({
      stack: started,
      work,
      lexec: async (args) => {
        const run = await started.lexec(args, { cwd: work, timeoutMs: 120_000 });
        runs.push(run);
        return run;
      },
      startRun: (args) => startBackgroundRun(args, { cwd: work, env: { HOME: started.home, ...started.env }, onDone: (run) => runs.push(run) }),
    });
  }, 180_000);

  afterAll(async () => {
    if (stack === undefined) return;
    const running = stack;
    const secrets = await Promise.all((['admin', 'agent', 'approver', 'caller', 'reconciliation'] as const).map((role) => running.capability(role)));
    await running.stop();
    await removeDir(work);
    for (const run of runs) {
      expect(run.stdout + run.stderr).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{43}/);
      for (const secret of secrets) expect(run.stdout + run.stderr).not.toContain(secret);
    }
  }, 120_000);
}
