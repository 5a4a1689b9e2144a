import { UsageError } from '../errors.js';
import type { OfferedTarget } from '../executor/client/executor-client.js';
import { chooseTarget, IntentRefused, quoteJob, type IntentProblem, type JobQuote } from '../stack-client/paid-job/quote.js';

/*
 * `lexec run`'s quote: the stack client's (the executor's own pricing), with a job the stack does
 * not offer worded in terms of the command's flags.
 */

const HELP = 'Run `lexec run --help` to see its flags.';

function inFlags(problem: IntentProblem): UsageError {
  switch (problem.field) {
    case 'target':
      return problem.reason === 'unknown'
        ? new UsageError('invalid_flag_value', `--target must be one of the targets this stack offers: ${problem.offered.join(', ')}.`, { nextStep: HELP })
        : new UsageError('target_required', `This stack offers ${problem.offered.length} execution targets; choose one with --target: ${problem.offered.join(', ')}.`, { nextStep: HELP });
    case 'size':
      return new UsageError('invalid_flag_value', `--size must be one of the sizes target ${problem.targetId} prices: ${problem.priced.join(', ')}.`, { nextStep: HELP });
    case 'count':
      return new UsageError('invalid_flag_value', `--count must be a whole number from 1 to ${problem.max} (the limit of target ${problem.targetId}).`, { nextStep: HELP });
  }
}

/** Quotes `count` images of `size` on the target `--target` names (or the only one offered). */
export function quoteForRun(offered: readonly OfferedTarget[], target: string | undefined, size: string | undefined, count: number): JobQuote {
  try {
    return quoteJob(chooseTarget(offered, target), size, count);
  } catch (error) {
    if (error instanceof IntentRefused) throw inFlags(error.problem);
    throw error;
  }
}
