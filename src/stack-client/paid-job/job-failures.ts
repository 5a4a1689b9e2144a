import { UserError } from '../../errors.js';

/*
 * Failures of the stack itself, not of the job: the ledger or the executor did not answer, was
 * not ready, failed, or answered with something this client cannot read. Once an authorization
 * exists they leave it (and any execution) in place, so every client says what stays and how to
 * resume (`lexec run`: the same command with --authorization; the agent: generate_images with the
 * authorization_id or execution_id). One set, for every client.
 */
const STACK_FAILURES = new Set([
  'executor_unreachable',
  'executor_not_ready',
  'executor_disk_full',
  'executor_server_error',
  'executor_bad_response',
  'ledger_unreachable',
  'ledger_server_error',
  'ledger_bad_response',
]);

export function isStackFailure(error: unknown): error is UserError {
  return error instanceof UserError && STACK_FAILURES.has(error.code);
}
