import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { executionIdFor } from '../../src/executor/domain/execution-states.js';
import { startBackgroundRun } from '../support/background-run.js';
import { expectFailure, expectResult, type CliRun } from '../support/cli.js';
import { executionRequest } from '../support/executor.js';
import { call } from '../support/ledger.js';
import { startAgentSession, structured, toolError, type AgentSession } from '../support/mcp-client.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { secretShapeExamples } from '../support/secret-shapes.js';
import { eventually, readState } from '../support/stack-home.js';
import { checkStackInvariants, query } from './crash-scenarios.js';
import type { SuspensionPoint } from './suspension-points.js';

/*
 * Issue 27 item 1 on a real stack (`lexec stack start`, development build, LEXEC_DEV_CRASH_FILE
 * set): the operator suspends the profile's agent with `lexec ledger agents suspend`. Its
 * `lexec run` and the MCP tool generate_images are refused (`agent_suspended`, with the
 * operator's next step) and hold nothing; its approved-but-unclaimed authorization is cancelled
 * and the executor's admission refuses it (`authorization_cancelled`); an execution claimed before
 * the suspension — held mid-run by the sandbox answering its status route 503 until the test
 * clears the fault, no timed bound — finishes and settles exactly once. Then the ledger is
 * SIGKILLed at each of the suspension's crash points (suspension-points.ts) and restarted by the
 * supervisor: never half a suspension, never a cancelled authorization claimed, the operator's
 * repeat answered as a no-op (and recorded once in the audit trail), and the independent checker
 * quiet at the end.
 */

let stack: RunningStack;
let armFile = '';
let agent: AgentSession | undefined;

beforeAll(async () => {
  armFile = join(tmpdir(), `lexec-suspension-${String(process.pid)}`);
  stack = await startRunningStack({ env: { [CRASH_FILE_ENV]: armFile } });
}, 180_000);

afterAll(async () => {
  await agent?.close();
  await stack.stop();
  await rm(armFile, { force: true });
  await rm(`${armFile}.fired`, { force: true });
}, 120_000);

interface Suspension {
  agent_id: string;
  name: string;
  status: string;
  cancelled_authorizations: number;
  changed: boolean;
  suspended_at: string | null;
  suspension_reason: string | null;
  suspended_by: string | null;
}

const ledgerDb = () => stack.paths.ledgerDatabase;
const row = (tokenId: string) => query<{ status: string; execution_id: string | null }>(ledgerDb(), 'SELECT status, execution_id FROM authorizations WHERE token_id = ?', tokenId)[0];
const agentStatus = () => query<{ status: string }>(ledgerDb(), 'SELECT status FROM agents WHERE agent_id = ?', stack.agentId)[0]?.status;
/** The ledger's agents, authorizations and audit trail as stored: compared to prove a refusal or a repeat changed (and recorded) nothing. */
const ledgerState = () => ({
  agents: query(ledgerDb(), 'SELECT * FROM agents ORDER BY agent_id'),
  // When the agent last asked after an authorization (`client_seen_at`) is not money: a refused run still reads its own.
  authorizations: query<Record<string, unknown>>(ledgerDb(), 'SELECT * FROM authorizations ORDER BY token_id').map((row) => ({ ...row, client_seen_at: null })),
  audit: query(ledgerDb(), 'SELECT * FROM audit_events ORDER BY audit_id'),
});
const auditOf = (action: string) => query<{ actor_kind: string; reason: string | null }>(ledgerDb(), 'SELECT actor_kind, reason FROM audit_events WHERE action = ? AND subject_id = ? ORDER BY audit_id', action, stack.agentId);

async function requestAs(amountUnits: string, status: 'approved' | 'requested'): Promise<string> {
  const answer = await call<{ authorization: { token_id: string; status: string } }>(stack.ledgerUrl, 'POST', '/authorizations', {
    token: await stack.capability('agent'),
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'suspension proof' },
  });
  expect(answer.body.authorization.status).toBe(status);
  return answer.body.authorization.token_id;
}

const suspend = (...more: string[]) => stack.lexec(['ledger', 'agents', 'suspend', '--agent-id', stack.agentId, ...more, '--json']);
const resume = () => stack.lexec(['ledger', 'agents', 'resume', '--agent-id', stack.agentId, '--json']);
const resumeCommand = () => `lexec ledger agents resume --agent-id ${stack.agentId} --profile sandbox`;
const run = (prompt: string, ...more: string[]) => stack.lexec(['run', prompt, '--out', join(stack.home, 'out', prompt.replaceAll(' ', '-')), ...more, '--json'], { timeoutMs: 150_000 });

/** The executor admits again (its readiness follows the ledger's). */
const executorReady = () => eventually('the executor ready', async () => ((await fetch(`${stack.executorUrl}/readyz`)).status === 200 ? true : undefined), 120_000);

describe('a suspended agent on a real stack', () => {
  it('its run and generate_images are refused and hold nothing; its unclaimed authorization is refused at admission; an execution under way settles once', async () => {
    // An execution under way: claimed, then held mid-run (its status polls answered 503).
    await stack.sandbox.setFaults([{ kind: 'http_error', route: 'status', status: 503 }]);
    const inFlight = startBackgroundRun(['a lighthouse under way', '--out', 'under-way', '--json'], { cwd: stack.home, env: { HOME: stack.home, ...stack.env } });
    const [, executionId = ''] = await inFlight.waitFor(/execution (exe_[0-9a-f]{32}): running \(poll_provider_operation\)/, 120_000);
    const approved = await requestAs('6000', 'approved');
    const requested = await requestAs('2000000', 'requested');

    const suspended = expectResult(await suspend('--reason', 'runaway loop')) as Suspension;
    expect(suspended).toEqual({
      agent_id: stack.agentId,
      name: expect.any(String) as unknown,
      status: 'suspended',
      cancelled_authorizations: 2,
      changed: true,
      suspended_at: expect.any(String) as unknown,
      suspension_reason: 'runaway loop',
      suspended_by: 'operator',
    });
    const [claimed] = query<{ token_id: string; status: string }>(ledgerDb(), 'SELECT token_id, status FROM authorizations WHERE execution_id = ?', executionId);
    expect(claimed?.status).toBe('claimed');
    expect([row(approved), row(requested)]).toEqual([
      { status: 'cancelled', execution_id: null },
      { status: 'cancelled', execution_id: null },
    ]);
    const held = () => query(ledgerDb(), "SELECT token_id FROM authorizations WHERE agent_id = ? AND status IN ('requested', 'approved')", stack.agentId);
    expect(held()).toEqual([]);

    // lexec run: refused before anything is held, with the operator's next step.
    const before = ledgerState();
    const refused = expectFailure(await run('a suspended lighthouse'), 1, 'agent_suspended');
    expect(refused.message).toBe(`An operator suspended agent ${stack.agentId} (the profile's local agent): the ledger refuses its new spend requests; nothing was requested or spent.`);
    expect(refused.next_step).toBe(`Once it may spend again, resume it (\`${resumeCommand()}\`), then run the command again.`);
    const cancelledRun = expectFailure(await run('a suspended lighthouse', '--count', '2', '--authorization', approved), 1, 'authorization_cancelled');
    expect(cancelledRun.message).toContain(`an operator suspended agent ${stack.agentId}`);
    expect(cancelledRun.next_step).toContain(resumeCommand());

    // The MCP agent: told it was suspended, not to retry, and what the operator runs.
    agent = await startAgentSession({ env: stack.env });
    const generated = toolError(await agent.call('generate_images', { prompt: 'a suspended lighthouse', image_count: 1 }));
    expect(generated.code).toBe('agent_suspended');
    expect(generated.message).toBe('An operator suspended this agent: the stack refuses its spend requests; nothing was requested or spent.');
    expect(generated.next_step).toBe(`Do not retry: every spend request is refused until the operator resumes this agent. Tell the user; the operator resumes it with \`${resumeCommand()}\`.`);
    const withCancelled = toolError(await agent.call('generate_images', { prompt: 'a suspended lighthouse', image_count: 2, authorization_id: approved }));
    expect(withCancelled.code).toBe('authorization_cancelled');
    expect(withCancelled.next_step).toContain('Do not retry');
    // The free quote says the same rather than "automatic".
    expect(toolError(await agent.call('quote', { image_count: 1 }))).toMatchObject({ code: 'agent_suspended', next_step: generated.next_step });
    // Its reads stay open: the spending tool shows nothing held but the execution under way.
    expect(structured('spending', await agent.call('spending')).held.amount_units).toBe('3000');

    // The executor's admission refuses the cancelled authorization by name; nothing is created.
    const caller = await stack.capability('caller');
    const admitted = await call<{ error: unknown }>(stack.executorUrl, 'POST', '/v2/executions', { token: caller, body: executionRequest(approved) });
    expect(admitted).toEqual({ status: 409, body: { error: { code: 'conflict', reason_code: 'authorization_cancelled', fields: ['spend_auth_token_id'] } } });
    expect((await call(stack.executorUrl, 'GET', `/v1/executions/${executionIdFor(approved)}`, { token: caller })).status).toBe(404);
    expect(ledgerState()).toEqual(before);

    // Money truth wins over the switch: the execution under way finishes and settles, once.
    await stack.sandbox.clearFaults();
    const finished = await inFlight.done;
    expect(finished.exitCode, finished.stderr).toBe(0);
    expect(row(claimed?.token_id ?? '')).toEqual({ status: 'settled', execution_id: executionId });
    expect(query(ledgerDb(), 'SELECT settlement_id FROM settlements WHERE token_id = ?', claimed?.token_id)).toHaveLength(1);

    // Suspending again: the same answer, nothing cancelled, nothing changed.
    const settledState = ledgerState();
    const again = await suspend('--reason', 'another reason');
    expect(expectResult(again)).toEqual({ ...suspended, cancelled_authorizations: 0, changed: false });
    expect(ledgerState()).toEqual(settledState);
    const human = await stack.lexec(['ledger', 'agents', 'suspend', '--agent-id', stack.agentId]);
    expect(human.stdout).toContain(`was already suspended since ${suspended.suspended_at ?? ''} (reason: runaway loop); nothing changed.`);
  }, 300_000);

  it('bad input is a clear error with field paths, and nothing changes', async () => {
    const before = ledgerState();
    const unknown = expectFailure(await stack.lexec(['ledger', 'agents', 'suspend', '--agent-id', 'agt_00000000-0000-4000-8000-000000000000', '--json']), 1, 'ledger_not_found');
    expect(unknown.message).toContain('has no such agent');
    expectFailure(await stack.lexec(['ledger', 'agents', 'resume', '--agent-id', 'agt_00000000-0000-4000-8000-000000000000', '--json']), 1, 'ledger_not_found');
    expectFailure(await stack.lexec(['ledger', 'agents', 'suspend', '--agent-id', 'image-bot', '--json']), 2, 'invalid_flag_value');
    const long = expectFailure(await suspend('--reason', 'x'.repeat(501)), 1, 'ledger_invalid_request');
    expect(long.issues).toEqual([{ path: 'reason', message: 'refused by the ledger (invalid_request)' }]);
    const [, secret = ''] = secretShapeExamples()[0] ?? [];
    const secretRun: CliRun = await suspend('--reason', `stop, see ${secret}`);
    const shaped = expectFailure(secretRun, 1, 'ledger_invalid_request');
    expect(shaped.issues).toEqual([{ path: 'reason', message: 'refused by the ledger (secret_shaped_text)' }]);
    expect(secretRun.stdout + secretRun.stderr).not.toContain(secret);
    expect(ledgerState()).toEqual(before);
  }, 120_000);

  it('resuming lets it spend again; cancelled authorizations stay cancelled; a repeat changes nothing', async () => {
    const resumed = expectResult(await resume()) as Suspension;
    expect(resumed).toMatchObject({ status: 'active', cancelled_authorizations: 0, changed: true, suspended_at: null, suspension_reason: null });
    const state = ledgerState();
    expect(expectResult(await resume())).toEqual({ ...resumed, changed: false });
    expect(ledgerState()).toEqual(state);
    expect(query(ledgerDb(), "SELECT COUNT(*) AS n FROM authorizations WHERE status = 'cancelled'")).toEqual([{ n: 2 }]);
  }, 120_000);

  describe('the ledger SIGKILLed at each commit of a suspension or a resumption (supervisor restart)', () => {
    /** Arms `point`, runs the operator's command (its answer lost), and waits for the ledger to come back. */
    async function killedAt(point: SuspensionPoint, command: () => Promise<CliRun>): Promise<void> {
      const restarts = (await readState(stack.paths)).components.ledger?.restarts ?? 0;
      await rm(`${armFile}.fired`, { force: true });
      await writeFile(armFile, `${point}\n`);
      const lost = await command();
      expect(lost.exitCode, 'the command was answered: the ledger did not die at the point').toBe(1);
      expect(existsSync(`${armFile}.fired`)).toBe(true);
      await eventually('the ledger restarted', async () => ((await readState(stack.paths)).components.ledger?.restarts === restarts + 1 ? true : undefined), 60_000);
      await eventually('the ledger answers', async () => ((await fetch(`${stack.ledgerUrl}/health`).catch(() => null))?.status === 200 ? true : undefined), 60_000);
    }

    it('ledger.during_suspend: nothing of the suspension remains (the agent active, its authorization approved); asked again, it is whole', async () => {
      const approved = await requestAs('6000', 'approved');
      const before = ledgerState();
      await killedAt('ledger.during_suspend', () => suspend('--reason', 'killed inside'));
      expect(ledgerState()).toEqual(before);
      expect([agentStatus(), row(approved)]).toEqual(['active', { status: 'approved', execution_id: null }]);
      const again = expectResult(await suspend('--reason', 'asked again')) as Suspension;
      expect(again).toMatchObject({ status: 'suspended', cancelled_authorizations: 1, changed: true, suspension_reason: 'asked again' });
      expect(row(approved)).toEqual({ status: 'cancelled', execution_id: null });
    }, 180_000);

    it('ledger.after_suspend_commit: the whole suspension survives (requests refused, the authorization cancelled and refused at admission); asked again, nothing changes', async () => {
      expectResult(await resume());
      const approved = await requestAs('6000', 'approved');
      await killedAt('ledger.after_suspend_commit', () => suspend('--reason', 'answer lost'));
      expect([agentStatus(), row(approved)]).toEqual(['suspended', { status: 'cancelled', execution_id: null }]);
      // Its audit event committed with it.
      expect(auditOf('agent_suspended').at(-1)).toEqual({ actor_kind: 'admin', reason: 'answer lost' });
      const state = ledgerState();
      expect(expectResult(await suspend('--reason', 'asked again'))).toMatchObject({ status: 'suspended', cancelled_authorizations: 0, changed: false, suspension_reason: 'answer lost' });
      expectFailure(await run('after the lost answer'), 1, 'agent_suspended');
      await executorReady();
      const admitted = await call(stack.executorUrl, 'POST', '/v2/executions', { token: await stack.capability('caller'), body: executionRequest(approved) });
      expect(admitted).toEqual({ status: 409, body: { error: { code: 'conflict', reason_code: 'authorization_cancelled', fields: ['spend_auth_token_id'] } } });
      expect(ledgerState()).toEqual(state);
    }, 180_000);

    it('ledger.after_resume_commit: the resumption survives; asked again, nothing changes; the agent runs and settles', async () => {
      const resumptions = auditOf('agent_resumed').length;
      await killedAt('ledger.after_resume_commit', resume);
      expect(agentStatus()).toBe('active');
      expect(auditOf('agent_resumed')).toHaveLength(resumptions + 1);
      expect(expectResult(await resume())).toMatchObject({ status: 'active', changed: false });
      await executorReady();
      const result = expectResult(await run('a lighthouse after the resumption')) as { authorization: { status: string } };
      expect(result.authorization.status).toBe('settled');

      // Everything this stack wrote: no cancelled authorization claimed, no half suspension, every money rule, every operator action audited.
      const report = checkStackInvariants(stack);
      expect(report.violations).toEqual([]);
      expect(query(ledgerDb(), "SELECT COUNT(*) AS n FROM authorizations WHERE status = 'cancelled' AND execution_id IS NOT NULL")).toEqual([{ n: 0 }]);
    }, 180_000);
  });
});
