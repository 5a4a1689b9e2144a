import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the run's totals as one plain line, "N passed, N failed, N skipped", after vitest's own
 * report, so CI logs (and people grepping them) can read the outcome without parsing colour.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]): void {
    const count = (state: 'passed' | 'failed' | 'skipped') =>
      testModules.reduce((total, module) => total + [...module.children.allTests(state)].length, 0);
    process.stdout.write(`\n${count('passed')} passed, ${count('failed')} failed, ${count('skipped')} skipped\n`);
  }
}
