import type { ExecutionSummary, ExecutorClient } from '../executor/client/executor-client.js';
import { listReconciliations, resolveReconciliation, type Resolution } from '../executor/client/executor-reconciliation.js';
import { activeStack, type ActiveStack } from '../stack-client/locate-stack.js';
import { stackStatus } from '../launcher/status/stack-status.js';
import { decideLedgerAuthorization } from '../ledger/client/ledger-authorizations.js';
import { connectStackLedger } from '../stack-client/connect-ledger.js';
import { connectStackExecutor, reconciliationConnector, type ExecutorRole } from '../stack-client/connect-executor.js';
import type { LedgerAgent, LedgerAuthorization } from '../ledger/wire/answers.js';
import type { LedgerClient } from '../ledger/client/ledger-client.js';
import { money } from './money-view.js';
import { agentView, installationBudgetView, policyView } from './agent-views.js';
import { createEventFollower } from './console-events.js';
import type { SpendPolicyInput } from '../ledger/ledger-config.js';
import type { InstallationBudget } from '../ledger/budget-rules.js';
import type { SpendGrouping } from '../ledger/summarise-spend.js';
import { namedApproverClient } from '../stack-client/named-approver.js';
import {
  approvalView,
  auditEventView,
  decidedRequestView,
  executionDetailView,
  executionRowView,
  liveEventView,
  overviewView,
  reconciliationView,
  wasDecidedByHumanOrLapsed,
  type AgentNames,
  type LiveEventView,
} from './console-views.js';

/** What the Agents view edits of a policy: the caps always; a velocity limit or budget when sent (null: none). */
export type PolicyEdit = Pick<
  SpendPolicyInput,
  'per_authorization_cap_units' | 'daily_cap_units' | 'approval_threshold_units' | 'max_requests_per_minute' | 'max_requests_per_hour' | 'suspend_after_velocity_refusals' | 'day_budget_units' | 'week_budget_units' | 'month_budget_units'
>;

/*
 * What the console reads from and does to one profile's running stack — the profile named at
 * start, never the selection of the moment. Every call finds that profile's stack through its
 * active handoff, as `lexec` client commands do, so a restarted stack (new ports, new
 * supervisor) is followed and a stopped one is refused. Capabilities are read from the
 * files the handoff names, used in Authorization headers only, and never returned: every answer
 * is a view built by console-views.ts. Decisions and resolutions call the very services behind
 * `lexec ledger authorizations approve|deny` and `lexec executor reconciliation resolve`.
 */

export interface ConsoleStackOptions {
  readonly env: NodeJS.ProcessEnv;
  /** The profile's name, resolved once when the console started. */
  readonly profile: string;
}

export type ConsoleStack = ReturnType<typeof createConsoleStack>;

/** The Executions view's filter and search (docs/console.md "Executions"). */
export interface ExecutionFilter {
  readonly state?: string | undefined;
  readonly before?: string | undefined;
  readonly agentId?: string | undefined;
  readonly targetId?: string | undefined;
  /** Admitted at or after / before these times (ISO). */
  readonly from?: string | undefined;
  readonly until?: string | undefined;
  /** An execution id, an authorization id, or words of the prompt. */
  readonly search?: string | undefined;
}

/** One page of the Executions view; a search reads at most this many executions per page (newest first), then offers to go on. */
export const EXECUTIONS_PAGE = 25;
export const EXECUTIONS_SCANNED = 500;
/** The newest authorizations read at once for the prompt column and search; older ones are read one by one, at most this many per page. */
const AUTHORIZATIONS_READ = 500;
const AUTHORIZATIONS_ONE_BY_ONE = 25;
/** Decided requests the history shows at most (the newest). */
export const HISTORY_LIMIT = 100;
/** Refusals kept per agent (the newest), and pages of refusal events read per call. */
const REFUSALS_KEPT = 10;
const REFUSAL_PAGES = 20;

/** Whether an execution passes the filter (all but state and search, which need more). */
function matches(execution: ExecutionSummary, filter: ExecutionFilter): boolean {
  if (filter.agentId !== undefined && execution.agent_id !== filter.agentId) return false;
  if (filter.targetId !== undefined && execution.target_id !== filter.targetId) return false;
  const at = Date.parse(execution.created_at);
  if (filter.from !== undefined && at < Date.parse(filter.from)) return false;
  if (filter.until !== undefined && at >= Date.parse(filter.until)) return false;
  return true;
}

function searched(execution: ExecutionSummary, prompt: string | null, search: string | undefined): boolean {
  if (search === undefined) return true;
  const needle = search.trim().toLowerCase();
  if (needle === '') return true;
  return execution.execution_id === needle || execution.spend_auth_token_id.toLowerCase() === needle || (prompt !== null && prompt.toLowerCase().includes(needle));
}

export function createConsoleStack(options: ConsoleStackOptions) {
  const { env, profile } = options;
  const stack = () => activeStack(env, profile);
  const executor = async (role: ExecutorRole): Promise<ExecutorClient> => connectStackExecutor(await stack(), role);
  const reconciliation = reconciliationConnector(env, profile);

  /** Whether this host holds the ledger's admin capability: an executor host (docs/deployment.md "Roles") does not. */
  const holdsAdmin = (running: ActiveStack) => running.handoff.credentials.admin !== undefined;

  /**
   * Who reads authorizations for the executions views: the admin capability where this host holds
   * it; on an executor host, its own agent's (the ledger answers an agent its own authorizations,
   * and an executor host's executions are its agent's).
   */
  const authorizationReader = (running: ActiveStack): Promise<LedgerClient> => connectStackLedger(running, holdsAdmin(running) ? 'admin' : 'agent');

  /** Every agent's name by id (admin capability), so views name agents rather than show `agt_…` ids alone; an executor host knows its own agent's. */
  async function agentNames(running: ActiveStack): Promise<AgentNames> {
    if (!holdsAdmin(running)) return new Map(running.handoff.agent === undefined ? [] : [[running.handoff.agent.agent_id, running.handoff.agent.name]]);
    const agents = await (await connectStackLedger(running, 'admin')).listAgents();
    return new Map(agents.map((agent) => [agent.agent_id, agent.name]));
  }

  /** The newest authorizations by id, read at once. */
  async function newestAuthorizations(admin: LedgerClient): Promise<Map<string, LedgerAuthorization>> {
    return new Map((await admin.listAuthorizations({ limit: AUTHORIZATIONS_READ })).map((authorization) => [authorization.token_id, authorization]));
  }

  /** `known` with any of `wanted` not among them read one by one (bounded). */
  async function withOlder(admin: LedgerClient, known: Map<string, LedgerAuthorization>, wanted: readonly string[]): Promise<Map<string, LedgerAuthorization>> {
    const missing = [...new Set(wanted.filter((id) => !known.has(id)))].slice(0, AUTHORIZATIONS_ONE_BY_ONE);
    const found = await Promise.all(missing.map((id) => admin.showAuthorization(id).catch(() => null)));
    for (const authorization of found) if (authorization !== null) known.set(authorization.token_id, authorization);
    return known;
  }

  /**
   * Refused requests per agent (`authorization.refused` events), the newest kept: read once from
   * the first such event, then only after the last one seen.
   */
  const refusals = { after: 0n, byAgent: new Map<string, LiveEventView[]>() };
  async function recentRefusals(ledger: LedgerClient): Promise<ReadonlyMap<string, readonly LiveEventView[]>> {
    for (let pages = 0; pages < REFUSAL_PAGES; pages += 1) {
      const page = await ledger.events({ after: refusals.after, types: ['authorization.refused'], limit: 500 });
      for (const event of page.events) {
        if (event.agent_id === null) continue;
        const kept = [liveEventView(event), ...(refusals.byAgent.get(event.agent_id) ?? [])].slice(0, REFUSALS_KEPT);
        refusals.byAgent.set(event.agent_id, kept);
      }
      refusals.after = BigInt(page.next_after);
      if (!page.more) break;
    }
    return refusals.byAgent;
  }

  async function agentsWithSpending(admin: LedgerClient) {
    const agents: LedgerAgent[] = await admin.listAgents();
    return Promise.all(agents.map(async (agent) => ({ agent, spending: await admin.agentSpending(agent.agent_id) })));
  }

  return {
    /**
     * Components and readiness (as `stack status`), engine, spend against the caps per agent, and
     * the installation budget's standing (null where the ledger's admin capability is not held).
     */
    async overview() {
      const status = await stackStatus({ env, profileFlag: profile });
      // Work in flight and approvals pending are read from the databases (status), usable or not;
      // the agents' spend on the host that holds the ledger's admin capability.
      const running = status.usable ? await stack() : null;
      if (running === null || !holdsAdmin(running)) return { ...overviewView(status, null), installation_budget: null };
      const admin = await connectStackLedger(running, 'admin');
      const [agents, installation] = await Promise.all([agentsWithSpending(admin), admin.installationBudget()]);
      return { ...overviewView(status, agents), installation_budget: installationBudgetView(installation) };
    },

    /**
     * `GET /v1/executions`: every agent's executions, an operator's view (reconciliation
     * capability), newest first, each with the prompt its authorization paid for (the ledger keeps
     * it). The executor filters by state; agent, target, time and the search are applied here, over
     * at most EXECUTIONS_SCANNED executions per page: `next_before` goes on from the last one read.
     */
    async executions(filter: ExecutionFilter) {
      const running = await stack();
      const [executor, reader] = await Promise.all([connectStackExecutor(running, 'reconciliation'), authorizationReader(running)]);
      const narrowed = filter.agentId !== undefined || filter.targetId !== undefined || filter.from !== undefined || filter.until !== undefined || (filter.search ?? '').trim() !== '';
      // The newest authorizations at once where the admin capability lists them; an agent's read one by one below.
      const known = holdsAdmin(running) ? await newestAuthorizations(reader) : new Map<string, LedgerAuthorization>();
      const found: ExecutionSummary[] = [];
      let before = filter.before;
      let scanned = 0;
      let lastRead: string | null = null;
      let more = true;
      reading: while (found.length < EXECUTIONS_PAGE && scanned < EXECUTIONS_SCANNED) {
        const page = await executor.executions({ state: filter.state, before, limit: narrowed ? 100 : EXECUTIONS_PAGE });
        for (const [index, execution] of page.executions.entries()) {
          scanned += 1;
          lastRead = execution.execution_id;
          if (matches(execution, filter) && searched(execution, known.get(execution.spend_auth_token_id)?.prompt ?? null, filter.search)) found.push(execution);
          if (found.length === EXECUTIONS_PAGE || scanned >= EXECUTIONS_SCANNED) {
            more = index < page.executions.length - 1 || page.next_before !== null;
            break reading;
          }
        }
        const oldest = page.executions.at(-1);
        // Newest first: once older than `from`, nothing further can match.
        const pastFrom = filter.from !== undefined && oldest !== undefined && Date.parse(oldest.created_at) < Date.parse(filter.from);
        if (page.next_before === null || pastFrom) {
          more = false;
          break;
        }
        before = page.next_before;
      }
      const [authorizations, names] = await Promise.all([withOlder(reader, known, found.map((execution) => execution.spend_auth_token_id)), agentNames(running)]);
      return {
        executions: found.map((execution) => executionRowView(execution, names, authorizations)),
        next_before: more ? lastRead : null,
        /** How many executions this page read to find these (a search reads at most EXECUTIONS_SCANNED). */
        scanned,
        agents: [...names].map(([agentId, name]) => ({ agent_id: agentId, name })),
      };
    },

    async execution(executionId: string) {
      const running = await stack();
      const client = await connectStackExecutor(running, 'caller');
      const [detail, artifacts, names] = await Promise.all([client.executionDetail(executionId), client.artifacts(executionId), agentNames(running)]);
      // Its authorization at the ledger starts the timeline (requested, the wait for a human, the decision).
      const authorization = await authorizationReader(running)
        .then((reader) => reader.showAuthorization(detail.authorization.spend_auth_token_id))
        .catch(() => null);
      return executionDetailView(detail, artifacts, names, authorization);
    },

    /** One artifact's bytes and type, fetched from the executor's content route. */
    async artifact(executionId: string, artifactId: string): Promise<{ mediaType: string; bytes: Buffer } | null> {
      const client = await executor('caller');
      const artifact = (await client.artifacts(executionId)).find((candidate) => candidate.artifact_id === artifactId);
      if (artifact === undefined) return null;
      return { mediaType: artifact.media_type, bytes: await client.content(executionId, artifact) };
    },

    /**
     * Authorizations awaiting a human, each with the policy the ledger decided it under (kept with
     * the authorization) and its agent's current policy, which may have changed since.
     */
    async approvals() {
      const running = await stack();
      const approver = await connectStackLedger(running, 'approver');
      const admin = await connectStackLedger(running, 'admin');
      const [pending, agents] = await Promise.all([approver.pendingApprovals(), admin.listAgents()]);
      const policies = new Map(await Promise.all([...new Set(pending.map((authorization) => authorization.agent_id))].map(async (id) => [id, await admin.policy(id)] as const)));
      const names = new Map(agents.map((agent) => [agent.agent_id, agent.name]));
      const now = Date.now();
      // Per agent, what a bulk decision would decide: these requests, their count and total.
      const byAgent = new Map<string, LedgerAuthorization[]>();
      for (const authorization of pending) byAgent.set(authorization.agent_id, [...(byAgent.get(authorization.agent_id) ?? []), authorization]);
      return {
        approvals: pending.map((authorization) => approvalView(authorization, names.get(authorization.agent_id) ?? null, policies.get(authorization.agent_id) ?? null, now)),
        agents: [...byAgent].map(([agentId, requests]) => ({
          agent_id: agentId,
          agent_name: names.get(agentId) ?? null,
          count: requests.length,
          total: money(
            requests.reduce((sum, request) => sum + request.amount_units, 0n),
            requests[0]?.currency ?? 'USD',
          ),
          token_ids: requests.map((request) => request.token_id),
        })),
      };
    },

    /**
     * Requests that waited for a human and no longer do, newest first (admin capability): approved
     * or denied by a person (who, when, why), or expired or cancelled undecided. Read from the
     * newest AUTHORIZATIONS_READ authorizations (of one agent, when asked), at most HISTORY_LIMIT.
     */
    async approvalHistory(query: { readonly outcome?: 'approved' | 'denied' | 'expired' | 'cancelled' | undefined; readonly agentId?: string | undefined }) {
      const admin = await connectStackLedger(await stack(), 'admin');
      const [listed, agents] = await Promise.all([admin.listAuthorizations({ agentId: query.agentId, limit: AUTHORIZATIONS_READ }), admin.listAgents()]);
      const names = new Map(agents.map((agent) => [agent.agent_id, agent.name]));
      const decided = listed
        .filter(wasDecidedByHumanOrLapsed)
        .map((authorization) => decidedRequestView(authorization, names.get(authorization.agent_id) ?? null))
        .filter((view) => query.outcome === undefined || view.outcome === query.outcome);
      return { decided: decided.slice(0, HISTORY_LIMIT), agents: agents.map((agent) => ({ agent_id: agent.agent_id, name: agent.name })) };
    },

    /** `lexec ledger authorizations approve|deny`, as the named approver who signed in (named-approver.ts). */
    async decide(tokenId: string, decision: 'approve' | 'deny', reason: string | undefined, approverName: string) {
      const approver = await namedApproverClient(await stack(), approverName);
      const { authorization } = await decideLedgerAuthorization({ target: () => Promise.resolve(approver), tokenId, decision, reason });
      return { token_id: authorization.token_id, status: authorization.status, decided_by_name: authorization.decided_by_name };
    },

    async reconciliations() {
      const [{ executions }, names] = await Promise.all([listReconciliations({ connect: reconciliation }), stack().then(agentNames)]);
      return { executions: executions.map((entry) => reconciliationView(entry, names)) };
    },

    /** `lexec executor reconciliation resolve`, with the stack's reconciliation capability. */
    async resolve(executionId: string, resolution: Resolution) {
      const resolved = await resolveReconciliation({ connect: reconciliation, executionId, resolution });
      return {
        replayed: resolved.replayed,
        resolution: resolved.resolution.resolution,
        // As the executor recorded it (the page shows it back as text).
        note: resolved.resolution.note,
        execution: { execution_id: resolved.execution.execution_id, state: resolved.execution.state },
      };
    },

    /**
     * `lexec ledger policy set --expect-version` from the Agents view (admin capability): the
     * page's fields, set only if the policy is still at the version the page showed; otherwise
     * nothing changes (`ledger_policy_version_mismatch`, with the current version). A field the
     * page did not send (alert percentages, the target allow-list) the ledger keeps as it is.
     */
    async setPolicy(agentId: string, edit: PolicyEdit, expectVersion: bigint) {
      const admin = await connectStackLedger(await stack(), 'admin');
      const saved = await admin.setPolicy(agentId, { ...edit, units_scale: 6, currency: 'USD' }, expectVersion);
      return { agent_id: agentId, policy: policyView(saved) };
    },

    /**
     * `lexec ledger agents suspend` (admin capability): in one ledger transaction the agent's new
     * requests are refused and its unclaimed authorizations cancelled; executions under way finish.
     */
    async suspend(agentId: string, reason: string | null) {
      const answer = await (await connectStackLedger(await stack(), 'admin')).suspendAgent(agentId, reason);
      return { agent_id: answer.agent.agent_id, name: answer.agent.name, status: answer.agent.status, cancelled_authorizations: answer.cancelled_authorizations, changed: answer.changed };
    },

    /** `lexec ledger agents resume` (admin capability). */
    async resume(agentId: string) {
      const answer = await (await connectStackLedger(await stack(), 'admin')).resumeAgent(agentId);
      return { agent_id: answer.agent.agent_id, name: answer.agent.name, status: answer.agent.status, cancelled_authorizations: answer.cancelled_authorizations, changed: answer.changed };
    },

    /**
     * A page of the audit trail (admin capability), oldest first from `since` (ms), of one agent or
     * all: its events named for the page, and every agent by name (the view's agent filter).
     */
    async audit(query: { readonly since: number | null; readonly after: string | undefined; readonly agentId: string | undefined }) {
      const admin = await connectStackLedger(await stack(), 'admin');
      const since = query.since === null ? undefined : new Date(query.since).toISOString();
      const [page, agents] = await Promise.all([admin.audit({ since, after: query.after, agentId: query.agentId, limit: 100 }), admin.listAgents()]);
      const names: AgentNames = new Map(agents.map((agent) => [agent.agent_id, agent.name]));
      return {
        events: page.events.map((event) => auditEventView(event, names)),
        next_after: page.next_after,
        agents: agents.map((agent) => ({ agent_id: agent.agent_id, name: agent.name })),
      };
    },

    /** The ledger's spend report (admin capability): per period, agent or target, optionally split per agent or target. */
    async spend(query: { readonly by: SpendGrouping; readonly split?: 'agent' | 'target' | undefined; readonly since?: string | undefined; readonly until?: string | undefined }) {
      return (await connectStackLedger(await stack(), 'admin')).spendReport(query);
    },

    /**
     * Every agent with its standing and policy, and the requests the ledger refused it lately
     * (policy, velocity, suspension); and the installation-wide budget with its standing.
     */
    async agents() {
      const running = await stack();
      const admin = await connectStackLedger(running, 'admin');
      const [agents, refused, installation] = await Promise.all([agentsWithSpending(admin), recentRefusals(admin), admin.installationBudget()]);
      return {
        agents: agents.map(({ agent, spending }) => ({ ...agentView(agent, spending), refusals: refused.get(agent.agent_id) ?? [] })),
        installation_budget: installationBudgetView(installation),
      };
    },

    /**
     * `lexec ledger budget set --expect-version` from the Agents view (admin capability): the
     * installation-wide budget as the page sets it, only if it is still at the version the page
     * showed; otherwise nothing changes (`ledger_budget_version_mismatch`, with the current version).
     */
    async setInstallationBudget(budget: InstallationBudget, expectVersion: bigint) {
      const admin = await connectStackLedger(await stack(), 'admin');
      return { installation_budget: installationBudgetView(await admin.setInstallationBudget(budget, expectVersion)) };
    },

    /** The ledger's events as they happen, for the live feed and the approvals count (console-events.ts). */
    live: createEventFollower({ connect: async () => connectStackLedger(await stack(), 'approver') }),
  };
}
