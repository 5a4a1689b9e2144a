import type { RunProgress, RunResult } from './run-job.js';
import { formatUnits } from '../domain/money.js';
import type { JobDelivery } from '../stack-client/paid-job/job-delivery.js';
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
      if (event.continued_from !== null) {
        const where = event.status === 'requested' ? 'awaiting approval' : event.status;
        output.diagnostics.line(`continuing the request this command opened at ${event.continued_from} (${where}) instead of opening a new one`);
      }
      return;
    }
    case 'authorization_taken':
      output.diagnostics.line(style.warn(`! authorization ${event.token_id} was taken meanwhile by another job's execution; requesting a new authorization for this one`));
      return;
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
    case 'engine_unreachable':
      output.diagnostics.line(
        style.warn(
          `! the workflow engine${engineAt(event.address)} is unreachable: execution ${event.execution_id} is held safely and resumes when the engine returns; still waiting (up to --timeout)…`,
        ),
      );
      return;
    case 'engine_back':
      output.diagnostics.line(`the workflow engine${engineAt(event.address)} is back; execution ${event.execution_id} resumes.`);
      return;
    case 'saved':
      output.diagnostics.line(`  ${event.file.outcome === 'written' ? 'saved' : 'already saved'} ${event.file.path} (${event.file.bytes} bytes)`);
      return;
    case 'partial_delivery': {
      const { requested, delivered } = event.delivery;
      const missing = requested - delivered;
      output.diagnostics.line(style.warn(`! ${deliveredLine(event.delivery, event.spent.display)}`));
      output.diagnostics.line(
        `  The provider returned fewer images than asked; nothing more is charged for them. For the missing ${missing === 1 ? 'image' : `${missing} images`}, run \`lexec run\` again with --count ${missing} (a new authorization). Exit code 6: a partial delivery.`,
      );
      return;
    }
  }
}

/** " (grpc://127.0.0.1:7233)": the engine's address when the executor named it. */
function engineAt(address: string | null): string {
  return address === null ? '' : ` (${plain(address)})`;
}

/** "1 of 2 images delivered; billed for 1 (0.003000 USD)": the words of a partial delivery, on stderr and in the summary. */
function deliveredLine(delivery: JobDelivery, spent: string): string {
  const billed = delivery.billed === null ? `billed ${spent}` : `billed for ${delivery.billed} (${spent})`;
  return `${delivery.delivered} of ${delivery.requested} image${delivery.requested === 1 ? '' : 's'} delivered; ${billed}`;
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
  if (result.delivery?.partial === true) output.line(`${style.warn('!')} partial delivery: ${deliveredLine(result.delivery, result.spent.display)}`);
  output.line(
    `${result.delivery?.partial === true ? style.warn('!') : style.ok('✔')} spent exactly ${style.bold(result.spent.display)} (${result.spent.amount_units.toString()} micro-units), ${result.authorization.status} at the ledger (authorization ${result.authorization.token_id})`,
  );
  output.line(`  ${result.files.length} file${result.files.length === 1 ? '' : 's'} in ${result.out_dir}:`);
  for (const file of result.files) output.line(`    ${file.path}`);
}
