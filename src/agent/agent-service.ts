import { setTimeout as delay } from 'node:timers/promises';
import { IMAGE_SIZE_PRESETS } from '../executor/config/executor-config-schema.js';
import { formatUnits, UNITS_SCALE } from '../domain/money.js';
import { UserError } from '../errors.js';
import type { ArtifactView, ExecutionView, ExecutorClient, OfferedTarget } from '../executor/client/executor-client.js';
import { decideRequest } from '../ledger/authorization-rules.js';
import type { AgentTarget } from '../stack-client/connect-agent.js';
import { resumeCommand } from '../stack-client/paid-job/job-authorization.js';
import { jobDelivery } from '../stack-client/paid-job/job-delivery.js';
import { jobArtifacts, jobImage, type ReadAgain } from '../stack-client/paid-job/job-images.js';
import { chooseTarget, IntentRefused, quoteJob, type IntentProblem, type JobQuote } from '../stack-client/paid-job/quote.js';
import type { AgentImage, Money, ToolInput, ToolOutput } from './agent-tools.js';


/*
 * What the tools of `lexec agent mcp` do (generate_images: generate-images.ts), over the stack's ledger (agent capability) and
 * executor (caller capability). No MCP here: the server (mcp-server.ts) turns these answers into
 * tool results. The money rules are the stack's own: the cost is quoted with the executor's
 * pricing code, the ledger decides and holds atomically, the executor claims an authorization for
 * exactly one execution and settles it with a precise receipt. Resuming (authorization_id,
 * execution_id) re-reads the truth and never spends twice.
 */

export interface ToolContext {
  /** A progress line for the host (MCP progress notification). Never carries secrets, paths or URLs. */
  readonly progress: (message: string) => void;
  /** The host cancelled the call (or closed the connection). */
  readonly signal: AbortSignal;
}

/** An image of a tool answer: its bytes when delivered inline, its resource link otherwise. */
export interface DeliveredImage {
  readonly view: AgentImage;
  readonly bytes: Buffer | null;
}

export interface ToolAnswer<R> {
  readonly result: R;
  readonly images: readonly DeliveredImage[];
}

/** auto delivery inlines images up to these sizes; larger ones become resource links. */
const INLINE_MAX_IMAGE_BYTES = 1024 * 1024;
const INLINE_MAX_TOTAL_BYTES = 4 * 1024 * 1024;

export function money(units: bigint, currency = 'USD'): Money {
  return { amount_units: units.toString(), units_scale: UNITS_SCALE, currency, display: formatUnits(units, currency) };
}

export function imageUri(executionId: string, ordinal: number): string {
  return `lexec://executions/${executionId}/images/${ordinal}`;
}

/**
 * This agent is suspended — by an operator, or automatically by its policy's runaway-loop breaker
 * after repeated requests over its velocity limit: the agent must not retry; the operator decides
 * when it may spend again.
 */
export function agentSuspended(agentId: string | null, profile: string | null, by: 'operator' | 'velocity_breaker' = 'operator'): UserError {
  const command = resumeCommand(agentId ?? '<agent_id>', profile);
  if (by === 'velocity_breaker') {
    return new UserError('agent_suspended', 'The stack suspended this agent automatically: it kept sending spend requests over its velocity limit (the runaway-loop breaker). Every spend request is refused now; nothing was requested or spent.', {
      nextStep: `Stop calling generate_images: do not retry or loop. Tell the user that the agent was suspended for requesting too often; the operator looks at why and resumes it with \`${command}\`.`,
    });
  }
  return new UserError('agent_suspended', 'An operator suspended this agent: the stack refuses its spend requests; nothing was requested or spent.', {
    nextStep: `Do not retry: every spend request is refused until the operator resumes this agent. Tell the user; the operator resumes it with \`${command}\`.`,
  });
}

/**
 * The spend request was over the agent's velocity limit: wait, do not loop. Every request counts,
 * refused ones too, so retrying at once only pushes the wait out — and repeated refusals can
 * suspend the agent.
 */
export function velocityExceeded(retryAfterSeconds: number, limit: string | null): UserError {
  const which = limit === null ? 'its velocity limit' : `its velocity limit (${limit})`;
  return new UserError('velocity_exceeded', `The stack refused this spend request: this agent sent more spend requests than ${which} allows. Nothing was requested or spent.`, {
    nextStep: `Wait ${retryAfterSeconds} seconds before calling generate_images again, and do not call it in a loop meanwhile: every call counts against the limit, refused ones too, and repeated refusals suspend this agent. If the user needs more requests, the operator raises the limit with \`lexec ledger policy set\`.`,
  });
}

/** An invalid tool argument: code invalid_argument, the field paths, never the value. */
export function invalidArgument(message: string, fields: readonly string[], nextStep = 'Correct the arguments; list_targets shows what this stack offers.'): UserError {
  return new UserError('invalid_argument', message, { nextStep, issues: fields.map((path) => ({ path, message })) });
}


// ---------------------------------------------------------------------------------------------
// list_targets, quote, spending

export async function listTargets(target: AgentTarget): Promise<ToolAnswer<ToolOutput<'list_targets'>>> {
  const offered = await target.executor.targets();
  const targets = offered.map((entry) => {
    const sizes = IMAGE_SIZE_PRESETS.filter((size) => entry.presets.includes(size) && entry.pricing.by_image_size[size] !== undefined);
    return {
      target_id: entry.target_id,
      label: entry.label,
      provider: entry.provider,
      model: entry.model,
      pricing_version: entry.pricing.version,
      default_image_size: entry.default_image_size,
      image_count: { min: 1, max: entry.max_image_count },
      image_sizes: sizes.map((size) => {
        const quote = quoteJob(entry, size, 1);
        const price = quote.snapshot.unit_price;
        return {
          image_size: size,
          unit_price: { numerator: price.numerator.toString(), denominator: price.denominator.toString(), currency: quote.snapshot.currency, per: 'image' as const },
          one_image: money(quote.amountUnits, quote.snapshot.currency),
        };
      }),
    };
  });
  return { result: { targets }, images: [] };
}

/** A job the stack does not offer, in terms of the tool's arguments. */
function inArguments(problem: IntentProblem): UserError {
  switch (problem.field) {
    case 'target':
      return invalidArgument(`target_id must be one of the targets this stack offers: ${problem.offered.join(', ')}.`, ['target_id']);
    case 'size':
      return invalidArgument(`image_size must be one of the sizes target ${problem.targetId} prices: ${problem.priced.join(', ')}.`, ['image_size']);
    case 'count':
      return invalidArgument(`image_count must be at most ${problem.max} on target ${problem.targetId}.`, ['image_count']);
  }
}

/** The target and price of an intent (the stack client's quote), with errors naming the tool's fields. */
export function quoteIntent(offered: readonly OfferedTarget[], intent: { target_id?: string | undefined; image_size?: string | undefined; image_count?: number | undefined }): JobQuote {
  try {
    const entry = chooseTarget(offered, intent.target_id);
    const count = intent.image_count ?? 1;
    // The count is told before the size, as the tool's arguments are ordered.
    if (count > entry.max_image_count) throw new IntentRefused({ field: 'count', targetId: entry.target_id, max: entry.max_image_count });
    return quoteJob(entry, intent.image_size, count);
  } catch (error) {
    if (error instanceof IntentRefused) throw inArguments(error.problem);
    throw error;
  }
}

export async function quote(target: AgentTarget, input: ToolInput<'quote'>): Promise<ToolAnswer<ToolOutput<'quote'>>> {
  const priced = quoteIntent(await target.executor.targets(), input);
  const spending = await target.ledger.spending();
  // A suspended agent's request is refused whatever its policy leaves: say so, not "automatic".
  if (spending.agent_status === 'suspended') throw agentSuspended(spending.agent_id, target.profile);
  const decision = decideRequest(spending.policy, priced.amountUnits, spending.spent_units + spending.held_units);
  // What the ledger checks beside the caps: the target allow-list, then the calendar budgets.
  const targets = spending.policy.targets;
  const offList = targets !== null && !targets.some((allowed) => allowed.target_id === priced.target.target_id);
  const budget = spending.budgets.find((standing) => standing.remaining_units < priced.amountUnits && (!standing.name.startsWith('target:') || standing.name === `target:${priced.target.target_id}`));
  const refusal = decision.outcome === 'refused' ? decision.reason : offList ? ('target_not_allowed' as const) : budget !== undefined ? ('budget_exceeded' as const) : null;
  return {
    result: {
      target_id: priced.target.target_id,
      image_size: priced.imageSize,
      image_count: priced.imageCount,
      cost: money(priced.amountUnits, priced.snapshot.currency),
      policy_outcome: refusal !== null ? 'refused' : decision.outcome === 'approved' ? 'automatic' : 'needs_human_approval',
      refusal_reason: refusal,
      refusing_budget: refusal === 'budget_exceeded' ? (budget?.name ?? null) : null,
      remaining_today: money(spending.remaining_units, spending.currency),
    },
    images: [],
  };
}

export async function spending(target: AgentTarget): Promise<ToolAnswer<ToolOutput<'spending'>>> {
  const standing = await target.ledger.spending();
  const { policy, currency } = standing;
  return {
    result: {
      per_authorization_cap: money(policy.per_authorization_cap_units, currency),
      daily_cap: money(policy.daily_cap_units, currency),
      approval_threshold: money(policy.approval_threshold_units, currency),
      window: standing.window,
      spent: money(standing.spent_units, currency),
      held: money(standing.held_units, currency),
      remaining: money(standing.remaining_units, currency),
      as_of: standing.as_of,
      budgets: standing.budgets.map((budget) => ({
        name: budget.name,
        period: budget.period,
        period_end: budget.period_end,
        limit: money(budget.limit_units, currency),
        spent: money(budget.spent_units, currency),
        held: money(budget.held_units, currency),
        remaining: money(budget.remaining_units, currency),
      })),
    },
    images: [],
  };
}

// ---------------------------------------------------------------------------------------------
// get_execution, get_images

export function spentOf(execution: ExecutionView): Money | null {
  return execution.receipt === null ? null : money(execution.receipt.amount_units, execution.receipt.currency);
}

export async function getExecution(target: AgentTarget, input: ToolInput<'get_execution'>): Promise<ToolAnswer<ToolOutput<'get_execution'>>> {
  const execution = await target.executor.execution(input.execution_id);
  return {
    result: {
      execution_id: execution.execution_id,
      state: execution.state,
      phase: execution.phase,
      state_reason: execution.state_reason,
      spent: spentOf(execution),
      image_count: execution.artifact_count,
      delivery: jobDelivery(execution),
      recommended_action: execution.recommended_action,
    },
    images: [],
  };
}

/**
 * Reads the images again while the executor restarts, as `lexec run` does (job-images.ts): a
 * call the host cancels ends the wait.
 */
function throughRestart(signal?: AbortSignal): ReadAgain {
  const pause = async (ms: number) => {
    try {
      await delay(ms, undefined, signal === undefined ? {} : { signal });
    } catch {
      throw cancelled();
    }
  };
  return { now: Date.now, pause };
}

/** The images of a succeeded execution, inline or as links. */
export async function deliverImages(executor: ExecutorClient, executionId: string, delivery: 'auto' | 'inline' | 'links', context: ToolContext): Promise<DeliveredImage[]> {
  const again = throughRestart(context.signal);
  const artifacts = await jobArtifacts(executor, executionId, again);
  const total = artifacts.reduce((sum, artifact) => sum + artifact.size_bytes, 0n);
  const inline =
    delivery === 'inline' ||
    (delivery === 'auto' && total <= BigInt(INLINE_MAX_TOTAL_BYTES) && artifacts.every((artifact) => artifact.size_bytes <= BigInt(INLINE_MAX_IMAGE_BYTES)));
  const images: DeliveredImage[] = [];
  for (const artifact of artifacts) {
    const view = imageView(executionId, artifact, inline ? 'inline' : 'link');
    if (!inline) {
      images.push({ view, bytes: null });
      continue;
    }
    if (context.signal.aborted) throw cancelled();
    images.push({ view, bytes: await jobImage(executor, executionId, artifact, again) });
  }
  return images;
}

function imageView(executionId: string, artifact: ArtifactView, delivered: 'inline' | 'link'): AgentImage {
  return {
    ordinal: artifact.ordinal,
    media_type: artifact.media_type,
    size_bytes: Number(artifact.size_bytes),
    sha256: artifact.sha256,
    uri: imageUri(executionId, artifact.ordinal),
    delivered,
  };
}

export async function getImages(target: AgentTarget, input: ToolInput<'get_images'>, context: ToolContext): Promise<ToolAnswer<ToolOutput<'get_images'>>> {
  const execution = await target.executor.execution(input.execution_id);
  if (execution.state !== 'succeeded') throw notSucceeded(execution);
  const images = await deliverImages(target.executor, execution.execution_id, input.delivery ?? 'auto', context);
  return { result: { execution_id: execution.execution_id, images: images.map((image) => image.view) }, images };
}

/** The bytes of one image, for resources/read of its lexec:// URI. */
export async function readImage(target: AgentTarget, executionId: string, ordinal: number): Promise<{ bytes: Buffer; mediaType: string }> {
  const again = throughRestart();
  const artifact = (await jobArtifacts(target.executor, executionId, again)).find((candidate) => candidate.ordinal === ordinal);
  if (artifact === undefined) throw new UserError('image_not_found', `Execution ${executionId} has no image ${ordinal}.`, { nextStep: 'get_images lists the images of an execution.' });
  return { bytes: await jobImage(target.executor, executionId, artifact, again), mediaType: artifact.media_type };
}

export function notSucceeded(execution: ExecutionView): UserError {
  const id = execution.execution_id;
  const reason = execution.state_reason ?? 'no reason given';
  if (execution.state === 'failed') {
    return new UserError('execution_failed', `Execution ${id} failed before any charge (${reason}); its authorization was released and nothing was spent.`, {
      nextStep: 'Call generate_images again (without authorization_id) to try once more.',
    });
  }
  if (execution.state === 'reconciliation') {
    return new UserError('execution_in_reconciliation', `Execution ${id} needs a human: ${reason}. Its charge is held until the operator resolves it.`, {
      nextStep: 'Do not retry it; tell the operator the execution id. Nothing is charged twice.',
    });
  }
  return new UserError('execution_not_finished', `Execution ${id} is ${execution.state}; it has no images yet.`, {
    nextStep: `Call generate_images with execution_id ${id} to wait for it, or get_execution to check.`,
  });
}

export function cancelled(): UserError {
  return new UserError('cancelled', 'The call was cancelled by the host.', { nextStep: 'Call again to resume; nothing is spent twice.' });
}
