import type { CredentialKind } from '../../credentials/capability.js';
import { UserError, type FieldIssue, type UserErrorOptions } from '../../errors.js';
import { plain } from '../../terminal/plain-text.js';
import { tlsFailure } from '../../http/tls-trust.js';
import type { LedgerErrorBody } from '../wire/answers.js';

/** What a request was for, so a refusal can be explained in the caller's terms. */
export interface RequestContext {
  /** The ledger base URL (validated: no credentials, query or fragment), named in messages. */
  readonly url: string;
  /** The capability kinds the route accepts. */
  readonly needs: readonly CredentialKind[];
  /** The kind the presented capability declares in its prefix (not secret). */
  readonly presented: CredentialKind | null;
  /** What a 404 means for this route. */
  readonly subject: 'agent' | 'authorization' | 'credential' | 'webhook' | 'enrolment';
}

// Codes, reasons and field paths come from the server. They are shown to the operator, so only
// plain tokens pass: a misbehaving server must not be able to write terminal escapes or text.
const SAFE_CODE = /^[A-Za-z0-9_.:-]{1,80}$/;
const SAFE_FIELD = /^[A-Za-z0-9_.[\]?()-]{1,160}$/;

const safeCode = (value: string | undefined): string | undefined => (value !== undefined && SAFE_CODE.test(value) ? value : undefined);

function article(kind: string): string {
  return /^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`;
}

function kinds(list: readonly CredentialKind[]): string {
  return list.length <= 1 ? article(list[0] ?? 'unknown') : `${list.slice(0, -1).map(article).join(', ')} or ${article(list.at(-1) ?? '')}`;
}

/** The reason code and field paths of an error body as issues; paths are request-body fields. */
function issuesOf(body: LedgerErrorBody | null): FieldIssue[] {
  if (body === null) return [];
  const reason = safeCode(body.reason_code) ?? safeCode(body.code) ?? 'refused';
  const fields = (body.fields ?? []).filter((field) => SAFE_FIELD.test(field));
  if (fields.length > 0) return fields.map((path) => ({ path, message: `refused by the ledger (${reason})` }));
  return body.reason_code === undefined ? [] : [{ path: '(request)', message: `refused by the ledger (${reason})` }];
}

function conflictNextStep(reason: string | undefined): string {
  if (reason === 'agent_exists') return 'Choose another name; `lexec ledger agents list` shows the agents that exist.';
  if (reason === 'credential_exists') return 'That credential is already registered differently; run the command again to issue a new one.';
  if (reason === 'last_admin_credential') {
    return 'The ledger keeps at least one admin credential: rotate it instead (`lexec ledger credentials rotate <credential_id> --credential-file …`), then revoke the old one if it is still in its grace.';
  }
  if (reason === 'credential_revoked') return 'That credential is revoked and stays so; issue a new one (`lexec ledger credentials create`), or rotate the one that replaced it.';
  if (reason === 'credential_already_rotated') return 'It was already rotated: `lexec ledger credentials list` shows the credential that replaced it (`replaced_by`); rotate that one.';
  if (reason === 'idempotency_key_reused') {
    return 'That idempotency key names an open authorization requested with another amount or purpose; nothing was requested. Repeat that request exactly to continue it, or use another key for a different request (the key is free again once its authorization is claimed or final).';
  }
  if (reason?.startsWith('authorization_') === true) {
    return 'Only a requested authorization can be decided; `lexec ledger authorizations show <token_id>` shows where it stands.';
  }
  return 'Look at the current state with the matching `lexec ledger … show` or `list` command before changing it.';
}

/**
 * Whether a failed request may still have changed the ledger: it was not answered (unreachable, a
 * server error, an answer lexec cannot read), so what it asked for may have committed. A refusal
 * the ledger answered proves nothing changed. Anything else (not a UserError) is treated as lost.
 */
export function answerMayBeLost(error: unknown): boolean {
  return !(error instanceof UserError) || ['ledger_unreachable', 'ledger_bad_response', 'ledger_server_error'].includes(error.code);
}

/** Another approver decided the request first (or it was decided the other way): by whom and when. */
export class LedgerAlreadyDecided extends UserError {
  constructor(
    readonly decision: string,
    /** The named approver's name; null for the policy or an unnamed credential. */
    readonly decidedByName: string | null,
    readonly decidedAt: string,
    message: string,
    options: UserErrorOptions,
  ) {
    super('ledger_already_decided', message, options);
  }
}

/** The budget a `budget_exceeded` refusal names (docs/ledger.md "Budgets"); any field the ledger left out is null. */
export interface BudgetRefusal {
  readonly budget: string | null;
  readonly period: string | null;
  readonly period_end: string | null;
  readonly limit_units: bigint | null;
  readonly committed_units: bigint | null;
  readonly remaining_units: bigint | null;
}

/** The ledger refused a request under the agent's spend policy; `reason` is the ledger's reason code (e.g. `per_authorization_cap_exceeded`). */
export class LedgerPolicyRefused extends UserError {
  constructor(
    readonly reason: string | null,
    message: string,
    options: UserErrorOptions,
    /** With `budget_exceeded`: the budget that refused it and what remains. */
    readonly budget: BudgetRefusal | null = null,
  ) {
    super('ledger_policy_refused', message, options);
  }
}

function budgetRefusal(body: LedgerErrorBody): BudgetRefusal {
  return {
    budget: body.budget === undefined ? null : plain(body.budget),
    period: safeCode(body.period) ?? null,
    period_end: body.period_end ?? null,
    limit_units: body.limit_units ?? null,
    committed_units: body.committed_units ?? null,
    remaining_units: body.remaining_units ?? null,
  };
}

/** "the budget agent.month (this month) has 1.50 USD left of 10.00 USD" — in micro-units, exact. */
export function budgetSentence(budget: BudgetRefusal): string {
  const name = budget.budget ?? 'a budget';
  const left = budget.remaining_units === null ? '' : `; ${budget.remaining_units.toString()} micro-units remain`;
  const limit = budget.limit_units === null ? '' : ` of its ${budget.limit_units.toString()}`;
  return `the request would pass the budget ${name}${budget.period === null ? '' : ` (this ${budget.period})`}${left}${limit}`;
}

/**
 * The ledger refused a policy change made from a version the policy is no longer at (412
 * `policy_version_mismatch`): nothing changed. `currentVersion` is the version it is at now
 * (null if the ledger did not say), so the caller can look at it and try again from there.
 */
export class LedgerPolicyVersionMismatch extends UserError {
  constructor(
    readonly currentVersion: bigint | null,
    message: string,
    options: UserErrorOptions,
  ) {
    super('ledger_policy_version_mismatch', message, options);
  }
}

/** The installation budget was changed since the version expected: nothing changed (`lexec ledger budget set --expect-version`). */
export class LedgerBudgetVersionMismatch extends UserError {
  constructor(
    readonly currentVersion: bigint | null,
    message: string,
    options: UserErrorOptions,
  ) {
    super('ledger_budget_version_mismatch', message, options);
  }
}

function versionMismatch(url: string, said: string, current: bigint | null): LedgerPolicyVersionMismatch {
  const now = current === null ? 'another version' : `version ${current.toString()}`;
  return new LedgerPolicyVersionMismatch(current, `The ledger at ${url} changed nothing: the policy is at ${now} now, not the version expected (${said}).`, {
    nextStep: `Someone changed the policy since: look at it (\`lexec ledger policy show\`), make your change on top of it, then set it again${current === null ? ' with --expect-version <its version>' : ` with --expect-version ${current.toString()}`}.`,
    issues: [{ path: '--expect-version', message: `refused by the ledger (policy_version_mismatch): the policy is at ${now}` }],
  });
}

/**
 * The ledger refused an agent's spend request because an operator suspended the agent (403
 * `forbidden` / `agent_suspended`). Each client words it for its own surface (`lexec run`, the
 * agent's tools) with the agent's id; as it is, it says what an admin does.
 */
export class LedgerAgentSuspended extends UserError {
  constructor(
    message: string,
    options: UserErrorOptions,
    /** `velocity_breaker` when the agent's own policy suspended it automatically (its runaway-loop breaker); else `operator`. */
    readonly suspendedBy: 'operator' | 'velocity_breaker' = 'operator',
  ) {
    super('agent_suspended', message, options);
  }
}

/**
 * The ledger refused an agent's spend request over its policy's velocity limit (429
 * `too_many_requests` / `velocity_exceeded`): nothing was requested. `retryAfterSeconds` is how
 * long the agent must send nothing before a request is within the limit again (every request
 * counts, refused ones too); `limit` the policy field it is over. Each client words it for its
 * own surface; as it is, it says what waiting and the admin can do.
 */
export class LedgerVelocityExceeded extends UserError {
  constructor(
    readonly retryAfterSeconds: number,
    readonly limit: string | null,
    message: string,
    options: UserErrorOptions,
  ) {
    super('ledger_velocity_exceeded', message, options);
  }
}

/** Seconds in a `Retry-After` header of whole seconds (the ledger's form); null for anything else. */
export function retryAfterSeconds(header: string | null): number | null {
  return header !== null && /^\d{1,9}$/.test(header) ? Number(header) : null;
}

/**
 * Maps a ledger error response to a `UserError` with a stable code. The message names the URL,
 * the status and the server's reason code; it never contains a capability or a submitted value.
 * `body` is null when the response was not a lexec error body.
 */
export function ledgerResponseError(status: number, body: LedgerErrorBody | null, context: RequestContext, retryAfter: number | null = null): UserError {
  const code = safeCode(body?.code) ?? 'unknown';
  const reason = safeCode(body?.reason_code);
  const said = `${status} ${code}${reason === undefined ? '' : `: ${reason}`}`;
  const issues = issuesOf(body);
  if (status === 403 && code === 'forbidden' && reason === 'agent_suspended') {
    const resume = 'Only an admin can let it spend again: `lexec ledger agents resume --agent-id <agent_id>` (`lexec ledger agents list` shows which agents are suspended).';
    if (body?.suspended_by === 'velocity_breaker') {
      return new LedgerAgentSuspended(
        `The ledger at ${context.url} refused the request: it suspended this agent automatically after repeated requests over its velocity limit (the policy's runaway-loop breaker), so its new spend requests are refused (${said}); nothing was requested.`,
        { nextStep: `Find out why the agent looped before it spends again. ${resume}` },
        'velocity_breaker',
      );
    }
    return new LedgerAgentSuspended(`The ledger at ${context.url} refused the request: an operator suspended this agent, so its new spend requests are refused (${said}); nothing was requested.`, {
      nextStep: resume,
    });
  }
  if (status === 429 && reason === 'velocity_exceeded') {
    const seconds = retryAfter ?? body?.retry_after_seconds ?? 60;
    const limit = safeCode(body?.velocity_limit) ?? null;
    return new LedgerVelocityExceeded(seconds, limit, `The ledger at ${context.url} refused the request: the agent made more requests than its policy's velocity limit${limit === null ? '' : ` (${limit})`} allows (${said}); nothing was requested.`, {
      nextStep: `Wait ${seconds} s before the next request, without retrying meanwhile (every request counts, refused ones too), or have an admin raise the limit (\`lexec ledger policy show\` shows it, \`lexec ledger policy set\` changes it).`,
    });
  }
  if (context.subject === 'enrolment' && (status === 401 || (status === 403 && code === 'enrolment_refused'))) return enrolmentRefused(context.url, reason ?? 'unknown_token', said);
  if (status === 401 || status === 403) {
    const presented = context.presented === null ? 'the capability' : `the ${context.presented} capability`;
    return new UserError('ledger_unauthorized', `The ledger at ${context.url} refused ${presented} (${said}): this request needs ${kinds(context.needs)} capability this ledger accepts — registered here, and not revoked.`, {
      nextStep: `Use the token file of ${kinds(context.needs)} capability issued by this ledger (\`lexec ledger credentials create\` makes one, \`lexec ledger credentials list\` shows which are revoked; the admin capability is the ledger's admin_capability_path).`,
    });
  }
  if (status === 404) {
    return new UserError('ledger_not_found', `The ledger at ${context.url} has no such ${context.subject} (${said}).`, {
      nextStep: `Check the ${context.subject} id (\`lexec ledger ${context.subject}s list\` lists them) and that --url names the right ledger.`,
      issues,
    });
  }
  const decided = /^authorization_(approved|denied)$/.exec(reason ?? '')?.[1];
  if (status === 409 && decided !== undefined && body?.decided_at !== undefined) {
    // Lost to another approver (or decided the other way before): who, and when.
    const who = body.decided_by_name !== undefined ? plain(body.decided_by_name) : body.decided_by === 'policy' ? 'the policy (below the approval threshold)' : `approver credential ${safeCode(body.decided_by) ?? 'unknown'}`;
    return new LedgerAlreadyDecided(decided, body.decided_by_name === undefined ? null : plain(body.decided_by_name), body.decided_at, `The request was already ${decided} by ${who} at ${body.decided_at}; nothing changed.`, {
      nextStep: '`lexec ledger authorizations show <token_id>` shows the decision and its reason.',
    });
  }
  if (status === 409) {
    return new UserError('ledger_conflict', `The ledger at ${context.url} refused the change because it conflicts with the current state (${said}).`, {
      nextStep: conflictNextStep(reason),
      issues,
    });
  }
  if (status === 412 && code === 'policy_version_mismatch') return versionMismatch(context.url, said, body?.current_version ?? null);
  if (status === 412 && code === 'budget_version_mismatch') {
    const now = body?.current_version === undefined ? 'another version' : `version ${body.current_version.toString()}`;
    return new LedgerBudgetVersionMismatch(body?.current_version ?? null, `The ledger at ${context.url} changed nothing: the installation budget is at ${now} now, not the version expected (${said}).`, {
      nextStep: 'Look at it again (`lexec ledger budget show`), then set it from that version.',
      issues: [{ path: '--expect-version', message: `refused by the ledger (budget_version_mismatch): the budget is at ${now}` }],
    });
  }
  if (status === 422 && code === 'policy_refused' && reason === 'budget_exceeded' && body !== null) {
    const budget = budgetRefusal(body);
    return new LedgerPolicyRefused(reason, `The ledger at ${context.url} refused the request: ${budgetSentence(budget)} (${said}).`, {
      nextStep: `Ask for at most what remains, wait for the next ${budget.period ?? 'period'} (from ${budget.period_end ?? 'its end'}), or have an admin raise the budget (\`lexec ledger policy show\` shows the agent's budgets, \`lexec ledger budget show\` the installation's).`,
      issues,
    }, budget);
  }
  if (status === 422 && code === 'policy_refused' && (reason === 'target_required' || reason === 'target_not_allowed')) {
    return new LedgerPolicyRefused(reason, `The ledger at ${context.url} refused the request: ${reason === 'target_required' ? 'the agent may pay only for the targets its policy lists, and the request named none' : "the target is not on the agent's allow-list"} (${said}).`, {
      nextStep: "Use a target the agent's policy allows (`lexec ledger policy show` lists them), or have an admin add it (`lexec ledger policy set`).",
      issues,
    });
  }
  if (status === 422 && code === 'policy_refused') {
    return new LedgerPolicyRefused(reason ?? null, `The ledger at ${context.url} refused the request under the agent's spend policy (${said}).`, {
      nextStep:
        reason === 'per_authorization_cap_exceeded'
          ? 'Ask for at most the per-authorization cap (`lexec ledger policy show` shows it), or have an admin raise it (`lexec ledger policy set`).'
          : reason === 'daily_cap_exceeded'
            ? 'Wait until earlier spend leaves the rolling 24-hour window, ask for less, or have an admin raise the daily cap (`lexec ledger policy set`).'
            : 'Ask for a smaller amount, or have an admin raise the policy (`lexec ledger policy show` shows it, `lexec ledger policy set` changes it).',
      issues,
    });
  }
  if (status === 400 || status === 413 || status === 415 || status === 422) {
    return new UserError('ledger_invalid_request', `The ledger at ${context.url} refused the request as invalid (${said}).`, {
      nextStep: 'Correct the fields listed (docs/ledger-cli.md describes each flag) and try again.',
      issues,
    });
  }
  if (status >= 500) {
    return new UserError('ledger_server_error', `The ledger at ${context.url} failed to answer the request (${said}).`, {
      nextStep:
        status === 503 ? 'The ledger is starting or stopping; try again in a moment.' : "Check the ledger's log (JSON lines on its stderr) and try again.",
    });
  }
  return badResponse(context.url, `an unexpected status ${status}`);
}

/** The service at the URL answered, but not like a lexec ledger. */
export function badResponse(url: string, what: string): UserError {
  return new UserError('ledger_bad_response', `The service at ${url} answered with ${what}; it does not look like a lexec ledger of this version.`, {
    nextStep: 'Check that --url names the lexec ledger (its base URL, for example http://127.0.0.1:7400) and that the ledger and CLI versions match (`lexec version`, `lexec ledger serve --version`).',
  });
}

/** The socket error code (ECONNREFUSED, ENOTFOUND, …) fetch wrapped in `cause`; a multi-address connect nests it in `errors`. */
function socketCode(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if ('code' in value && typeof value.code === 'string') return safeCode(value.code);
  if ('errors' in value && Array.isArray(value.errors)) return socketCode(value.errors[0]);
  return undefined;
}

/** A request that never got an HTTP answer: refused connection, unknown host, timeout. */
export function unreachable(url: string, error: unknown, timeoutMs: number): UserError {
  // Refused before anything was sent: the server did not prove it is the ledger.
  const tls = tlsFailure(error);
  if (tls !== null) {
    return new UserError('ledger_tls_untrusted', `The ledger at ${url} was not trusted: ${tls.why} (${tls.code}); nothing was sent.`, {
      nextStep: 'Check the URL\'s host against the certificate `lexec stack tls issue --host` made for the ledger, and that the CA file is the team\'s ca.pem; reissue the ledger\'s certificate if it expired.',
    });
  }
  const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
  const cause = error instanceof Error ? error.cause : undefined;
  // fetch refuses a fixed list of ports (6000, 6667, 10080, …) without trying to connect.
  if (cause instanceof Error && cause.message === 'bad port') {
    return new UserError('ledger_unreachable', `The ledger at ${url} cannot be reached: fetch refuses that port (it is on the WHATWG fetch "bad port" list).`, {
      nextStep: 'Run the ledger on another port (the default is 7400) and pass that URL.',
    });
  }
  const detail = timedOut ? `no answer within ${timeoutMs / 1000} s` : (socketCode(cause) ?? 'connection failed');
  return new UserError('ledger_unreachable', `The ledger at ${url} is unreachable (${detail}).`, {
    nextStep: 'Check that the ledger is running (`lexec ledger serve`) and that --url is its base URL, for example http://127.0.0.1:7400.',
  });
}

const ENROLMENT_REFUSALS: Readonly<Record<string, [string, string]>> = {
  unknown_token: ['enrolment_token_unknown', 'it does not know the enrolment token (it never issued it, or it was issued by another ledger)'],
  enrolment_token_used: ['enrolment_token_used', 'the enrolment token was already redeemed (a token is good once)'],
  enrolment_token_expired: ['enrolment_token_expired', 'the enrolment token has expired'],
  enrolment_token_revoked: ['enrolment_token_revoked', 'the enrolment token was revoked'],
  enrolment_agent_mismatch: ['enrolment_agent_mismatch', "the enrolment token was issued for another agent than this profile's [agent].name"],
};

/** A refused redemption (docs/deployment.md "Enrolment"): nothing was registered, the token left as it was. */
function enrolmentRefused(url: string, reason: string, said: string): UserError {
  const [code, why] = ENROLMENT_REFUSALS[reason] ?? ['enrolment_refused', 'it refused the enrolment token'];
  return new UserError(code, `The ledger at ${url} refused the enrolment: ${why} (${said}); nothing was registered.`, {
    nextStep:
      code === 'enrolment_agent_mismatch'
        ? "Ask the ledger host's operator for a token issued with --agent set to this profile's [agent].name, or change [agent].name to the agent the token names (`lexec ledger enrolments list` on the ledger host shows it)."
        : "Ask the ledger host's operator for a new token (`lexec ledger enrolments issue --name <host> --token-file <file>` on the ledger host), then enrol again with it.",
  });
}
