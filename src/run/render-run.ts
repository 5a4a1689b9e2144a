import type { RunProgress, RunResult } from './run-job.js';
import { formatUnits } from '../domain/money.js';
import type { Output } from '../terminal/output.js';
import { plain } from '../terminal/plain-text.js';

/*
 * Human text of `lexec run`: progress lines on stderr while it works, and the summary at the end
 * as the result on stdout (under --json, stdout holds the one JSON document instead). Nothing here ever holds
 * a capability; text from the servers (labels, states) is printed without control characters.
 */

const usd = (units: bigint) => formatUnits(units, 'USD');

export function renderRunProgress(event: RunProgress, output: Output): void {
  const { style } = output.diagnostics;
  switch (event.kind) {
    case 'quoted':
      output.diagnostics.line(
        `quote: ${event.image_count} x ${event.image_size} on ${plain(event.label ?? event.target_id)} (${plain(event.target_id)}) = ${style.bold(usd(event.amount_units))}`,
      );
      return;
    case 'authorization': {
      const status = event.status === 'approved' ? style.ok(event.status) : event.status === 'requested' ? style.warn(event.status) : event.status;
      output.diagnostics.line(`authorization ${event.token_id}: ${status}${event.reused ? ' (continuing with it)' : ''}, ${usd(event.amount_units)}`);
      return;
    }
    case 'approval_needed':
      output.diagnostics.line(style.warn(`This authorization needs a human approval (the profile's policy sends amounts above its threshold to an approver).`));
      // Under --no-wait the summary says the same once, at the end.
      if (!event.waiting) return;
      output.diagnostics.line(`  approve it with:  ${style.bold(event.approve_command)}`);
      output.diagnostics.line(`  (or deny it: ${event.deny_command}; unanswered, it expires at ${event.expires_at})`);
      output.diagnostics.line(style.dim('waiting for the decision… (Ctrl-C stops waiting; the authorization stays requested)'));
      return;
    case 'executor_not_ready':
      output.diagnostics.line(style.dim('the executor is not admitting executions right now; retrying the identical request briefly…'));
      return;
    case 'execution':
      output.diagnostics.line(`execution ${event.execution_id}: ${plain(event.state)}${event.phase === null ? '' : ` (${plain(event.phase)})`}`);
      return;
    case 'saved':
      output.diagnostics.line(`  ${event.file.outcome === 'written' ? 'saved' : 'already saved'} ${event.file.path} (${event.file.bytes} bytes)`);
      return;
  }
}

export function renderRunResult(result: RunResult, output: Output): void {
  const { style } = output;
  if (result.spent === null) {
    // --no-wait while an approval is needed.
    output.line(`${style.warn('!')} authorization ${result.authorization.token_id} awaits approval; nothing was submitted or spent.`);
    if (result.approve_command !== null) output.line(`  approve it with:  ${style.bold(result.approve_command)}`);
    output.line(`  then run the same command again with --authorization ${result.authorization.token_id} to execute it.`);
    return;
  }
  output.line(
    `${style.ok('✔')} spent exactly ${style.bold(result.spent.display)} (${result.spent.amount_units.toString()} micro-units), ${result.authorization.status} at the ledger (authorization ${result.authorization.token_id})`,
  );
  output.line(`  ${result.files.length} file${result.files.length === 1 ? '' : 's'} in ${result.out_dir}:`);
  for (const file of result.files) output.line(`    ${file.path}`);
}
