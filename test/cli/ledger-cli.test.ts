import { createHash } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { ANSI, makeTempDir, removeDir, runLexec, type CliOptions, type CliRun } from '../support/cli.js';
import { freePorts } from '../support/free-ports.js';
import { startLedgerProcess, type TemporaryLedgerProcess as LedgerProcess } from '../support/ledger-process.js';

/*
 * The ledger admin verbs, end to end: the built `lexec` binary in child processes against a real
 * `lexec ledger serve` child process on loopback with its own SQLite file. Tests in this file
 * share one ledger and run in order, as an operator would: add an agent, issue credentials,
 * request, approve, deny, list, and manage policies.
 */

interface Agent {
  agent_id: string;
  name: string;
  status: string;
  created_at: string;
}
interface Credential {
  credential_id: string;
  kind: string;
  agent_id: string | null;
  credential_file: string;
  outcome: string;
}
interface Authorization {
  token_id: string;
  agent_id: string;
  status: string;
  amount_units: string;
  units_scale: number;
  currency: string;
  amount_cents: string;
  purpose: string | null;
  decided_by: string | null;
  decision_reason: string | null;
  created_at: string;
}
interface Policy {
  agent_id: string;
  per_authorization_cap_units: string;
  daily_cap_units: string;
  approval_threshold_units: string;
  units_scale: number;
  currency: string;
  max_requests_per_minute: string | null;
  max_requests_per_hour: string | null;
  suspend_after_velocity_refusals: string | null;
  version: string;
  updated_at: string;
}
interface Failure {
  kind: string;
  code: string;
  message: string;
  next_step: string;
  issues: { path: string; message: string }[];
}

let ledger: LedgerProcess;
let root: string;
/** Every CLI run of this file, checked at the end for leaked capabilities. */
const runs: CliRun[] = [];

async function lexec(args: readonly string[], options?: CliOptions): Promise<CliRun> {
  const run = await runLexec(args, options);
  runs.push(run);
  return run;
}

/** `--url` and `--token-file` for a token file (the admin capability unless told). */
function target(tokenFile = ledger.adminCapabilityPath): string[] {
  return ['--url', ledger.url, '--token-file', tokenFile];
}

/** The `--json` result of each command, as docs/ledger-cli.md documents it. */
interface Results {
  'ledger agents add': { agent: Agent; credential: Credential | null };
  'ledger agents list': { agents: Agent[] };
  'ledger credentials create': { credential: Credential };
  'ledger authorizations request': { authorization: Authorization; replayed: boolean };
  'ledger authorizations show': { authorization: Authorization };
  'ledger authorizations approve': { authorization: Authorization };
  'ledger authorizations deny': { authorization: Authorization };
  'ledger authorizations list': { authorizations: Authorization[] };
  'ledger approvals list': { authorizations: Authorization[] };
  'ledger policy init': { policy_file: string; policy: Record<string, unknown> };
  'ledger policy show': { policy: Policy; exported_to: string | null };
  'ledger policy set': { policy: Policy; policy_file: string; expected_version: string | null };
}

/** A string matcher typed as the string it stands for. */
function matching(pattern: RegExp): string {
  return expect.stringMatching(pattern) as string;
}

function succeeded<C extends keyof Results>(run: CliRun, command: C): Results[C] {
  expect(run.stderr).toBe('');
  expect(run.exitCode).toBe(0);
  const document = JSON.parse(run.stdout) as { json_version: number; command: string; ok: boolean; result: Results[C] };
  expect(document).toMatchObject({ json_version: 1, command, ok: true });
  return document.result;
}

function failed(run: CliRun, exitCode: number, code: string): Failure {
  expect(run.exitCode).toBe(exitCode);
  const document = JSON.parse(run.stdout) as { ok: boolean; error: Failure };
  expect(document.ok).toBe(false);
  expect(document.error.code).toBe(code);
  return document.error;
}

/** Rows of the ledger's own database, read-only, to prove what did (not) change. */
function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(ledger.dir, 'state', 'ledger.db'), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  ledger = await startLedgerProcess();
  root = await makeTempDir('lexec-ledger-cli-');
});

afterAll(async () => {
  await ledger.stop();
  await removeDir(root);
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const credentialsDir = () => join(root, 'credentials');
const botFile = () => join(credentialsDir(), 'bot.capability');
const approverFile = () => join(credentialsDir(), 'approver.capability');

describe('the admin flow through the CLI', () => {
  let agentId: string;
  let requestedId: string;
  let deniedId: string;

  it('agents add --credential-file adds the agent, writes its capability 0600 in a 0700 directory and registers only its digest', async () => {
    const result = succeeded(
      await lexec(['ledger', 'agents', 'add', ...target(), '--name', 'bot', '--credential-file', botFile(), '--json']),
      'ledger agents add',
    );
    expect(result.agent).toEqual({ agent_id: matching(/^agt_[0-9a-f-]{36}$/), name: 'bot', status: 'active', created_at: matching(ISO), suspended_at: null, suspension_reason: null, suspended_by: null });
    agentId = result.agent.agent_id;
    expect(result.credential).toEqual({
      credential_id: matching(/^cred_[0-9a-f-]{36}$/),
      kind: 'agent',
      agent_id: agentId,
      holder_name: null,
      credential_file: botFile(),
      outcome: 'created',
    });
    expect((await stat(botFile())).mode & 0o777).toBe(0o600);
    expect((await stat(credentialsDir())).mode & 0o777).toBe(0o700);
    expect(await readFile(botFile(), 'utf8')).toMatch(/^lexec_agent_[A-Za-z0-9_-]{43}\n$/);

    // The ledger holds the SHA-256 of the capability, and nothing else of it.
    const capability = (await readFile(botFile(), 'utf8')).trim();
    const stored = query<{ kind: string; agent_id: string; digest: Buffer }>(
      'SELECT kind, agent_id, digest FROM credentials WHERE credential_id = ?',
      result.credential?.credential_id,
    );
    expect(stored).toEqual([{ kind: 'agent', agent_id: agentId, digest: createHash('sha256').update(capability).digest() }]);
  });

  it('agents add without a credential file, then agents list: the human result on stdout, nothing on stderr', async () => {
    const human = await lexec(['ledger', 'agents', 'add', ...target(), '--name', 'helper']);
    expect(human.exitCode).toBe(0);
    expect(human.stderr).toBe('');
    expect(human.stdout).toMatch(/agent added:\nagt_[0-9a-f-]{36} {2}helper {2}active/);

    const list = await lexec(['ledger', 'agents', 'list', ...target()]);
    expect(list.exitCode).toBe(0);
    expect(list.stderr).toBe('');
    expect(list.stdout).toContain(`${agentId}  bot  active`);
    expect(list.stdout).toContain('helper  active');

    const json = succeeded(await lexec(['ledger', 'agents', 'list', ...target(), '--json']), 'ledger agents list');
    expect(json.agents.map((agent) => agent.name)).toEqual(['bot', 'helper']);
  });

  it('credentials create --kind approver issues an approver capability the same way', async () => {
    const result = succeeded(
      await lexec(['ledger', 'credentials', 'create', ...target(), '--kind', 'approver', '--credential-file', approverFile(), '--json']),
      'ledger credentials create',
    );
    expect(result.credential).toEqual({
      credential_id: matching(/^cred_/),
      kind: 'approver',
      agent_id: null,
      holder_name: null,
      credential_file: approverFile(),
      outcome: 'created',
    });
    expect((await stat(approverFile())).mode & 0o777).toBe(0o600);
    expect(await readFile(approverFile(), 'utf8')).toMatch(/^lexec_approver_/);
  });

  it('authorizations request above the approval threshold waits for an approver (agent token; amounts are strings)', async () => {
    const result = succeeded(
      await lexec(['ledger', 'authorizations', 'request', ...target(botFile()), '--amount-units', '2000000', '--purpose', 'poster draft', '--json']),
      'ledger authorizations request',
    );
    expect(result.authorization).toMatchObject({
      agent_id: agentId,
      status: 'requested',
      amount_units: '2000000',
      units_scale: 6,
      currency: 'USD',
      amount_cents: '200',
      purpose: 'poster draft',
      decided_by: null,
      decision_reason: null,
    });
    requestedId = result.authorization.token_id;
  });

  it('approvals list (approver token) shows what waits for a decision, with its purpose and the threshold it is above', async () => {
    const json = succeeded(await lexec(['ledger', 'approvals', 'list', ...target(approverFile()), '--json']), 'ledger approvals list');
    expect(json.authorizations).toEqual([expect.objectContaining({ token_id: requestedId, status: 'requested', amount_units: '2000000', decision_reason: null })]);

    const human = await lexec(['ledger', 'approvals', 'list', ...target(approverFile())]);
    expect(human.exitCode).toBe(0);
    expect(human.stderr).toBe('');
    expect(human.stdout).toMatch(new RegExp(`^${requestedId} +2\\.000000 USD  ${agentId}  requested \\S+  expires \\S+$`, 'm'));
    expect(human.stdout).toContain('  purpose  poster draft\n  above the approval threshold of 1.000000 USD (policy version 1)\n');
    expect(human.stdout).toContain('decide: lexec ledger authorizations approve|deny <token_id>');

    // The admin capability is not an approver's.
    const admin = failed(await lexec(['ledger', 'approvals', 'list', ...target(), '--json']), 1, 'ledger_unauthorized');
    expect(admin.message).toContain('this request needs an approver capability');
  });

  it('authorizations approve (approver token) approves it; show agrees for admin, approver and the agent', async () => {
    const human = await lexec(['ledger', 'authorizations', 'approve', requestedId, ...target(approverFile()), '--reason', 'within budget']);
    expect(human.exitCode).toBe(0);
    expect(human.stderr).toBe('');
    expect(human.stdout).toContain(`authorization ${requestedId}  approved`);
    expect(human.stdout).toContain('2.000000 USD (2000000 micro-units)');

    for (const tokenFile of [ledger.adminCapabilityPath, approverFile(), botFile()]) {
      const shown = succeeded(
        await lexec(['ledger', 'authorizations', 'show', requestedId, ...target(tokenFile), '--json']),
        'ledger authorizations show',
      );
      expect(shown.authorization).toMatchObject({ token_id: requestedId, status: 'approved', decided_by: matching(/^cred_/), decision_reason: 'within budget' });
    }
    const shownHuman = await lexec(['ledger', 'authorizations', 'show', requestedId, ...target()]);
    expect(shownHuman.stdout).toContain('  reason      within budget\n');

    const none = await lexec(['ledger', 'approvals', 'list', ...target(approverFile())]);
    expect([none.exitCode, none.stdout, none.stderr]).toEqual([0, 'No requests await a decision.', '']);
  });

  it('authorizations deny denies another request; approving it afterwards is a ledger_conflict naming the reason', async () => {
    const requested = succeeded(
      await lexec(['ledger', 'authorizations', 'request', ...target(botFile()), '--amount-units', '3000000', '--json']),
      'ledger authorizations request',
    );
    deniedId = requested.authorization.token_id;
    const denied = succeeded(
      await lexec(['ledger', 'authorizations', 'deny', deniedId, ...target(approverFile()), '--reason', 'not now', '--json']),
      'ledger authorizations deny',
    );
    expect(denied.authorization).toMatchObject({ status: 'denied', decision_reason: 'not now' });

    const approve = await lexec(['ledger', 'authorizations', 'approve', deniedId, ...target(approverFile()), '--json']);
    // Decided already: who (this approver credential, unnamed) and when.
    const error = failed(approve, 1, 'ledger_already_decided');
    expect(error.message).toMatch(/^The request was already denied by approver credential cred_[0-9a-f-]{36} at \d{4}-\d\d-\d\dT[\d:.]+Z; nothing changed\.$/);
  });

  it('authorizations list (admin token): newest first, filtered by status, agent and limit', async () => {
    const all = succeeded(
      await lexec(['ledger', 'authorizations', 'list', ...target(), '--json']),
      'ledger authorizations list',
    );
    expect(all.authorizations.map((a) => [a.token_id, a.status, a.decision_reason])).toEqual([
      [deniedId, 'denied', 'not now'],
      [requestedId, 'approved', 'within budget'],
    ]);
    const denied = succeeded(
      await lexec(['ledger', 'authorizations', 'list', ...target(), '--status', 'denied', '--agent-id', agentId, '--json']),
      'ledger authorizations list',
    );
    expect(denied.authorizations.map((a) => a.token_id)).toEqual([deniedId]);
    const limited = succeeded(
      await lexec(['ledger', 'authorizations', 'list', ...target(), '--limit', '1', '--json']),
      'ledger authorizations list',
    );
    expect(limited.authorizations).toHaveLength(1);

    const human = await lexec(['ledger', 'authorizations', 'list', ...target()]);
    expect(human.stderr).toBe('');
    expect(human.stdout).toContain(`${requestedId}  approved`);
    expect(human.stdout).toMatch(new RegExp(`^${deniedId}  denied .* reason: not now$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`^${requestedId}  approved .* reason: within budget$`, 'm'));
  });

  it('policy init, set, show and export round-trip a policy file; the export is plain JSON even with --color always', async () => {
    const policyFile = join(root, 'policies', 'bot.json');
    const init = succeeded(
      await lexec(['ledger', 'policy', 'init', '--file', policyFile, '--json']),
      'ledger policy init',
    );
    expect(init).toEqual({
      policy_file: policyFile,
      policy: { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' },
    });
    expect(JSON.parse(await readFile(policyFile, 'utf8'))).toEqual(init.policy);

    const edited = { ...init.policy, per_authorization_cap_units: '8000000', approval_threshold_units: '0' };
    await writeFile(policyFile, JSON.stringify(edited));
    const set = succeeded(
      await lexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', policyFile, '--json']),
      'ledger policy set',
    );
    expect(set).toEqual({
      policy_file: policyFile,
      expected_version: null,
      policy: {
        agent_id: agentId,
        per_authorization_cap_units: '8000000',
        daily_cap_units: '20000000',
        approval_threshold_units: '0',
        units_scale: 6,
        currency: 'USD',
        max_requests_per_minute: null,
        max_requests_per_hour: null,
        suspend_after_velocity_refusals: null,
        day_budget_units: null,
        week_budget_units: null,
        month_budget_units: null,
        budget_alert_percentages: [50, 80, 100],
        targets: null,
        version: '2',
        updated_at: matching(ISO),
        source: 'operator',
      },
    });

    const exportFile = join(root, 'policies', 'exported.json');
    const shown = await lexec(['ledger', 'policy', 'show', ...target(), '--agent-id', agentId, '--export', exportFile, '--color', 'always']);
    expect(shown.exitCode).toBe(0);
    expect(shown.stderr).toBe('');
    expect(shown.stdout).toMatch(ANSI); // colour really was on
    expect(shown.stdout).toContain('8.000000 USD');
    const exported = await readFile(exportFile, 'utf8');
    expect(exported).not.toMatch(ANSI);
    // The alert percentages the policy shows (the defaults) are written out too.
    expect(JSON.parse(exported)).toEqual({ ...edited, budget_alert_percentages: [50, 80, 100] });

    const json = succeeded(
      await lexec(['ledger', 'policy', 'show', ...target(), '--agent-id', agentId, '--json', '--color', 'always']),
      'ledger policy show',
    );
    expect(json).toEqual({ policy: set.policy, budgets: [], time_zone: 'UTC', exported_to: null });

    // The exported file is accepted back as it is.
    succeeded(await lexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', exportFile, '--json']), 'ledger policy set');
  });

  it('an agent cannot see another agent’s authorization: it looks like one that does not exist', async () => {
    const otherFile = join(credentialsDir(), 'other.capability');
    succeeded(await lexec(['ledger', 'agents', 'add', ...target(), '--name', 'other', '--credential-file', otherFile, '--json']), 'ledger agents add');
    const run = await lexec(['ledger', 'authorizations', 'show', requestedId, ...target(otherFile), '--json']);
    failed(run, 1, 'ledger_not_found');
  });
});

describe('ledger verbs refuse bad input with a clear code and a non-zero exit', () => {
  const someAgent = async (): Promise<string> => {
    const result = succeeded(await lexec(['ledger', 'agents', 'list', ...target(), '--json']), 'ledger agents list');
    const agent = result.agents[0];
    if (agent === undefined) throw new Error('no agent');
    return agent.agent_id;
  };

  it('a relative token file is a usage error (exit 2)', async () => {
    const run = await lexec(['ledger', 'agents', 'list', '--url', ledger.url, '--token-file', 'admin.capability', '--json'], { cwd: root });
    expect(failed(run, 2, 'token_file_not_absolute').kind).toBe('usage');
  });

  it('a missing token file names the path (exit 1)', async () => {
    const path = join(root, 'nope.capability');
    const error = failed(await lexec(['ledger', 'agents', 'list', ...target(path), '--json']), 1, 'secret_file_missing');
    expect(error.message).toContain(path);
  });

  it('a token file others can read is refused before anything is sent', async () => {
    const path = join(root, 'loose.capability');
    await writeFile(path, await readFile(ledger.adminCapabilityPath, 'utf8'));
    await chmod(path, 0o644);
    failed(await lexec(['ledger', 'agents', 'list', ...target(path), '--json']), 1, 'secret_file_not_private');
  });

  it('a token file without a capability in it is refused without showing its content', async () => {
    const path = join(root, 'garbage.capability');
    await writeFile(path, 'hunter2-not-a-capability\n', { mode: 0o600 });
    const run = await lexec(['ledger', 'agents', 'list', ...target(path), '--json']);
    failed(run, 1, 'token_file_invalid');
    expect(run.stdout + run.stderr).not.toContain('hunter2');
  });

  it('a token of the wrong kind gets the ledger’s 401, mapped to ledger_unauthorized naming the kind needed', async () => {
    const json = failed(await lexec(['ledger', 'agents', 'list', ...target(botFile()), '--json']), 1, 'ledger_unauthorized');
    expect(json.message).toContain('refused the agent capability (401 unauthorized)');
    expect(json.message).toContain('needs an admin or an executor capability');
    const human = await lexec(['ledger', 'authorizations', 'request', ...target(ledger.adminCapabilityPath), '--amount-units', '1000']);
    expect(human.exitCode).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain('Error: The ledger at');
    expect(human.stderr).toContain('this request needs an agent capability');
  });

  it.each([['1.5'], ['-1'], ['0'], ['1e6'], ['12abc'], [' 5']])('--amount-units %j is a usage error naming the flag', async (value) => {
    const before = query<{ n: number }>('SELECT COUNT(*) AS n FROM authorizations');
    const run = await lexec(['ledger', 'authorizations', 'request', ...target(botFile()), `--amount-units=${value}`, '--json']);
    const error = failed(run, 2, 'invalid_flag_value');
    expect(error.message).toMatch(/^--amount-units must be a whole number of micro-units/);
    expect(query<{ n: number }>('SELECT COUNT(*) AS n FROM authorizations')).toEqual(before);
  });

  it('an unreachable URL is ledger_unreachable naming the URL', async () => {
    // A port of this worker's own (free-ports.ts): nothing listens on it, and nobody takes it meanwhile.
    const [port = 0] = await freePorts(1);
    const url = `http://127.0.0.1:${port}`;
    const error = failed(await lexec(['ledger', 'agents', 'list', '--url', url, '--token-file', ledger.adminCapabilityPath, '--json']), 1, 'ledger_unreachable');
    expect(error.message).toBe(`The ledger at ${url} is unreachable (ECONNREFUSED).`);
  });

  it('plain http to a non-loopback host is refused before the token is read (usage, exit 2)', async () => {
    const run = await lexec(['ledger', 'agents', 'list', '--url', 'http://ledger.example.com:7400', '--token-file', ledger.adminCapabilityPath, '--json']);
    failed(run, 2, 'ledger_url_invalid');
  });

  it('a server that is not a lexec ledger is ledger_bad_response', async () => {
    const server: Server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      const run = await lexec(['ledger', 'agents', 'list', '--url', `http://127.0.0.1:${address.port}`, '--token-file', ledger.adminCapabilityPath, '--json']);
      failed(run, 1, 'ledger_bad_response');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('credentials create refuses to overwrite an existing credential file and registers nothing', async () => {
    const before = query<{ n: number }>('SELECT COUNT(*) AS n FROM credentials');
    const original = await readFile(approverFile(), 'utf8');
    const run = await lexec(['ledger', 'credentials', 'create', ...target(), '--kind', 'approver', '--credential-file', approverFile(), '--json']);
    const error = failed(run, 1, 'credential_file_exists');
    expect(error.message).toContain(approverFile());
    expect(await readFile(approverFile(), 'utf8')).toBe(original);
    expect(query<{ n: number }>('SELECT COUNT(*) AS n FROM credentials')).toEqual(before);
  });

  it('credentials create: a relative credential file and a kind/agent mismatch are usage errors', async () => {
    failed(await lexec(['ledger', 'credentials', 'create', ...target(), '--kind', 'executor', '--credential-file', 'x.capability', '--json']), 2, 'credential_file_not_absolute');
    failed(await lexec(['ledger', 'credentials', 'create', ...target(), '--kind', 'agent', '--credential-file', join(root, 'c', 'a.capability'), '--json']), 2, 'usage_error');
    const agentId = await someAgent();
    failed(
      await lexec(['ledger', 'credentials', 'create', ...target(), '--kind', 'approver', '--agent-id', agentId, '--credential-file', join(root, 'c', 'b.capability'), '--json']),
      2,
      'usage_error',
    );
  });

  it('agents add with a taken name is a ledger_conflict, and the new credential file is not left behind', async () => {
    const file = join(credentialsDir(), 'duplicate.capability');
    const error = failed(await lexec(['ledger', 'agents', 'add', ...target(), '--name', 'bot', '--credential-file', file, '--json']), 1, 'ledger_conflict');
    expect(error.issues).toEqual([{ path: 'name', message: 'refused by the ledger (agent_exists)' }]);
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a request above the per-authorization cap is ledger_policy_refused with the reason and field', async () => {
    const error = failed(await lexec(['ledger', 'authorizations', 'request', ...target(botFile()), '--amount-units', '99000000', '--json']), 1, 'ledger_policy_refused');
    expect(error.message).toContain('422 policy_refused: per_authorization_cap_exceeded');
    expect(error.issues).toEqual([{ path: 'amount_units', message: 'refused by the ledger (per_authorization_cap_exceeded)' }]);
  });

  it('a purpose holding a capability is refused by the ledger with its field path and never shown', async () => {
    const capability = generateCapability('agent');
    const run = await lexec(['ledger', 'authorizations', 'request', ...target(botFile()), '--amount-units', '1000', '--purpose', `for ${capability}`, '--json']);
    const error = failed(run, 1, 'ledger_invalid_request');
    expect(error.message).toContain('400 invalid_request: secret_shaped_text');
    expect(error.issues).toEqual([{ path: 'purpose', message: 'refused by the ledger (secret_shaped_text)' }]);
    expect(run.stdout + run.stderr).not.toContain(capability.slice(-16));
  });

  it('--idempotency-key: the same request again answers the open authorization it opened (replayed); another amount under the key is ledger_conflict; a bad key is a usage error', async () => {
    const key = 'poster-draft-7';
    const request = (amountUnits: string, ...extra: string[]) =>
      lexec(['ledger', 'authorizations', 'request', ...target(botFile()), '--amount-units', amountUnits, '--purpose', 'poster draft', '--idempotency-key', key, ...extra]);
    const first = succeeded(await request('2500000', '--json'), 'ledger authorizations request');
    expect(first).toMatchObject({ replayed: false, authorization: { status: 'requested', amount_units: '2500000' } });
    const again = succeeded(await request('2500000', '--json'), 'ledger authorizations request');
    expect(again).toEqual({ replayed: true, authorization: first.authorization });
    const human = await request('2500000');
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toContain(`the idempotency key names this open authorization, requested at ${first.authorization.created_at}: nothing new was requested`);
    expect(human.stdout).toContain(`authorization ${first.authorization.token_id}`);

    const before = query<{ n: number }>('SELECT COUNT(*) AS n FROM authorizations');
    const reused = failed(await request('2600000', '--json'), 1, 'ledger_conflict');
    expect(reused.message).toContain('409 conflict: idempotency_key_reused');
    expect(reused.issues).toEqual([{ path: 'idempotency-key', message: 'refused by the ledger (idempotency_key_reused)' }]);
    for (const bad of ['', 'k'.repeat(256), 'tab\there']) {
      const run = await lexec(['ledger', 'authorizations', 'request', ...target(botFile()), '--amount-units', '1000', `--idempotency-key=${bad}`, '--json']);
      expect(failed(run, 2, 'invalid_flag_value').message).toMatch(/^--idempotency-key must be 1-255 printable ASCII characters/);
    }
    expect(query<{ n: number }>('SELECT COUNT(*) AS n FROM authorizations')).toEqual(before);
    for (const run of runs.slice(-5)) expect(run.stdout + run.stderr).not.toContain(key);
  });

  it('an unknown authorization is ledger_not_found; a malformed token id or agent id is a usage error', async () => {
    failed(await lexec(['ledger', 'authorizations', 'show', '00000000-0000-4000-8000-000000000000', ...target(), '--json']), 1, 'ledger_not_found');
    failed(await lexec(['ledger', 'authorizations', 'show', 'not-a-uuid', ...target(), '--json']), 2, 'invalid_argument');
    failed(await lexec(['ledger', 'policy', 'show', ...target(), '--agent-id', 'Not An Agent', '--json']), 2, 'invalid_flag_value');
  });

  it('policy show and set take an agent name for --agent-id; an unknown name lists the agents; manual mode needs the flag', async () => {
    const agents = succeeded(await lexec(['ledger', 'agents', 'list', ...target(), '--json']), 'ledger agents list').agents;
    const bot = agents.find((agent) => agent.name === 'bot')?.agent_id ?? '';
    const byId = succeeded(await lexec(['ledger', 'policy', 'show', ...target(), '--agent-id', bot, '--json']), 'ledger policy show');
    const byName = succeeded(await lexec(['ledger', 'policy', 'show', ...target(), '--agent-id', 'bot', '--json']), 'ledger policy show');
    expect(byName).toEqual(byId);
    const unknown = failed(await lexec(['ledger', 'policy', 'show', ...target(), '--agent-id', 'nobody', '--json']), 1, 'agent_not_found');
    expect(unknown.message).toContain(`its agents: ${agents.map((agent) => agent.name).join(', ')}`);
    expect(unknown.issues).toEqual([{ path: '--agent-id', message: 'no agent with this id or name' }]);
    const none = failed(await lexec(['ledger', 'policy', 'show', ...target(), '--json']), 2, 'usage_error');
    expect(none.message).toContain('--agent-id is required with --url');
  });

  it('policy set reports every problem of an invalid file with its path and sends nothing', async () => {
    const agentId = await someAgent();
    const version = () => query<{ version: number }>('SELECT version FROM policies WHERE agent_id = ?', agentId);
    const before = version();
    const file = join(root, 'policies', 'bad.json');
    await writeFile(
      file,
      JSON.stringify({ per_authorization_cap_units: 1.5, daily_cap_units: '-3', approval_threshold_units: '100', units_scale: 2, surprise: true }),
    );
    const error = failed(await lexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', file, '--json']), 1, 'policy_file_invalid');
    expect(error.issues.map((issue) => issue.path).sort()).toEqual([
      'currency',
      'daily_cap_units',
      'per_authorization_cap_units',
      'surprise',
      'units_scale',
    ]);
    expect(version()).toEqual(before);

    failed(await lexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', join(root, 'missing.json'), '--json']), 1, 'policy_file_not_found');
    failed(await lexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', 'bad.json', '--json']), 2, 'policy_file_not_absolute');
  });

  it('policy init and policy show --export refuse to overwrite an existing file', async () => {
    const file = join(root, 'policies', 'keep.json');
    await writeFile(file, '{"mine": true}\n');
    failed(await lexec(['ledger', 'policy', 'init', '--file', file, '--json']), 1, 'policy_file_exists');
    failed(await lexec(['ledger', 'policy', 'show', ...target(), '--agent-id', await someAgent(), '--export', file, '--json']), 1, 'policy_file_exists');
    expect(await readFile(file, 'utf8')).toBe('{"mine": true}\n');
  });
});

describe('secrets', () => {
  it('no capability appears in any stdout or stderr of this file, nor in the ledger log', async () => {
    const files = [ledger.adminCapabilityPath, botFile(), approverFile(), join(credentialsDir(), 'other.capability')];
    const secrets = await Promise.all(files.map(async (file) => (await readFile(file, 'utf8')).trim()));
    expect(runs.length).toBeGreaterThan(30);
    for (const secret of secrets) {
      expect(secret).toMatch(/^lexec_[a-z]+_/);
      for (const run of runs) expect(run.stdout + run.stderr).not.toContain(secret);
      expect(ledger.stderr()).not.toContain(secret);
    }
  });
});
