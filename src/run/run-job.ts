import { formatUnits } from '../domain/money.js';
import { ExitCode, UserError } from '../errors.js';
import type { ExecutionView } from '../executor/client/executor-client.js';
import { connectStackExecutor } from '../stack-client/connect-executor.js';
import { connectStackLedger } from '../stack-client/connect-ledger.js';
import { activeStack, stackStopped } from '../stack-client/locate-stack.js';
import { admitJob, NOT_READY_WINDOW_MS, refuseIfExecutorCannotAdmit } from '../stack-client/paid-job/admission.js';
import { followExecution } from '../stack-client/paid-job/follow-execution.js';
import {
  approveCommand,
  denyCommand,
  obtainAuthorization,
  resumeCommand,
  takenByAnotherJob,
  waitForDecision,
  type AuthorizationChoice,
  type ObtainedAuthorization,
} from '../stack-client/paid-job/job-authorization.js';
import { jobDelivery, type JobDelivery } from '../stack-client/paid-job/job-delivery.js';
import { isStackFailure } from '../stack-client/paid-job/job-failures.js';
import { executionRequestBody } from '../stack-client/paid-job/job-request.js';
import { refuseUnusable } from '../stack-client/paid-job/usable-authorization.js';
import { collectExecution, type RunProgress, type Spent } from './collect-execution.js';
import { prepareOutputDir } from './prepare-output-dir.js';
import { quoteForRun } from './quote-for-run.js';
import { policyRoom, type PolicyRoom } from '../stack-client/paid-job/policy-room.js';
import type { JobQuote } from '../stack-client/paid-job/quote.js';

/*
 * `lexec run` (docs/run.md): on the selected profile's running stack, quote the request with the
 * executor's pricing, obtain a spend authorization as the profile's local agent, submit the
 * execution with the caller capability, follow it to a terminal state, save the images and
 * report the exact spend. Every wait is bounded (--timeout) and can be interrupted; an
 * interruption takes effect only at a safe point — never between sending a request and reading
 * its answer — so the operator is always told exactly what stays behind and how to continue
 * (`--authorization <token_id>` with the same command: an identical request is a replay).
 */

export interface RunRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profile: string | undefined;
  readonly prompt: string;
  readonly size: string | undefined;
  readonly count: number;
  readonly target: string | undefined;
  /** Absolute output directory. */
  readonly outDir: string;
  /** Wait for an approval (false: `--no-wait`, return at once while one is needed). */
  readonly wait: boolean;
  /** How long the run may wait in total (approval, admission, execution), in milliseconds. */
  readonly timeoutMs: number;
  /** Continue with an existing authorization instead of requesting one. */
  readonly authorization: string | undefined;
  /** Ctrl-C. */
  readonly signal: AbortSignal;
  readonly progress: (event: RunProgress) => void;
}

export type { RunProgress };

export interface RunResult {
  readonly profile: string;
  readonly authorization: { readonly token_id: string; readonly status: string; readonly amount_units: bigint };
  /** The command that approves the authorization while it awaits a human; null otherwise. */
  readonly approve_command: string | null;
  readonly execution: { readonly execution_id: string; readonly state: string } | null;
  readonly spent: Spent | null;
  /** What the execution delivered against what was asked (null until it succeeded); `partial`: fewer images than asked, exit 6. */
  readonly delivery: JobDelivery | null;
  readonly out_dir: string;
  readonly files: readonly { readonly path: string; readonly bytes: number; readonly sha256: string }[];
}

export interface RunDependencies {
  readonly now: () => number;
  /** Resolves after `ms`, or early when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

const defaultDependencies: RunDependencies = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    }),
};

const APPROVAL_POLL_MS = 1_000;

/** Where a run stands, for what an interruption or a timeout leaves behind. */
type Stage =
  | { readonly at: 'preparing' }
  | { readonly at: 'approval' | 'approved' | 'admitting'; readonly tokenId: string }
  | { readonly at: 'execution'; readonly tokenId: string; readonly executionId: string };

function continueStep(tokenId: string): string {
  return `run the same \`lexec run\` command again with --authorization ${tokenId}`;
}

/**
 * What stays behind at `stage`, and how to go on. `stopped`: the stack was stopped under the run;
 * `engineDown`: the follow last heard that the executor's workflow engine does not answer.
 */
function leftBehind(stage: Stage, profile: string, how: { readonly stopped?: boolean; readonly engineDown?: boolean } = {}): { what: string; next: string } {
  const { stopped = false, engineDown = false } = how;
  if (stopped && stage.at === 'execution') {
    return {
      what: `The stack of profile "${profile}" was stopped while execution ${stage.executionId} ran: the execution is kept (authorization ${stage.tokenId} stays claimed for it) and goes on when the stack starts again.`,
      next: `Start it (\`lexec stack start --profile ${profile}\`), then ${continueStep(stage.tokenId)} to follow it and save its images; nothing is spent twice.`,
    };
  }
  if (stopped && stage.at !== 'preparing') {
    const left = leftBehind(stage, profile);
    return { what: `The stack of profile "${profile}" was stopped. ${left.what}`, next: `Start it (\`lexec stack start --profile ${profile}\`). Then ${left.next.charAt(0).toLowerCase()}${left.next.slice(1)}` };
  }
  switch (stage.at) {
    case 'preparing':
      return { what: 'Nothing was requested or spent.', next: 'Run the command again when ready.' };
    case 'approval':
      return {
        what: `Authorization ${stage.tokenId} stays requested; nothing was spent.`,
        next: `Once it is approved (\`${approveCommand(stage.tokenId, profile)}\`), ${continueStep(stage.tokenId)}.`,
      };
    case 'approved':
      return {
        what: `Authorization ${stage.tokenId} stays approved and unused (it expires unused); nothing was spent.`,
        next: `To use it, ${continueStep(stage.tokenId)}.`,
      };
    case 'admitting':
      return {
        what: `Authorization ${stage.tokenId} may already be claimed for an execution the executor admitted without its answer reaching this command; nothing is spent twice.`,
        next: `To continue with it, ${continueStep(stage.tokenId)} (an identical request is answered as a replay).`,
      };
    case 'execution':
      return {
        what: engineDown
          ? `Execution ${stage.executionId} is held in the executor until its workflow engine answers again, and resumes then (authorization ${stage.tokenId} is claimed for it).`
          : `Execution ${stage.executionId} continues in the executor (authorization ${stage.tokenId} is claimed for it).`,
        next: `To follow it and save its images, ${continueStep(stage.tokenId)}; nothing is spent twice.`,
      };
  }
}

/** Runs one job end to end. */
export async function runJob(request: RunRequest, deps: RunDependencies = defaultDependencies): Promise<RunResult> {
  // Where the images go is checked before anything is requested or spent.
  await prepareOutputDir(request.outDir);
  const stack = await activeStack(request.env, request.profile);
  const profile = stack.paths.name;
  const ledger = await connectStackLedger(stack, 'agent');
  const executor = await connectStackExecutor(stack, 'caller');
  const deadline = deps.now() + request.timeoutMs;
  let stage: Stage = { at: 'preparing' };
  /** The follow said the workflow engine does not answer, and has not said it is back. */
  let engineDown = false;
  const progress = (event: RunProgress) => {
    if (event.kind === 'engine_unreachable' || event.kind === 'engine_back') engineDown = event.kind === 'engine_unreachable';
    request.progress(event);
  };

  /** A safe point: stop here if Ctrl-C was pressed or the time is up. */
  const checkpoint = () => {
    const { what, next } = leftBehind(stage, profile, { engineDown });
    if (request.signal.aborted) {
      throw new UserError('run_interrupted', `Interrupted. ${what}`, { nextStep: next, exitCode: ExitCode.interrupted });
    }
    if (deps.now() >= deadline) {
      throw new UserError('run_timeout', `Gave up waiting after ${Math.round(request.timeoutMs / 1000)} s (--timeout). ${what}`, { nextStep: next });
    }
  };
  const pause = async (ms: number) => {
    await deps.sleep(Math.max(0, Math.min(ms, deadline - deps.now())), request.signal);
    checkpoint();
  };

  const quote = quoteForRun(await executor.targets(), request.target, request.size, request.count);
  request.progress({
    kind: 'quoted',
    target_id: quote.target.target_id,
    label: quote.target.label ?? null,
    image_size: quote.imageSize,
    image_count: quote.imageCount,
    amount_units: quote.amountUnits,
  });
  checkpoint();
  // Before an authorization is asked for: a stack that cannot run the job (a full disk) holds nothing.
  await refuseIfExecutorCannotAdmit(executor).catch((error: unknown) => {
    throw withWhatStays(error, leftBehind(stage, profile));
  });

  // After a suspension: the operator resumes the profile's agent, then runs anew (no --authorization: a cancelled one stays cancelled).
  const afterResume = (agentId: string) =>
    `Once the agent may spend again, resume it (\`${resumeCommand(agentId, profile)}\`), then run \`lexec run\` again without --authorization to request a new authorization.`;
  const choice: AuthorizationChoice = {
    refused: async (reason) => policyRefused(await policyRoom(ledger, quote, reason), quote),
    suspended: (agentId, by) => {
      const id = agentId ?? stack.handoff.agent?.agent_id ?? 'unknown';
      if (by === 'velocity_breaker') {
        return new UserError('agent_suspended', `The ledger suspended agent ${id} (the profile's local agent) automatically: its policy's runaway-loop breaker tripped after repeated requests over the velocity limit. It refuses the agent's new spend requests; nothing was requested or spent.`, {
          nextStep: `Find out what sent the requests in a loop and stop it; then resume the agent (\`${resumeCommand(id, profile)}\`) and run the command again. If the rate was intended, raise the limit with \`lexec ledger policy set --profile ${profile}\`.`,
        });
      }
      return new UserError('agent_suspended', `An operator suspended agent ${id} (the profile's local agent): the ledger refuses its new spend requests; nothing was requested or spent.`, {
        nextStep: `Once it may spend again, resume it (\`${resumeCommand(id, profile)}\`), then run the command again.`,
      });
    },
    // Not retried: every request counts against the limit, refused ones too.
    tooFast: (seconds, limit) =>
      new UserError('velocity_exceeded', `The ledger refused the spend request: the profile's agent made more requests than its policy's velocity limit${limit === null ? '' : ` (${limit})`} allows; nothing was requested or spent.`, {
        nextStep: `Wait ${seconds} s, then run the command again (every request counts, refused ones too: retrying sooner only pushes the wait out). Or raise the limit: \`lexec ledger policy show --agent-id ${stack.handoff.agent?.agent_id ?? '<agent_id>'} --profile ${profile} --export <file>\`, edit ${limit ?? 'max_requests_per_minute / max_requests_per_hour'}, then \`lexec ledger policy set --file <file>\` with the same flags.`,
      }),
    existingId: request.authorization,
    client: 'lexec run',
    prompt: request.prompt,
    insufficient: (existing) =>
      new UserError('authorization_insufficient', `Authorization ${existing.token_id} holds ${formatUnits(existing.amount_units, existing.currency)}, less than this request costs (${formatUnits(quote.amountUnits, 'USD')}).`, {
        nextStep: 'Run the command with the same prompt, size and count as the run that requested it, or without --authorization to request a new one.',
      }),
  };
  /** Requests (or continues) the job's authorization and says which. */
  const obtain = async (): Promise<ObtainedAuthorization> => {
    const got = await obtainAuthorization(ledger, quote, choice);
    const { authorization: held } = got;
    stage = { at: 'approval', tokenId: held.token_id };
    const continued = got.continued ? held.created_at : null;
    request.progress({ kind: 'authorization', token_id: held.token_id, status: held.status, amount_units: held.amount_units, reused: request.authorization !== undefined, continued_from: continued });
    return got;
  };
  let obtained = await obtain();
  let authorization = obtained.authorization;
  const pending = (status: string, execution: RunResult['execution'] = null): RunResult => ({
    profile,
    authorization: { token_id: authorization.token_id, status, amount_units: authorization.amount_units },
    approve_command: status === 'requested' ? approveCommand(authorization.token_id, profile) : null,
    execution,
    spent: null,
    delivery: null,
    out_dir: request.outDir,
    files: [],
  });

  // From here on an authorization exists: a transient failure must say what stays behind.
  const proceed = async (requestedAgain = false): Promise<RunResult> => {
    if (authorization.status === 'requested') {
      request.progress({
        kind: 'approval_needed',
        token_id: authorization.token_id,
        approve_command: approveCommand(authorization.token_id, profile),
        deny_command: denyCommand(authorization.token_id, profile),
        expires_at: authorization.expires_at,
        waiting: request.wait,
      });
      if (!request.wait) return pending('requested');
      authorization = await waitForDecision(ledger, authorization, pause, APPROVAL_POLL_MS);
      request.progress({ kind: 'authorization', token_id: authorization.token_id, status: authorization.status, amount_units: authorization.amount_units, reused: false, continued_from: null });
    }
    const again = 'Run `lexec run` again without --authorization to request a new authorization.';
    refuseUnusable(authorization, again, afterResume);
    stage = { at: 'approved', tokenId: authorization.token_id };
    checkpoint();

    const body = executionRequestBody({ tokenId: authorization.token_id, prompt: request.prompt, targetId: quote.target.target_id, imageSize: quote.imageSize, imageCount: quote.imageCount });
    const admit = (): Promise<ExecutionView> =>
      admitJob(executor, body, {
        until: Math.min(deadline, deps.now() + NOT_READY_WINDOW_MS),
        now: deps.now,
        onNotReady: () => {
          request.progress({ kind: 'executor_not_ready' });
        },
        wait: pause,
        reread: () => ledger.showAuthorization(authorization.token_id),
        again,
        suspended: afterResume,
      });
    stage = { at: 'admitting', tokenId: authorization.token_id };
    let execution: ExecutionView;
    try {
      execution = await admit();
    } catch (error) {
      // Another job took the request this run continued: request once more (its key is free now), once.
      if (requestedAgain || !(await takenByAnotherJob(error, obtained, () => ledger.showAuthorization(authorization.token_id)))) throw error;
      request.progress({ kind: 'authorization_taken', token_id: authorization.token_id });
      obtained = await obtain();
      authorization = obtained.authorization;
      return proceed(true);
    }
    stage = { at: 'execution', tokenId: authorization.token_id, executionId: execution.execution_id };
    execution = await followExecution(executor, execution, {
      progress,
      pause,
      admit,
      now: deps.now,
      remainingMs: () => deadline - deps.now(),
      signal: request.signal,
      stackStopped: () => stackStopped(request.env, profile),
    });
    const settled = await collectExecution(executor, execution, { profile, outDir: request.outDir, progress: request.progress, checkpoint, pause, now: deps.now });
    const delivery = jobDelivery(execution);
    if (delivery?.partial === true) request.progress({ kind: 'partial_delivery', execution_id: execution.execution_id, delivery, spent: settled.spent });
    const final = await ledger.showAuthorization(authorization.token_id);
    return {
      ...pending(final.status, { execution_id: execution.execution_id, state: execution.state }),
      spent: settled.spent,
      delivery,
      files: settled.files.map(({ path, bytes, sha256 }) => ({ path, bytes, sha256 })),
    };
  };
  try {
    return await proceed();
  } catch (error) {
    // `proceed` moves the stage on; read it as the union it is, not as narrowed before the call.
    const reached = stage as Stage;
    if (reached.at === 'execution') {
      const saved = afterSettlement(error, reached.tokenId);
      if (saved !== null) throw saved;
    }
    // A stack stopped under the run is no outage to wait out: say so, and how to go on.
    const stopped = isStackFailure(error) && (await stackStopped(request.env, profile));
    throw withWhatStays(error, leftBehind(stage, profile, { stopped, engineDown }), stopped);
  }
}

/** Failures saving the images of a paid execution: the message names the exact command that fetches them again. */
const SAVE_FAILURES = new Set(['output_file_unwritable', 'output_file_exists', 'artifact_corrupt']);

function afterSettlement(error: unknown, tokenId: string): UserError | null {
  if (!(error instanceof UserError) || !SAVE_FAILURES.has(error.code)) return null;
  const again = `run the same \`lexec run\` command again with --authorization ${tokenId} (add --out <another directory> if this one is the problem): it fetches the images of the execution already paid for; nothing is spent twice`;
  const nextStep = error.nextStep.includes('<token_id>') ? error.nextStep.replaceAll('<token_id>', tokenId) : `${error.nextStep} Then ${again}.`;
  return new UserError(error.code, error.message, { nextStep, issues: error.issues, exitCode: error.exitCode });
}

/** Failures of the stack leave the run's authorization or execution in place: say what stays and how to continue. */
function withWhatStays(error: unknown, left: { what: string; next: string }, stopped = false): unknown {
  if (!isStackFailure(error)) return error;
  // A stopped stack needs no checking of its servers: only the start, then the continuation.
  const nextStep = stopped ? left.next : `${error.nextStep} Then ${left.next.charAt(0).toLowerCase()}${left.next.slice(1)}`;
  return new UserError(error.code, `${error.message} ${left.what}`, { nextStep, issues: error.issues, exitCode: error.exitCode });
}

/** The spend policy refused the run: what it costs against the cap that refused it, and what would fit. */
function policyRefused(room: PolicyRoom, quote: JobQuote): UserError {
  const costs = `This run costs ${formatUnits(quote.amountUnits, room.currency)} (${quote.imageCount} x ${quote.imageSize})`;
  const policy = 'have an admin raise it (`lexec ledger policy show` shows the policy, `lexec ledger policy set` changes it)';
  if (room.reason === 'per_authorization_cap_exceeded') {
    const cap = formatUnits(room.per_authorization_cap_units, room.currency);
    return new UserError('ledger_policy_refused', `${costs}, more than the agent's per-authorization cap of ${cap}; nothing was requested or spent.`, {
      nextStep:
        room.largest_count > 0
          ? `Run it with --count ${room.largest_count} or fewer (the most ${quote.imageSize} images within ${cap}), or ${policy}.`
          : `Not one ${quote.imageSize} image fits within ${cap}: use a smaller --size, or ${policy}.`,
    });
  }
  if (room.reason === 'budget_exceeded') {
    const budget = room.budget;
    const name = budget?.budget ?? 'a budget';
    const left = budget?.remaining_units == null ? '' : ` (${formatUnits(budget.remaining_units, room.currency)} left${budget.limit_units === null ? '' : ` of ${formatUnits(budget.limit_units, room.currency)}`})`;
    const period = budget?.period ?? 'period';
    return new UserError('ledger_policy_refused', `${costs}, more than is left of the budget ${name} this ${period}${left}; nothing was requested or spent.`, {
      nextStep: `Run fewer images, wait for the next ${period}${budget?.period_end == null ? '' : ` (from ${budget.period_end})`}, or have an admin raise the budget (\`lexec ledger policy show\` shows the agent's budgets, \`lexec ledger budget show\` the installation's).`,
    });
  }
  return new UserError('ledger_policy_refused', `${costs}, more than is left of the agent's daily cap in the rolling 24 hours (${formatUnits(room.remaining_units, room.currency)} left); nothing was requested or spent.`, {
    nextStep: `Wait until earlier spend leaves the 24-hour window, run fewer images, or ${policy}.`,
  });
}
