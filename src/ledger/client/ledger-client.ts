import { z } from 'zod';
import { capabilityKind, type CredentialKind } from '../../credentials/capability.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { trustingFetch } from '../../http/tls-trust.js';
import type { AuthorizationStatus } from '../authorization-rules.js';
import { alertsAndReportsCalls } from './ledger-alerts-client.js';
import { enrolmentCalls } from './ledger-enrolments-client.js';
import { queryString, type Call } from './ledger-call.js';
import { badResponse, ledgerResponseError, retryAfterSeconds, unreachable, type RequestContext } from './ledger-client-errors.js';
import {
  agentAnswerSchema,
  agentsAnswerSchema,
  agentSuspensionAnswerSchema,
  auditAnswerSchema,
  authorizationAnswerSchema,
  authorizationRequestAnswerSchema,
  authorizationsAnswerSchema,
  credentialAnswerSchema,
  credentialListSchema,
  credentialRegistrationSchema,
  credentialRevocationSchema,
  credentialRotationSchema,
  errorBodySchema,
  policyAnswerSchema,
  spendingAnswerSchema,
  type CredentialRegistration,
  type LedgerAgent,
  type LedgerCredential,
  type LedgerCredentialRevocation,
  type LedgerCredentialRotation,
  type LedgerAgentSuspension,
  type LedgerAuditPage,
  type LedgerAuthorization,
  type LedgerAuthorizationRequest,
  type LedgerPolicy,
  type LedgerSpending,
  installationBudgetAnswerSchema,
  type LedgerInstallationBudgetAnswer,
} from '../wire/answers.js';
import type { SpendPolicyInput } from '../ledger-config.js';
import type { InstallationBudget as InstallationBudgetInput } from '../budget-rules.js';

export interface LedgerClientOptions {
  /** Base URL of the ledger, e.g. `http://127.0.0.1:7400`; validated by the caller. */
  readonly url: string;
  /** The capability presented as `Authorization: Bearer …`. Never logged or put in an error. */
  readonly token: string;
  /**
   * Reads the capability again from where it came (its file). Given, a request the ledger
   * refuses with 401 is sent once more if the capability changed meanwhile: a long-lived client
   * (a `lexec run` waiting for an approval) follows a rotation instead of failing with it.
   */
  readonly reloadToken?: () => Promise<string>;
  /** Per-request limit; the ledger answers in milliseconds, so a long wait means trouble. */
  readonly timeoutMs?: number;
  /**
   * The CA certificate (PEM) an https:// ledger's certificate must be signed by: the only trust
   * anchor of this client (src/http/tls-trust.ts). Absent: the system's roots.
   */
  readonly caCertificate?: string;
}

/** Credential kinds a client can register; `admin` exists once, created by the ledger itself. */
export type IssuableCredentialKind = Exclude<CredentialKind, 'admin' | 'caller'>;

export interface CredentialRegistrationRequest {
  readonly kind: IssuableCredentialKind;
  readonly agentId: string | null;
  readonly digestSha256: string;
  /** The person it belongs to (a named approver); left out when null or absent. */
  readonly holderName?: string | null;
}

export interface CredentialRotationRequest {
  readonly newCredentialId: string;
  readonly digestSha256: string;
  readonly graceSeconds: number;
}

export interface CredentialListFilter {
  readonly kind?: CredentialKind | undefined;
  readonly agentId?: string | undefined;
}

export interface AuthorizationFilter {
  readonly agentId?: string | undefined;
  readonly status?: AuthorizationStatus | undefined;
  readonly limit?: number | undefined;
}

/** What `GET /audit` is asked for: events after `after`, at or after `since` (an ISO time), of one agent or all. */
export interface AuditFilter {
  readonly since?: string | undefined;
  readonly after?: string | undefined;
  readonly agentId?: string | undefined;
  readonly limit?: number | undefined;
}

const DEFAULT_TIMEOUT_MS = 15_000;

/** JSON with bigint amounts as decimal strings: the ledger reads digit strings, never floats. */
function toJson(body: unknown): string {
  return JSON.stringify(body, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

export type LedgerClient = ReturnType<typeof createLedgerClient>;

/**
 * A typed client of the ledger HTTP API (src/ledger/http/ledger-app.ts). Every answer is parsed
 * with zod; every refusal becomes a `UserError` with a stable `ledger_*` code
 * (ledger-client-errors.ts). The token only ever leaves in the Authorization header.
 */
export function createLedgerClient(options: LedgerClientOptions) {
  const url = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let token = options.token;
  const presented = capabilityKind(options.token);
  const fetch = trustingFetch(options.caCertificate);

  async function exchange(call: Call<z.ZodType>): Promise<{ response: Response; text: string }> {
    const headers: Record<string, string> = { ...call.headers, authorization: `Bearer ${token}`, accept: 'application/json' };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const callTimeoutMs = timeoutMs + (call.extraTimeoutMs ?? 0);
    try {
      const timeout = AbortSignal.timeout(callTimeoutMs);
      const response = await fetch(`${url}${call.path}`, {
        method: call.method,
        headers,
        body: call.body === undefined ? undefined : toJson(call.body),
        // A redirect is reported, never followed: the bearer capability must not travel on.
        redirect: 'manual',
        signal: call.signal === undefined ? timeout : AbortSignal.any([timeout, call.signal]),
      });
      return { response, text: await response.text() };
    } catch (error) {
      throw unreachable(url, error, callTimeoutMs);
    }
  }

  /** The capability in its file now, when it is not the one just refused (a rotation); else null. */
  async function rotatedToken(): Promise<string | null> {
    if (options.reloadToken === undefined) return null;
    const current = await options.reloadToken().catch(() => null);
    return current !== null && current !== token && capabilityKind(current) === presented ? current : null;
  }

  async function send<S extends z.ZodType>(call: Call<S>): Promise<z.output<S>> {
    const context: RequestContext = { url, needs: call.needs, presented, subject: call.subject };
    let { response, text } = await exchange(call);
    // A 401 changed nothing at the ledger, so the same request can go again with the new capability.
    if (response.status === 401) {
      const rotated = await rotatedToken();
      if (rotated !== null) {
        token = rotated;
        ({ response, text } = await exchange(call));
      }
    }
    if (response.status >= 300 && response.status < 400) throw badResponse(url, `a redirect (${response.status}), which lexec does not follow`);
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw badResponse(url, `a ${response.status} response that is not JSON`);
    }
    if (!response.ok) {
      const body = errorBodySchema.safeParse(document);
      throw ledgerResponseError(response.status, body.success ? body.data.error : null, context, retryAfterSeconds(response.headers.get('retry-after')));
    }
    const parsed = call.schema.safeParse(document);
    if (!parsed.success) throw badResponse(url, `a ${response.status} response of an unexpected shape`);
    return parsed.data;
  }

  const id = encodeURIComponent;

  return {
    url,
    // Spend reports, events and webhook sinks (ledger-alerts-client.ts).
    ...alertsAndReportsCalls(send),
    // Executor-host enrolment and the ledger's version (ledger-enrolments-client.ts).
    ...enrolmentCalls(send),

    async addAgent(name: string): Promise<LedgerAgent> {
      const schema = agentAnswerSchema;
      return (await send({ method: 'POST', path: '/agents', body: { name }, needs: ['admin'], subject: 'agent', schema })).agent;
    },

    async listAgents(): Promise<LedgerAgent[]> {
      const schema = agentsAnswerSchema;
      return (await send({ method: 'GET', path: '/agents', needs: ['admin', 'executor'], subject: 'agent', schema })).agents;
    },

    /** Suspends an agent (admin): its new spend requests refused, its unclaimed authorizations cancelled. Idempotent. */
    async suspendAgent(agentId: string, reason: string | null): Promise<LedgerAgentSuspension> {
      const body = reason === null ? {} : { reason };
      return send({ method: 'POST', path: `/agents/${id(agentId)}/suspend`, body, needs: ['admin'], subject: 'agent', schema: agentSuspensionAnswerSchema });
    },

    /** Resumes a suspended agent (admin). Idempotent. */
    async resumeAgent(agentId: string): Promise<LedgerAgentSuspension> {
      return send({ method: 'POST', path: `/agents/${id(agentId)}/resume`, body: {}, needs: ['admin'], subject: 'agent', schema: agentSuspensionAnswerSchema });
    },

    /** Registers the SHA-256 digest of a capability the caller generated and keeps. */
    async registerCredential(credentialId: string, request: CredentialRegistrationRequest): Promise<CredentialRegistration> {
      const body = {
        kind: request.kind,
        digest_sha256: request.digestSha256,
        ...(request.agentId === null ? {} : { agent_id: request.agentId }),
        ...(request.holderName == null ? {} : { holder_name: request.holderName }),
      };
      return send({
        method: 'PUT',
        path: `/credentials/${id(credentialId)}`,
        body,
        needs: ['admin'],
        subject: 'agent',
        schema: credentialRegistrationSchema,
      });
    },

    /** Every credential the ledger knows (admin), oldest first; never a capability. */
    async listCredentials(filter: CredentialListFilter = {}): Promise<LedgerCredential[]> {
      const query = new URLSearchParams();
      if (filter.kind !== undefined) query.set('kind', filter.kind);
      if (filter.agentId !== undefined) query.set('agent_id', filter.agentId);
      const path = `/credentials${query.size === 0 ? '' : `?${query.toString()}`}`;
      return (await send({ method: 'GET', path, needs: ['admin'], subject: 'credential', schema: credentialListSchema })).credentials;
    },

    /** One credential (admin). */
    async credential(credentialId: string): Promise<LedgerCredential> {
      const schema = credentialAnswerSchema;
      return (await send({ method: 'GET', path: `/credentials/${id(credentialId)}`, needs: ['admin'], subject: 'credential', schema })).credential;
    },

    /** The credential this client presents (any kind). */
    async selfCredential(): Promise<LedgerCredential> {
      const schema = credentialAnswerSchema;
      const needs = ['admin', 'agent', 'approver', 'executor', 'reconciliation', 'metrics'] as const;
      return (await send({ method: 'GET', path: '/credentials/self', needs, subject: 'credential', schema })).credential;
    },

    /** Revokes a credential (admin): refused from its next request. Repeating it changes nothing (`changed: false`). */
    async revokeCredential(credentialId: string): Promise<LedgerCredentialRevocation> {
      return send({ method: 'POST', path: `/credentials/${id(credentialId)}/revoke`, body: {}, needs: ['admin'], subject: 'credential', schema: credentialRevocationSchema });
    },

    /** Replaces a credential by one whose capability the caller generated (admin); the old one works for `graceSeconds` more. */
    async rotateCredential(credentialId: string, request: CredentialRotationRequest): Promise<LedgerCredentialRotation> {
      const body = { new_credential_id: request.newCredentialId, digest_sha256: request.digestSha256, grace_seconds: request.graceSeconds };
      return send({ method: 'POST', path: `/credentials/${id(credentialId)}/rotate`, body, needs: ['admin'], subject: 'credential', schema: credentialRotationSchema });
    },

    async policy(agentId: string): Promise<LedgerPolicy> {
      const schema = policyAnswerSchema;
      return (await send({ method: 'GET', path: `/agents/${id(agentId)}/policy`, needs: ['admin'], subject: 'agent', schema })).policy;
    },

    /**
     * Replaces the agent's policy. With `expectVersion` (the `version` of the policy the change
     * was made from, as `policy` answers it) only if nobody changed it since: otherwise the
     * ledger changes nothing and this throws `LedgerPolicyVersionMismatch` with the current version.
     */
    async setPolicy(agentId: string, policy: SpendPolicyInput, expectVersion: bigint | null = null): Promise<LedgerPolicy> {
      const schema = policyAnswerSchema;
      const headers: Record<string, string> = expectVersion === null ? {} : { 'if-match': expectVersion.toString() };
      return (await send({ method: 'PUT', path: `/agents/${id(agentId)}/policy`, body: policy, headers, needs: ['admin'], subject: 'agent', schema })).policy;
    },

    /** The installation-wide budget and its standing (admin capability): `GET /budgets/installation`. */
    async installationBudget(): Promise<LedgerInstallationBudgetAnswer> {
      return send({ method: 'GET', path: '/budgets/installation', needs: ['admin'], subject: 'agent', schema: installationBudgetAnswerSchema });
    },

    /**
     * Replaces the installation-wide budget; with `expectVersion` only if it is still at that
     * version (else `ledger_budget_version_mismatch`, nothing changed).
     */
    async setInstallationBudget(budget: InstallationBudgetInput, expectVersion: bigint | null): Promise<LedgerInstallationBudgetAnswer> {
      const headers: Record<string, string> = expectVersion === null ? {} : { 'if-match': expectVersion.toString() };
      const body = {
        day_budget_units: budget.day_budget_units?.toString() ?? null,
        week_budget_units: budget.week_budget_units?.toString() ?? null,
        month_budget_units: budget.month_budget_units?.toString() ?? null,
        alert_percentages: budget.alert_percentages,
        units_scale: UNITS_SCALE,
        currency: 'USD',
      };
      return send({ method: 'PUT', path: '/budgets/installation', body, headers, needs: ['admin'], subject: 'agent', schema: installationBudgetAnswerSchema });
    },

    /** The calling agent's own policy, spend and holds (agent capability). */
    async spending(): Promise<LedgerSpending> {
      const schema = spendingAnswerSchema;
      return (await send({ method: 'GET', path: '/agent/spending', needs: ['agent'], subject: 'agent', schema })).spending;
    },

    /** Any agent's policy, spend and holds (admin capability): `GET /agents/{id}/spending`. */
    async agentSpending(agentId: string): Promise<LedgerSpending> {
      const schema = spendingAnswerSchema;
      return (await send({ method: 'GET', path: `/agents/${id(agentId)}/spending`, needs: ['admin'], subject: 'agent', schema })).spending;
    },

    /** Authorizations awaiting a human decision (approver capability): `GET /approvals`. */
    async pendingApprovals(): Promise<LedgerAuthorization[]> {
      const schema = authorizationsAnswerSchema;
      return (await send({ method: 'GET', path: '/approvals', needs: ['approver'], subject: 'authorization', schema })).authorizations;
    },

    /**
     * Requests a spend authorization for the calling agent. With `idempotencyKey` (sent as
     * `Idempotency-Key`), while the authorization an identical earlier request under that key
     * opened is still open, the ledger answers that one again (`replayed`) instead of opening
     * another; the same key with another amount or purpose is refused (`ledger_conflict`).
     */
    async requestAuthorization(request: {
      amountUnits: bigint;
      purpose?: string | undefined;
      idempotencyKey?: string | undefined;
      /** The executor target and the prompt it pays for (shown to the approver; budgets per target). */
      targetId?: string | undefined;
      prompt?: string | undefined;
    }): Promise<LedgerAuthorizationRequest> {
      const body = {
        amount_units: request.amountUnits,
        units_scale: UNITS_SCALE,
        currency: 'USD',
        ...(request.purpose === undefined ? {} : { purpose: request.purpose }),
        ...(request.targetId === undefined ? {} : { target_id: request.targetId }),
        ...(request.prompt === undefined ? {} : { prompt: request.prompt }),
      };
      const headers: Record<string, string> = request.idempotencyKey === undefined ? {} : { 'idempotency-key': request.idempotencyKey };
      const schema = authorizationRequestAnswerSchema;
      return send({ method: 'POST', path: '/authorizations', body, headers, needs: ['agent'], subject: 'authorization', schema });
    },

    async listAuthorizations(filter: AuthorizationFilter = {}): Promise<LedgerAuthorization[]> {
      const search = queryString({ agent_id: filter.agentId, status: filter.status, limit: filter.limit });
      const schema = authorizationsAnswerSchema;
      return (await send({ method: 'GET', path: `/authorizations${search}`, needs: ['admin'], subject: 'authorization', schema })).authorizations;
    },

    /** One page of the audit trail of operator actions, oldest first (admin): `GET /audit`. */
    async audit(filter: AuditFilter = {}): Promise<LedgerAuditPage> {
      const search = queryString({ since: filter.since, after: filter.after, agent_id: filter.agentId, limit: filter.limit });
      return send({ method: 'GET', path: `/audit${search}`, needs: ['admin'], subject: 'agent', schema: auditAnswerSchema });
    },

    async showAuthorization(tokenId: string): Promise<LedgerAuthorization> {
      const schema = authorizationAnswerSchema;
      const call = { method: 'GET', path: `/authorizations/${id(tokenId)}`, needs: ['admin', 'approver', 'agent'], subject: 'authorization', schema } as const;
      return (await send(call)).authorization;
    },

    async decideAuthorization(tokenId: string, decision: 'approve' | 'deny', reason?: string): Promise<LedgerAuthorization> {
      const schema = authorizationAnswerSchema;
      const body = reason === undefined ? {} : { reason };
      const path = `/authorizations/${id(tokenId)}/${decision}`;
      return (await send({ method: 'POST', path, body, needs: ['approver'], subject: 'authorization', schema })).authorization;
    },
  };
}
