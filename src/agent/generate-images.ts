import { setTimeout as delay } from 'node:timers/promises';
import { formatUnits } from '../domain/money.js';
import { SECRET_TEXT_MESSAGE } from '../domain/secret-text.js';
import { MAX_PROMPT_CHARS } from '../executor/domain/execution-request.js';
import { UserError } from '../errors.js';
import type { ExecutionView } from '../executor/client/executor-client.js';
import type { LedgerAuthorization } from '../ledger/wire/answers.js';
import type { AgentTarget } from '../stack-client/connect-agent.js';
import { admitJob, NOT_READY_WINDOW_MS, refuseIfExecutorCannotAdmit } from '../stack-client/paid-job/admission.js';
import { followExecution } from '../stack-client/paid-job/follow-execution.js';
import { approveCommand, obtainAuthorization, resumeCommand, takenByAnotherJob } from '../stack-client/paid-job/job-authorization.js';
import { jobDelivery, type JobDelivery } from '../stack-client/paid-job/job-delivery.js';
import { isStackFailure } from '../stack-client/paid-job/job-failures.js';
import { executionRequestBody, promptProblem } from '../stack-client/paid-job/job-request.js';
import type { JobQuote } from '../stack-client/paid-job/quote.js';
import { refuseUnusable } from '../stack-client/paid-job/usable-authorization.js';
import { agentSuspended, cancelled, deliverImages, invalidArgument, money, notSucceeded, quoteIntent, spentOf, velocityExceeded, type DeliveredImage, type ToolAnswer, type ToolContext } from './agent-service.js';
import type { Money, ToolInput, ToolOutput } from './agent-tools.js';
import { AgentWorded, agentWording } from './agent-wording.js';

/*
 * generate_images: the paid job of the stack client (src/stack-client/paid-job/), as an agent
 * calls it — quote, authorization, admission, follow and images in one call that answers
 * `awaiting_approval` or `running` instead of waiting past wait_seconds, and resumes by
 * authorization_id or execution_id without ever spending twice.
 */

const DEFAULT_WAIT_SECONDS = 50;

/** Thrown inside a wait when wait_seconds has passed: the call answers "running". */
class StillRunning extends Error {}

/**
 * One generate_images call. `requestedAgain`: this call already requested once more after another
 * job took the request it continued (takenByAnotherJob); it does not do so twice.
 */
export async function generateImages(
  target: AgentTarget,
  input: ToolInput<'generate_images'>,
  context: ToolContext,
  requestedAgain = false,
): Promise<ToolAnswer<ToolOutput<'generate_images'>>> {
  const deadline = Date.now() + (input.wait_seconds ?? DEFAULT_WAIT_SECONDS) * 1000;
  const delivery = input.delivery ?? 'auto';
  const pause = async (ms: number) => {
    const left = deadline - Date.now();
    if (left <= 0) throw new StillRunning();
    try {
      await delay(Math.min(ms, left), undefined, { signal: context.signal });
    } catch {
      throw cancelled();
    }
    if (Date.now() >= deadline) throw new StillRunning();
  };

  const answer = (fields: Partial<ToolOutput<'generate_images'>> & Pick<ToolOutput<'generate_images'>, 'status'>, images: DeliveredImage[] = []): ToolAnswer<ToolOutput<'generate_images'>> => ({
    result: {
      authorization_id: null,
      authorization_status: null,
      approve_command: null,
      execution_id: null,
      execution_state: null,
      quoted: null,
      spent: null,
      images: images.map((image) => image.view),
      delivery: null,
      next_step: null,
      ...fields,
    },
    images,
  });

  /** Follows an admitted execution to the end (or to wait_seconds) and collects its images. */
  const finish = async (admitted: ExecutionView, base: Partial<ToolOutput<'generate_images'>>, admit: () => Promise<ExecutionView>) => {
    // The same follow as `lexec run` (polling schedule, re-admission of a pending one).
    let latest: { execution_id: string; state: string } = admitted;
    /** Whether the workflow engine under the execution does not answer (and was not heard back since). */
    const engine = { down: false };
    let execution: ExecutionView;
    try {
      execution = await followExecution(target.executor, admitted, {
        progress: (event) => {
          if (event.kind !== 'execution') {
            // No address: the agent's words carry no URL (docs/agent.md).
            engine.down = event.kind === 'engine_unreachable';
            context.progress(
              `execution ${event.execution_id}: ${engine.down ? 'the workflow engine is unreachable; the execution is held safely and resumes when the engine returns' : 'the workflow engine is back; the execution resumes'}`,
            );
            return;
          }
          latest = event;
          context.progress(`execution ${event.execution_id}: ${event.state}${event.phase === null ? '' : ` (${event.phase})`}`);
        },
        pause,
        admit,
        now: Date.now,
        remainingMs: () => deadline - Date.now(),
        signal: context.signal,
      });
    } catch (error) {
      if (!(error instanceof StillRunning)) throw error;
      return answer({
        ...base,
        status: 'running',
        execution_id: latest.execution_id,
        execution_state: latest.state,
        next_step: `${engine.down ? `The stack's workflow engine is unreachable: execution ${latest.execution_id} is held safely and resumes when the engine returns. ` : ''}Call generate_images with execution_id ${latest.execution_id} to keep waiting; nothing is spent twice.`,
      });
    }
    if (execution.state !== 'succeeded') throw notSucceeded(execution);
    const images = await deliverImages(target.executor, execution.execution_id, delivery, context);
    const delivered = jobDelivery(execution);
    const spent = spentOf(execution);
    const partial = delivered?.partial === true ? partialDelivery(delivered, spent) : null;
    context.progress(`execution ${execution.execution_id}: ${images.length} image${images.length === 1 ? '' : 's'} ready${partial === null ? '' : ` (partial delivery: ${partial.told})`}`);
    return answer({ ...base, status: 'succeeded', execution_id: execution.execution_id, execution_state: execution.state, spent, delivery: delivered, next_step: partial?.next ?? null }, images);
  };

  // Resume by execution id: the execution says everything; nothing new is requested.
  if (input.execution_id !== undefined) {
    const execution = await target.executor.execution(input.execution_id);
    const again = () => target.executor.execution(execution.execution_id);
    return finish(execution, {}, again);
  }

  const problem = input.prompt === undefined ? 'blank' : promptProblem(input.prompt);
  if (problem === 'blank' || input.prompt === undefined) throw invalidArgument('prompt is required (1 or more non-blank characters) unless execution_id is given.', ['prompt']);
  if (problem === 'too_long') throw invalidArgument(`prompt must be at most ${MAX_PROMPT_CHARS} characters.`, ['prompt']);
  if (problem === 'secret') throw invalidArgument(`prompt ${SECRET_TEXT_MESSAGE}; remove it and call again.`, ['prompt']);
  const priced = quoteIntent(await target.executor.targets(), input);
  const quoted = money(priced.amountUnits, priced.snapshot.currency);
  context.progress(`quoted ${priced.imageCount} x ${priced.imageSize} on ${priced.target.target_id}: ${quoted.display}`);
  // Before an authorization is asked for: a stack that cannot run the job (a full disk) holds nothing.
  await refuseIfExecutorCannotAdmit(target.executor);

  const obtained = await obtainAuthorization(target.ledger, priced, {
    existingId: input.authorization_id,
    client: 'lexec agent',
    prompt: input.prompt,
    unknown: () => invalidArgument('authorization_id names no authorization of this agent.', ['authorization_id'], 'Use the authorization_id a generate_images call returned, or leave it out to request a new one.'),
    insufficient: (existing) => insufficient(existing, priced),
    suspended: (agentId, by) => agentSuspended(agentId, target.profile, by),
    tooFast: velocityExceeded,
  });
  let { authorization } = obtained;
  // The same call made again while its request is open continues it: one hold, one approval.
  const continued = obtained.continued
    ? `This continues the request an identical earlier call opened at ${authorization.created_at} (${authorization.status === 'requested' ? 'awaiting approval' : authorization.status}); nothing new was requested. `
    : '';
  context.progress(`authorization ${authorization.token_id}: ${authorization.status}${obtained.continued ? ` (continuing the request opened at ${authorization.created_at} instead of opening a new one)` : ''}`);
  const base = { authorization_id: authorization.token_id, authorization_status: authorization.status, quoted };
  if (authorization.status === 'requested') {
    const command = approveCommand(authorization.token_id, target.profile);
    return answer({
      ...base,
      status: 'awaiting_approval',
      approve_command: command,
      next_step: `${continued}A human must approve this spend: ask the operator to run \`${command}\`. Once approved, call generate_images again with authorization_id ${authorization.token_id} and the same prompt, image_size and image_count. The agent cannot approve its own spend.`,
    });
  }
  const again = 'Call generate_images without authorization_id to request a new authorization.';
  const afterSuspension = (agentId: string) =>
    `Do not retry with this authorization or ask for another: an operator suspended this agent, and the stack refuses its spend until the operator resumes it. Tell the user; once the operator has run \`${resumeCommand(agentId, target.profile)}\`, call generate_images without authorization_id.`;
  refuseUnusable(authorization, again, afterSuspension);

  const body = executionRequestBody({ tokenId: authorization.token_id, prompt: input.prompt, targetId: priced.target.target_id, imageSize: priced.imageSize, imageCount: priced.imageCount });
  const reread = () => target.ledger.showAuthorization(authorization.token_id);
  const admitOnce = (): Promise<ExecutionView> =>
    admitJob(target.executor, body, {
      until: Date.now() + NOT_READY_WINDOW_MS,
      now: Date.now,
      onNotReady: () => {
        context.progress('the executor is not admitting executions right now; retrying');
      },
      wait: (ms) =>
        delay(ms, undefined, { signal: context.signal }).catch(() => {
          throw cancelled();
        }),
      reread,
      again,
      suspended: afterSuspension,
    });
  // Still usable after a conflict: used by another job.
  const worded = (error: unknown) => (error instanceof UserError && error.code === 'executor_conflict' ? alreadyUsed(authorization) : error);
  const admit = async (): Promise<ExecutionView> => {
    try {
      return await admitOnce();
    } catch (error) {
      throw worded(error);
    }
  };
  let admitted: ExecutionView;
  try {
    admitted = await admitOnce();
  } catch (error) {
    // Another job took the request this call continued: request once more (its key is free now), once.
    if (!requestedAgain && (await takenByAnotherJob(error, obtained, reread))) {
      context.progress(`authorization ${authorization.token_id} was taken meanwhile by another job's execution; requesting a new authorization for this call`);
      return generateImages(target, input, context, true);
    }
    throw withWhatStays(worded(error), authorization.token_id, null);
  }
  const executionId = admitted.execution_id;
  try {
    const done = await finish(admitted, { ...base, authorization_status: 'claimed' }, admit);
    if (done.result.status !== 'succeeded') return done;
    // The ledger's own word on the authorization once the receipt is in (settled).
    authorization = await target.ledger.showAuthorization(authorization.token_id);
    return { ...done, result: { ...done.result, authorization_status: authorization.status } };
  } catch (error) {
    throw withWhatStays(error, authorization.token_id, executionId);
  }
}

/** A partial delivery in the agent's words: what came and what it cost, and how to get the rest. */
function partialDelivery(delivery: JobDelivery, spent: Money | null): { told: string; next: string } {
  const cost = spent === null ? '' : ` (${spent.display})`;
  const billed = delivery.billed === null ? `billed${cost}` : `billed for ${delivery.billed}${cost}`;
  const told = `${delivery.delivered} of ${delivery.requested} images delivered; ${billed}`;
  const missing = delivery.requested - delivery.delivered;
  return {
    told,
    next: `Partial delivery: ${told}. The provider returned fewer images than asked and only those are billed. Tell the user; for the missing ${missing === 1 ? 'image' : `${missing} images`}, call generate_images again with image_count ${missing} (a new authorization).`,
  };
}

/** A stack failure after the authorization exists: say what stays and how to resume. */
function withWhatStays(error: unknown, tokenId: string, executionId: string | null): unknown {
  if (!isStackFailure(error)) return error;
  const { message } = agentWording(error);
  const stays =
    executionId === null
      ? `Authorization ${tokenId} stays approved and may not have been used yet; nothing was spent twice.`
      : `Execution ${executionId} continues in the stack (authorization ${tokenId} is claimed for it).`;
  const resume =
    executionId === null
      ? `Once the stack answers again, call generate_images with authorization_id ${tokenId} and the same prompt, image_size and image_count.`
      : `Once the stack answers again, call generate_images with execution_id ${executionId}; nothing is spent twice.`;
  return new AgentWorded(error.code, `${message} ${stays}`, { nextStep: resume, issues: error.issues });
}

function insufficient(existing: LedgerAuthorization, priced: JobQuote): UserError {
  return invalidArgument(
    `authorization ${existing.token_id} holds ${formatUnits(existing.amount_units, existing.currency)}, less than this job costs (${formatUnits(priced.amountUnits, 'USD')}).`,
    ['authorization_id'],
    'Call with the same prompt, image_size and image_count as the call that requested it, or without authorization_id to request a new one.',
  );
}

function alreadyUsed(authorization: LedgerAuthorization): UserError {
  const used = authorization.execution_id === null ? '' : ` by execution ${authorization.execution_id}`;
  return new UserError('authorization_already_used', `Authorization ${authorization.token_id} was already used${used} for a different job; one authorization pays for one execution only.`, {
    nextStep:
      authorization.execution_id === null
        ? 'Call generate_images without authorization_id to request a new authorization.'
        : `Call generate_images with execution_id ${authorization.execution_id} for that job's images, or without authorization_id for a new job.`,
    issues: [{ path: 'authorization_id', message: 'already used for another execution' }],
  });
}
