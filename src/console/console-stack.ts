import type { ExecutorClient } from '../executor/client/executor-client.js';
import { listReconciliations, resolveReconciliation, type Resolution } from '../executor/client/executor-reconciliation.js';
import { activeStack, type ActiveStack } from '../stack-client/locate-stack.js';
import { stackStatus } from '../launcher/status/stack-status.js';
import { decideLedgerAuthorization } from '../ledger/client/ledger-authorizations.js';
import { connectStackLedger } from '../stack-client/connect-ledger.js';
import { connectStackExecutor, reconciliationConnector, type ExecutorRole } from '../stack-client/connect-executor.js';
import type { LedgerAgent } from '../ledger/wire/answers.js';
import type { SpendPolicy } from '../ledger/authorization-rules.js';
import type { SpendGrouping } from '../ledger/summarise-spend.js';
import { namedApproverClient } from './named-approver.js';
import { agentView, approvalView, auditEventView, executionDetailView, executionRowView, overviewView, policyView, reconciliationView, type AgentNames } from './console-views.js';

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

export function createConsoleStack(options: ConsoleStackOptions) {
  const { env, profile } = options;
  const stack = () => activeStack(env, profile);
  const executor = async (role: ExecutorRole): Promise<ExecutorClient> => connectStackExecutor(await stack(), role);
  const reconciliation = reconciliationConnector(env, profile);

  /** Every agent's name by id (admin capability), so views name agents rather than show `agt_…` ids alone. */
  async function agentNames(running: ActiveStack): Promise<AgentNames> {
    const agents = await (await connectStackLedger(running, 'admin')).listAgents();
    return new Map(agents.map((agent) => [agent.agent_id, agent.name]));
  }

  async function agentsWithSpending(running: ActiveStack) {
    const admin = await connectStackLedger(running, 'admin');
    const agents: LedgerAgent[] = await admin.listAgents();
    return Promise.all(agents.map(async (agent) => ({ agent, spending: await admin.agentSpending(agent.agent_id) })));
  }

  return {
    /** Components and readiness (as `stack status`), engine, spend against the caps per agent. */
    async overview() {
      const status = await stackStatus({ env, profileFlag: profile });
      // Work in flight and approvals pending are read from the databases (status), usable or not.
      return overviewView(status, status.usable ? await agentsWithSpending(await stack()) : null);
    },

    /** `GET /v1/executions`: every agent's executions, an operator's view (reconciliation capability). */
    async executions(filter: { readonly state?: string | undefined; readonly before?: string | undefined }) {
      const running = await stack();
      const [page, names] = await Promise.all([connectStackExecutor(running, 'reconciliation').then((client) => client.executions({ ...filter, limit: 25 })), agentNames(running)]);
      return { executions: page.executions.map((execution) => executionRowView(execution, names)), next_before: page.next_before };
    },

    async execution(executionId: string) {
      const running = await stack();
      const client = await connectStackExecutor(running, 'caller');
      const [detail, artifacts, names] = await Promise.all([client.executionDetail(executionId), client.artifacts(executionId), agentNames(running)]);
      return executionDetailView(detail, artifacts, names);
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
      return { approvals: pending.map((authorization) => approvalView(authorization, names.get(authorization.agent_id) ?? null, policies.get(authorization.agent_id) ?? null)) };
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
     * agent's policy is replaced only if it is still at the version the page showed; otherwise
     * nothing changes (`ledger_policy_version_mismatch`, with the current version).
     */
    async setPolicy(agentId: string, policy: SpendPolicy, expectVersion: bigint) {
      const admin = await connectStackLedger(await stack(), 'admin');
      const saved = await admin.setPolicy(agentId, { ...policy, units_scale: 6, currency: 'USD' }, expectVersion);
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

    async agents() {
      return { agents: (await agentsWithSpending(await stack())).map(({ agent, spending }) => agentView(agent, spending)) };
    },
  };
}
