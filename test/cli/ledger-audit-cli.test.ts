import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, expectResult, makeTempDir, removeDir, runLexec, type CliRun } from '../support/cli.js';
import type { LedgerAuditPage } from '../../src/ledger/wire/answers.js';
import { startLedgerProcess, type TemporaryLedgerProcess } from '../support/ledger-process.js';
import { secretShapeExamples } from '../support/secret-shapes.js';

/*
 * `lexec ledger audit` end to end: the built binary in child processes against a real `lexec
 * ledger serve` child with its own SQLite file. The operator adds an agent, issues an approver,
 * the agent asks above the threshold, the approver approves, the operator suspends the agent with
 * a reason; the audit shows each — who, what, before → after — as a table on stdout or as the
 * `--json` result, filtered by agent and time, one page at a time. Bad flags are clear errors with
 * the flag at fault; no output of any run holds a capability.
 */

/** The `--json` result: one page of the audit trail as the ledger answers it. */
type AuditResult = LedgerAuditPage;

let ledger: TemporaryLedgerProcess;
let root: string;
const runs: CliRun[] = [];
let agentId = '';
let tokenId = '';

async function lexec(args: readonly string[]): Promise<CliRun> {
  const run = await runLexec(args);
  runs.push(run);
  return run;
}
const admin = () => ['--url', ledger.url, '--token-file', ledger.adminCapabilityPath];
const audit = async (...args: string[]) => expectResult(await lexec(['ledger', 'audit', ...admin(), ...args, '--json'])) as AuditResult;

beforeAll(async () => {
  ledger = await startLedgerProcess();
  root = await makeTempDir('lexec-ledger-audit-cli-');
  const added = expectResult(await lexec(['ledger', 'agents', 'add', ...admin(), '--name', 'bot', '--credential-file', join(root, 'bot.capability'), '--json'])) as { agent: { agent_id: string } };
  agentId = added.agent.agent_id;
  expectResult(await lexec(['ledger', 'credentials', 'create', ...admin(), '--kind', 'approver', '--credential-file', join(root, 'approver.capability'), '--json']));
  const asAgent = ['--url', ledger.url, '--token-file', join(root, 'bot.capability')];
  const requested = expectResult(await lexec(['ledger', 'authorizations', 'request', ...asAgent, '--amount-units', '2000000', '--json'])) as { authorization: { token_id: string } };
  tokenId = requested.authorization.token_id;
  expectResult(await lexec(['ledger', 'authorizations', 'approve', tokenId, '--url', ledger.url, '--token-file', join(root, 'approver.capability'), '--reason', 'launch poster', '--json']));
  expectResult(await lexec(['ledger', 'agents', 'suspend', ...admin(), '--agent-id', agentId, '--reason', 'runaway loop', '--json']));
}, 120_000);

afterAll(async () => {
  const capabilities = await Promise.all(['bot.capability', 'approver.capability'].map(async (file) => (await readFile(join(root, file), 'utf8')).trim()));
  capabilities.push((await readFile(ledger.adminCapabilityPath, 'utf8')).trim());
  await ledger.stop();
  await removeDir(root);
  for (const run of runs) {
    expect(run.stdout + run.stderr).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{20,}/);
    for (const capability of capabilities) expect(run.stdout + run.stderr).not.toContain(capability);
  }
});

describe('lexec ledger audit', () => {
  it('--json: every operator action oldest first, with who, what, before and after', async () => {
    const result = await audit();
    expect(result.next_after).toBeNull();
    expect(result.events.map((event) => [event.action, event.actor_kind, event.actor_credential_id === null ? null : event.actor_credential_id.replace(/^cred_.*/, 'cred_…')])).toEqual([
      ['credential_registered', 'ledger', null],
      ['agent_added', 'admin', 'admin'],
      ['credential_registered', 'admin', 'admin'],
      ['credential_registered', 'admin', 'admin'],
      ['authorization_approved', 'approver', 'cred_…'],
      ['agent_suspended', 'admin', 'admin'],
    ]);
    expect(result.events[4]).toMatchObject({
      agent_id: agentId,
      subject_id: tokenId,
      actor_name: null,
      before: { status: 'requested' },
      after: { status: 'approved', amount_units: '2000000', currency: 'USD' },
      reason: 'launch poster',
    });
    expect(result.events[5]).toMatchObject({ subject_id: agentId, after: { status: 'suspended', suspended_by: 'operator', cancelled_authorizations: 1 }, reason: 'runaway loop' });
  });

  it('filters by agent and by time, and pages with --limit and --after', async () => {
    expect((await audit('--agent-id', agentId)).events.map((event) => event.action)).toEqual(['agent_added', 'credential_registered', 'authorization_approved', 'agent_suspended']);
    expect((await audit('--since', '1h')).events).toHaveLength(6);
    expect((await audit('--since', new Date(Date.now() + 86_400_000).toISOString())).events).toEqual([]);
    const first = await audit('--limit', '4');
    expect([first.events.length, first.next_after]).toEqual([4, first.events[3]?.audit_id]);
    const rest = await audit('--limit', '4', '--after', first.next_after ?? '');
    expect(rest.events.map((event) => event.action)).toEqual(['authorization_approved', 'agent_suspended']);
    expect(rest.next_after).toBeNull();
  });

  it('prints a table on stdout (nothing on stderr), with the change before → after and the next page to ask for', async () => {
    const human = await lexec(['ledger', 'audit', ...admin(), '--agent-id', agentId, '--limit', '3']);
    expect([human.exitCode, human.stderr]).toEqual([0, '']);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ {2}# +when +who +action +agent +subject +change +reason$/);
    expect(human.stdout).toContain('agent_added');
    expect(human.stdout).toMatch(/approver cred_[0-9a-f-]{36} +authorization_approved +agt_[0-9a-f-]{36} +[0-9a-f-]{36} +status requested → approved; amount_units 2\.000000 USD +launch poster/);
    expect(lines.at(-1)).toMatch(/^ {2}more: run it again with --after \d+ \(and the same filters\)$/);
    const suspended = await lexec(['ledger', 'audit', ...admin(), '--agent-id', agentId, '--after', '5']);
    expect(suspended.stdout).toMatch(/admin admin +agent_suspended .*status active → suspended; suspended_by operator; cancelled_authorizations 1 +runaway loop/);
    expect((await lexec(['ledger', 'audit', ...admin(), '--since', '2099-01-01'])).stdout.trim()).toBe('No operator actions recorded for this query.');
  });

  it('refuses bad flags with the flag at fault, an unknown agent by name, a secret-shaped reason before it reaches the trail', async () => {
    const since = expectFailure(await lexec(['ledger', 'audit', ...admin(), '--since', 'garbage', '--json']), 2, 'invalid_flag_value');
    expect(since.issues).toEqual([{ path: '--since', message: 'must be a duration back from now (30s, 15m, 2h, 7d) or an ISO 8601 time (2026-11-25 or 2026-11-25T10:00:00Z)' }]);
    expect(expectFailure(await lexec(['ledger', 'audit', ...admin(), '--limit', '0', '--json']), 2, 'invalid_flag_value').message).toBe('--limit must be a whole number from 1 to 500.');
    expectFailure(await lexec(['ledger', 'audit', ...admin(), '--agent-id', 'bot', '--json']), 2, 'invalid_flag_value');
    const unknown = expectFailure(await lexec(['ledger', 'audit', ...admin(), '--agent-id', 'agt_00000000-0000-4000-8000-000000000000', '--json']), 1, 'ledger_not_found');
    expect(unknown.issues).toEqual([{ path: 'agent_id', message: 'refused by the ledger (agent_not_found)' }]);
    expect(unknown.message).toContain('has no such agent');

    const [, secret = ''] = secretShapeExamples()[0] ?? [];
    const resumed = await lexec(['ledger', 'agents', 'resume', ...admin(), '--agent-id', agentId, '--json']);
    expect(resumed.exitCode).toBe(0);
    expectFailure(await lexec(['ledger', 'agents', 'suspend', ...admin(), '--agent-id', agentId, '--reason', `see ${secret}`, '--json']), 1, 'ledger_invalid_request');
    const after = await lexec(['ledger', 'audit', ...admin(), '--json']);
    expect(after.stdout).not.toContain('lexec_');
    expect((JSON.parse(after.stdout) as { result: AuditResult }).result.events.at(-1)?.action).toBe('agent_resumed');
  });
});
