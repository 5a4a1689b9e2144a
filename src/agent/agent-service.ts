import { setTimeout as delay } from 'node:timers/promises';
import { formatUnits } from '../domain/money.js';
import { IMAGE_SIZE_PRESETS } from '../executor/config/executor-config-schema.js';
import { UNITS_SCALE } from '../domain/money.js';
import { containsSecretShape, SECRET_TEXT_MESSAGE } from '../domain/secret-text.js';
import { UserError } from '../errors.js';
import type { ArtifactView, ExecutionView, ExecutorClient, OfferedTarget } from '../executor/client/executor-client.js';
import { decideRequest } from '../ledger/authorization-rules.js';
import type { LedgerAuthorization } from '../ledger/wire/answers.js';
import { chooseTarget, quoteRun, type RunQuote } from '../run/quote-run.js';
import { admitExecution, askThroughRestart, followExecution } from '../run/finish-execution.js';
import { refuseIfUnusableAfterConflict, refuseUnusable } from '../run/usable-authorization.js';
import type { AgentTarget } from './agent-connection.js';
import type { AgentImage, Money, ToolInput, ToolOutput } from './agent-tools.js';

/*
 * What each tool of `lexec agent mcp` does, over the stack's ledger (agent capability) and
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

const DEFAULT_WAIT_SECONDS = 50;
/** auto delivery inlines images up to these sizes; larger ones become resource links. */
const INLINE_MAX_IMAGE_BYTES = 1024 * 1024;
const INLINE_MAX_TOTAL_BYTES = 4 * 1024 * 1024;
const NOT_READY_WINDOW_MS = 45_000;

export function money(units: bigint, currency = 'USD'): Money {
  return { amount_units: units.toString(), units_scale: UNITS_SCALE, currency, display: formatUnits(units, currency) };
}

export function imageUri(executionId: string, ordinal: number): string {
  return `lexec://executions/${executionId}/images/${ordinal}`;
}

/** An invalid tool argument: code invalid_argument, the field paths, never the value. */
export function invalidArgument(message: string, fields: readonly string[], nextStep = 'Correct the arguments; list_targets shows what this stack offers.'): UserError {
  return new UserError('invalid_argument', message, { nextStep, issues: fields.map((path) => ({ path, message })) });
}

export function approveCommand(tokenId: string, profile: string | null): string {
  return `lexec ledger authorizations approve ${tokenId}${profile === null ? '' : ` --profile ${profile}`}`;
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
        const quote = quoteRun(entry, size, 1);
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

/** The target and price of an intent, with errors naming the tool's fields. */
function quoteIntent(offered: readonly OfferedTarget[], intent: { target_id?: string | undefined; image_size?: string | undefined; image_count?: number | undefined }): RunQuote {
  let entry: OfferedTarget;
  try {
    entry = chooseTarget(offered, intent.target_id);
  } catch (error) {
    if (!(error instanceof UserError) || error.code === 'no_execution_targets') throw error;
    const ids = offered.map((candidate) => candidate.target_id).join(', ');
    throw invalidArgument(`target_id must be one of the targets this stack offers: ${ids}.`, ['target_id']);
  }
  const count = intent.image_count ?? 1;
  if (count > entry.max_image_count) throw invalidArgument(`image_count must be at most ${entry.max_image_count} on target ${entry.target_id}.`, ['image_count']);
  const priced = entry.presets.filter((size) => entry.pricing.by_image_size[size] !== undefined);
  if (intent.image_size !== undefined && !priced.includes(intent.image_size)) {
    throw invalidArgument(`image_size must be one of the sizes target ${entry.target_id} prices: ${priced.join(', ')}.`, ['image_size']);
  }
  return quoteRun(entry, intent.image_size, count);
}

export async function quote(target: AgentTarget, input: ToolInput<'quote'>): Promise<ToolAnswer<ToolOutput<'quote'>>> {
  const priced = quoteIntent(await target.executor.targets(), input);
  const spending = await target.ledger.spending();
  const decision = decideRequest(spending.policy, priced.amountUnits, spending.spent_units + spending.held_units);
  return {
    result: {
      target_id: priced.target.target_id,
      image_size: priced.imageSize,
      image_count: priced.imageCount,
      cost: money(priced.amountUnits, priced.snapshot.currency),
      policy_outcome: decision.outcome === 'approved' ? 'automatic' : decision.outcome === 'requested' ? 'needs_human_approval' : 'refused',
      refusal_reason: decision.outcome === 'refused' ? decision.reason : null,
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
    },
    images: [],
  };
}

// ---------------------------------------------------------------------------------------------
// get_execution, get_images

function spentOf(execution: ExecutionView): Money | null {
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
      recommended_action: execution.recommended_action,
    },
    images: [],
  };
}

/**
 * Reads the images again while the executor restarts, as `lexec run` does (askThroughRestart):
 * a call the host cancels ends the wait.
 */
function throughRestart(signal?: AbortSignal) {
  const pause = async (ms: number) => {
    try {
      await delay(ms, undefined, signal === undefined ? {} : { signal });
    } catch {
      throw cancelled();
    }
  };
  return <T>(ask: () => Promise<T>) => askThroughRestart(ask, { now: Date.now, pause });
}

/** The images of a succeeded execution, inline or as links. */
async function deliverImages(executor: ExecutorClient, executionId: string, delivery: 'auto' | 'inline' | 'links', context: ToolContext): Promise<DeliveredImage[]> {
  const again = throughRestart(context.signal);
  const artifacts = (await again(() => executor.artifacts(executionId))).sort((a, b) => a.ordinal - b.ordinal);
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
    images.push({ view, bytes: await again(() => executor.content(executionId, artifact)) });
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
  const artifact = (await again(() => target.executor.artifacts(executionId))).find((candidate) => candidate.ordinal === ordinal);
  if (artifact === undefined) throw new UserError('image_not_found', `Execution ${executionId} has no image ${ordinal}.`, { nextStep: 'get_images lists the images of an execution.' });
  return { bytes: await again(() => target.executor.content(executionId, artifact)), mediaType: artifact.media_type };
}

function notSucceeded(execution: ExecutionView): UserError {
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

// ---------------------------------------------------------------------------------------------
// generate_images

function cancelled(): UserError {
  return new UserError('cancelled', 'The call was cancelled by the host.', { nextStep: 'Call again to resume; nothing is spent twice.' });
}

/** Thrown inside a wait when wait_seconds has passed: the call answers "running". */
class StillRunning extends Error {}

export async function generateImages(target: AgentTarget, input: ToolInput<'generate_images'>, context: ToolContext): Promise<ToolAnswer<ToolOutput<'generate_images'>>> {
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
      next_step: null,
      ...fields,
    },
    images,
  });

  /** Follows an admitted execution to the end (or to wait_seconds) and collects its images. */
  const finish = async (admitted: ExecutionView, base: Partial<ToolOutput<'generate_images'>>, admit: () => Promise<ExecutionView>) => {
    // The same follow as `lexec run` (polling schedule, re-admission of a pending one).
    let latest: { execution_id: string; state: string } = admitted;
    let execution: ExecutionView;
    try {
      execution = await followExecution(target.executor, admitted, {
        progress: (event) => {
          if (event.kind !== 'execution') return;
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
        next_step: `Call generate_images with execution_id ${latest.execution_id} to keep waiting; nothing is spent twice.`,
      });
    }
    if (execution.state !== 'succeeded') throw notSucceeded(execution);
    const images = await deliverImages(target.executor, execution.execution_id, delivery, context);
    context.progress(`execution ${execution.execution_id}: ${images.length} image${images.length === 1 ? '' : 's'} ready`);
    return answer({ ...base, status: 'succeeded', execution_id: execution.execution_id, execution_state: execution.state, spent: spentOf(execution) }, images);
  };

  // Resume by execution id: the execution says everything; nothing new is requested.
  if (input.execution_id !== undefined) {
    const execution = await target.executor.execution(input.execution_id);
    const again = () => target.executor.execution(execution.execution_id);
    return finish(execution, {}, again);
  }

  if (input.prompt === undefined || input.prompt.trim() === '') {
    throw invalidArgument('prompt is required (1 or more non-blank characters) unless execution_id is given.', ['prompt']);
  }
  // Before any authorization is requested: the executor would refuse it anyway, leaving a hold.
  if (containsSecretShape(input.prompt)) throw invalidArgument(`prompt ${SECRET_TEXT_MESSAGE}; remove it and call again.`, ['prompt']);
  const priced = quoteIntent(await target.executor.targets(), input);
  const quoted = money(priced.amountUnits, priced.snapshot.currency);
  context.progress(`quoted ${priced.imageCount} x ${priced.imageSize} on ${priced.target.target_id}: ${quoted.display}`);

  let authorization = await obtainAuthorization(target, input.authorization_id, priced);
  context.progress(`authorization ${authorization.token_id}: ${authorization.status}`);
  const base = { authorization_id: authorization.token_id, authorization_status: authorization.status, quoted };
  if (authorization.status === 'requested') {
    const command = approveCommand(authorization.token_id, target.profile);
    return answer({
      ...base,
      status: 'awaiting_approval',
      approve_command: command,
      next_step: `A human must approve this spend: ask the operator to run \`${command}\`. Once approved, call generate_images again with authorization_id ${authorization.token_id} and the same prompt, image_size and image_count. The agent cannot approve its own spend.`,
    });
  }
  const again = 'Call generate_images without authorization_id to request a new authorization.';
  refuseUnusable(authorization, again);

  const body = {
    schema_version: 2,
    spend_auth_token_id: authorization.token_id,
    input: { prompt: input.prompt, image_count: priced.imageCount, image_size: priced.imageSize },
    input_schema_version: 1,
    target_id: priced.target.target_id,
  };
  const admit = async (): Promise<ExecutionView> => {
    try {
      return await admitExecution(target.executor, body, {
        until: Date.now() + NOT_READY_WINDOW_MS,
        now: Date.now,
        onNotReady: () => {
          context.progress('the executor is not admitting executions right now; retrying');
        },
        wait: (ms) =>
          delay(ms, undefined, { signal: context.signal }).catch(() => {
            throw cancelled();
          }),
      });
    } catch (error) {
      // Released or expired since it was read (e.g. released as an orphan claim while retrying), else used by another job.
      await refuseIfUnusableAfterConflict(error, () => target.ledger.showAuthorization(authorization.token_id), again);
      if (error instanceof UserError && error.code === 'executor_conflict') throw alreadyUsed(authorization);
      throw error;
    }
  };
  let executionId: string | null = null;
  try {
    const admitted = await admit();
    executionId = admitted.execution_id;
    const done = await finish(admitted, { ...base, authorization_status: 'claimed' }, admit);
    if (done.result.status !== 'succeeded') return done;
    // The ledger's own word on the authorization once the receipt is in (settled).
    authorization = await target.ledger.showAuthorization(authorization.token_id);
    return { ...done, result: { ...done.result, authorization_status: authorization.status } };
  } catch (error) {
    throw withWhatStays(error, authorization.token_id, executionId);
  }
}

/** Failures of the stack itself (not of the job): the call can be resumed once the stack answers. */
const TRANSIENT = new Set(['executor_unreachable', 'executor_not_ready', 'executor_server_error', 'executor_bad_response', 'ledger_unreachable', 'ledger_server_error', 'ledger_bad_response']);

const STACK_MESSAGES: Readonly<Record<string, string>> = {
  executor_unreachable: "The stack's executor does not answer.",
  ledger_unreachable: "The stack's ledger does not answer.",
  executor_not_ready: "The stack's executor is not admitting executions right now.",
  executor_server_error: "The stack's executor failed to answer.",
  ledger_server_error: "The stack's ledger failed to answer.",
  executor_bad_response: "The stack's executor answered with something lexec cannot read (a version mismatch?).",
  ledger_bad_response: "The stack's ledger answered with something lexec cannot read (a version mismatch?).",
  executor_unauthorized: "The stack's executor refused this agent's caller credential.",
  ledger_unauthorized: "The stack's ledger refused this agent's credential.",
};

/** An error already worded for the agent (what stays, how to resume): shown as it is. */
class AgentWorded extends UserError {}

/**
 * The agent's words for a failure of the stack: what happened without the endpoint, and what to
 * tell the operator. Other errors keep their own message.
 */
export function agentWording(error: UserError): { message: string; nextStep: string } {
  // The executor's own words name its URL, which the agent never sees (it read "<url>").
  if (error.code === 'executor_not_found' && !(error instanceof AgentWorded)) {
    return { message: "The stack's executor has no execution with that id.", nextStep: 'Use an execution_id a generate_images call returned.' };
  }
  const message = error instanceof AgentWorded ? undefined : STACK_MESSAGES[error.code];
  if (message === undefined) return { message: error.message, nextStep: error.nextStep };
  return { message, nextStep: 'Ask the operator to check the stack (`lexec stack status`), then call again.' };
}

/** A stack failure after the authorization exists: say what stays and how to resume. */
function withWhatStays(error: unknown, tokenId: string, executionId: string | null): unknown {
  if (!(error instanceof UserError) || !TRANSIENT.has(error.code)) return error;
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

async function obtainAuthorization(target: AgentTarget, authorizationId: string | undefined, priced: RunQuote): Promise<LedgerAuthorization> {
  if (authorizationId === undefined) {
    const label = priced.target.label ?? priced.target.target_id;
    const purpose = `lexec agent: ${priced.imageCount} x ${priced.imageSize} image${priced.imageCount === 1 ? '' : 's'}, ${label}`.slice(0, 200);
    return target.ledger.requestAuthorization({ amountUnits: priced.amountUnits, purpose });
  }
  let existing: LedgerAuthorization;
  try {
    existing = await target.ledger.showAuthorization(authorizationId);
  } catch (error) {
    if (error instanceof UserError && error.code === 'ledger_not_found') {
      throw invalidArgument('authorization_id names no authorization of this agent.', ['authorization_id'], 'Use the authorization_id a generate_images call returned, or leave it out to request a new one.');
    }
    throw error;
  }
  if ((existing.status === 'approved' || existing.status === 'requested') && existing.amount_units < priced.amountUnits) {
    throw invalidArgument(
      `authorization ${existing.token_id} holds ${formatUnits(existing.amount_units, existing.currency)}, less than this job costs (${formatUnits(priced.amountUnits, 'USD')}).`,
      ['authorization_id'],
      'Call with the same prompt, image_size and image_count as the call that requested it, or without authorization_id to request a new one.',
    );
  }
  return existing;
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
