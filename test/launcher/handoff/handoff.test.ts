import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeHandoff, type Handoff } from '../../../src/launcher/handoff/handoff.js';
import { createProfileFromExample } from '../../../src/launcher/profiles/profile-store.js';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { expectFailure, expectResult, makeTempDir, removeDir, runLexec, type CliRun } from '../../support/cli.js';
import { startRunningStack, type RunningStack } from '../../support/running-stack.js';

/*
 * Handoff resolution for server-bound commands (spec §5.6, §7 rule 6): with no --url, a ledger
 * verb takes the ledger endpoint and the credential for its role from the selected profile's
 * active handoff, as one bundle; it ignores ambient variables; and without a valid active
 * handoff it fails instead of reaching any other server — proven with a decoy that counts every
 * request it receives.
 */

let stack: RunningStack;
let decoy: Server;
let decoyUrl: string;
let decoyHits = 0;
const runs: CliRun[] = [];
const sleepers: ChildProcess[] = [];

/** Every variable name a URL or token might plausibly be taken from, all pointing at the decoy. */
function ambient(): Record<string, string> {
  return {
    LEXEC_URL: decoyUrl,
    LEXEC_LEDGER_URL: decoyUrl,
    LEXEC_LEDGER_ENDPOINT: decoyUrl,
    LEXEC_EXECUTOR_URL: decoyUrl,
    LEXEC_TOKEN: 'lexec_admin_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    LEXEC_LEDGER_TOKEN: 'lexec_admin_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    LEXEC_TOKEN_FILE: '/nonexistent/admin.capability',
    LEXEC_PROFILE: 'elsewhere',
  };
}

async function lexec(args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  const run = await stack.lexec(args, { env });
  runs.push(run);
  return run;
}

/** A live process that is not the supervisor of anything. */
function sleeper(): number {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  sleepers.push(child);
  if (child.pid === undefined) throw new Error('no pid');
  return child.pid;
}

/** A second profile of the same home, not running, whose handoff (if any) points at the decoy. */
async function strayProfile(name: string, handoff: { supervisorPid: number; lockPid: number | null } | null) {
  await createProfileFromExample(stack.home, name, 'sandbox');
  const paths = profilePaths(stack.home, name);
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  if (handoff !== null) {
    const document: Handoff = {
      ...stack.handoff,
      profile: name,
      supervisor_pid: handoff.supervisorPid,
      ledger: { endpoint: decoyUrl },
      executor: { endpoint: decoyUrl },
      // The real stack's credentials: a resolver that used this handoff would send them to the decoy.
    };
    await writeHandoff(paths, document);
    if (handoff.lockPid !== null) await writeFile(paths.supervisorLock, `${String(handoff.lockPid)}\n`, { mode: 0o600 });
  }
  return paths;
}

beforeAll(async () => {
  decoy = createServer((request, response) => {
    decoyHits += 1;
    request.resume();
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"agents":[]}');
  });
  await new Promise<void>((resolve) => decoy.listen(0, '127.0.0.1', resolve));
  decoyUrl = `http://127.0.0.1:${String((decoy.address() as AddressInfo).port)}`;
  stack = await startRunningStack();
}, 180_000);

afterAll(async () => {
  for (const child of sleepers) child.kill('SIGKILL');
  await stack.stop();
  await new Promise((resolve) => decoy.close(resolve));
  // No capability ever reached stdout or stderr.
  const secrets = await Promise.all((['admin', 'agent', 'approver', 'caller'] as const).map((role) => stack.capability(role).catch(() => 'x'.repeat(60))));
  for (const run of runs) {
    expect(run.stdout + run.stderr).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{43}/);
    for (const secret of secrets) expect(run.stdout + run.stderr).not.toContain(secret);
  }
}, 120_000);

afterEach(() => {
  expect(decoyHits, 'the decoy received a request').toBe(0);
});

describe('server-bound ledger verbs on a profile with a running stack', () => {
  it('take the ledger and the credential for their role from the handoff (admin, agent, approver), with no --url or token file', async () => {
    const agents = expectResult(await lexec(['ledger', 'agents', 'list', '--json'])) as { agents: { agent_id: string; name: string }[] };
    expect(agents.agents.map((agent) => agent.name)).toEqual(['local']);

    // The default policy approves up to 1 USD at once; above it an approver decides.
    const requested = expectResult(
      await lexec(['ledger', 'authorizations', 'request', '--amount-units', '2000000', '--purpose', 'handoff test', '--json']),
    ) as { authorization: { token_id: string; status: string; agent_id: string } };
    expect(requested.authorization).toMatchObject({ status: 'requested', agent_id: stack.agentId });
    const approved = expectResult(
      await lexec(['ledger', 'authorizations', 'approve', requested.authorization.token_id, '--profile', 'sandbox', '--json']),
    ) as { authorization: { status: string } };
    expect(approved.authorization.status).toBe('approved');
    const shown = expectResult(await lexec(['ledger', 'authorizations', 'show', requested.authorization.token_id, '--json'])) as { authorization: { status: string } };
    expect(shown.authorization.status).toBe('approved');
    const policy = expectResult(await lexec(['ledger', 'policy', 'show', '--agent-id', stack.agentId, '--json'])) as { policy: { approval_threshold_units: string } };
    expect(policy.policy.approval_threshold_units).toBe('1000000');
  });

  it('decide --as a person: their own named approver credential, so the decision and the audit trail name them; a second decision reuses it', async () => {
    type Decided = { authorization: { token_id: string; status: string; decided_by: string | null; decided_by_name?: string | null } };
    const request = async (purpose: string) =>
      (expectResult(await lexec(['ledger', 'authorizations', 'request', '--amount-units', '2000000', '--purpose', purpose, '--json'])) as Decided).authorization.token_id;
    const first = await request('as grace, approved');
    const approved = expectResult(await lexec(['ledger', 'authorizations', 'approve', first, '--as', '  Grace Hopper ', '--reason', 'poster run', '--json'])) as Decided;
    expect(approved.authorization).toMatchObject({ status: 'approved', decided_by_name: 'Grace Hopper', decided_by: expect.stringMatching(/^lexec-console-approver-[0-9a-f]{16}$/) as unknown });
    const second = await request('as grace, denied');
    const denied = expectResult(await lexec(['ledger', 'authorizations', 'deny', second, '--as', 'Grace Hopper', '--json'])) as Decided;
    expect(denied.authorization).toMatchObject({ status: 'denied', decided_by_name: 'Grace Hopper', decided_by: approved.authorization.decided_by });
    // The ledger's audit trail names her, with the credential she decided with.
    type Audit = { events: { action: string; subject_id: string; actor_name: string | null; actor_credential_id: string | null; reason: string | null }[] };
    const trail = (expectResult(await lexec(['ledger', 'audit', '--since', '1h', '--json'])) as Audit).events.filter((event) => event.subject_id === first || event.subject_id === second);
    expect(trail.map((event) => [event.action, event.actor_name, event.actor_credential_id, event.reason])).toEqual([
      ['authorization_approved', 'Grace Hopper', approved.authorization.decided_by, 'poster run'],
      ['authorization_denied', 'Grace Hopper', approved.authorization.decided_by, null],
    ]);
    // Without --as the profile's own approver decides, as before.
    const third = await request('unnamed');
    const plain = expectResult(await lexec(['ledger', 'authorizations', 'approve', third, '--json'])) as Decided;
    expect(plain.authorization.decided_by_name ?? null).toBeNull();

    // Refused before anything is sent: with --url (the token file's holder decides), a blank or too long name, a secret-shaped one (not echoed).
    const withUrl = expectFailure(await lexec(['ledger', 'authorizations', 'approve', third, '--as', 'Grace Hopper', '--url', decoyUrl, '--token-file', stack.paths.approverCapability, '--json']), 2, 'usage_error');
    expect(withUrl.message).toContain('--as and --url');
    expect(expectFailure(await lexec(['ledger', 'authorizations', 'deny', third, '--as', '   ', '--json']), 2, 'invalid_flag_value').message).toBe('--as must not be blank.');
    expectFailure(await lexec(['ledger', 'authorizations', 'deny', third, '--as', 'x'.repeat(101), '--json']), 2, 'invalid_flag_value');
    const secretShaped = `lexec_approver_${'A'.repeat(43)}`;
    const shaped = await lexec(['ledger', 'authorizations', 'deny', third, '--as', secretShaped, '--json']);
    expectFailure(shaped, 2, 'invalid_flag_value');
    expect(shaped.stdout + shaped.stderr).not.toContain(secretShaped);
  });

  it('ignore ambient URL, token and profile variables (the decoy they name receives nothing)', async () => {
    const agents = expectResult(await lexec(['ledger', 'agents', 'list', '--json'], ambient())) as { agents: { name: string }[] };
    expect(agents.agents.map((agent) => agent.name)).toEqual(['local']);
  });

  it('lexec run goes through the same handoff and ignores the same variables', async () => {
    const out = join(stack.home, 'run-out');
    const run = await lexec(['run', 'a beacon', '--out', out, '--json'], ambient());
    const ran = expectResult(run) as { execution: { state: string }; files: unknown[] };
    expect(ran.execution.state).toBe('succeeded');
    expect(ran.files).toHaveLength(1);
  }, 120_000);

  it('--url selects manual mode: the stack reached by hand with its admin token file', async () => {
    const agents = expectResult(
      await lexec(['ledger', 'agents', 'list', '--url', stack.ledgerUrl, '--token-file', stack.paths.ledgerAdminCapability, '--json'], ambient()),
    ) as { agents: { name: string }[] };
    expect(agents.agents.map((agent) => agent.name)).toEqual(['local']);
  });

  it('--url with --profile, --url without --token-file, and --token-file without --url are usage errors (exit 2) that send nothing', async () => {
    const both = expectFailure(await lexec(['ledger', 'agents', 'list', '--profile', 'sandbox', '--url', decoyUrl, '--token-file', stack.paths.ledgerAdminCapability, '--json']), 2, 'usage_error');
    expect(both.message).toContain('--profile and --url');
    const noToken = expectFailure(await lexec(['ledger', 'agents', 'list', '--url', decoyUrl, '--json']), 2, 'usage_error');
    expect(noToken.message).toContain('--token-file');
    const noUrl = expectFailure(await lexec(['ledger', 'agents', 'list', '--token-file', stack.paths.ledgerAdminCapability, '--json']), 2, 'usage_error');
    expect(noUrl.message).toContain('--token-file needs --url');
  });
});

describe('a selected profile without a valid active handoff fails instead of reaching another server', () => {
  it('a profile whose stack is not running: stack_not_running, with the start command as the next step', async () => {
    await strayProfile('idle', null);
    const error = expectFailure(await lexec(['ledger', 'agents', 'list', '--profile', 'idle', '--json'], ambient()), 1, 'stack_not_running');
    expect(error.next_step).toContain('lexec stack start --profile idle');
    expectFailure(await lexec(['run', 'a decoy', '--profile', 'idle', '--json'], ambient()), 1, 'stack_not_running');
  });

  it('a profile that does not exist: profile_not_found', async () => {
    expectFailure(await lexec(['ledger', 'agents', 'list', '--profile', 'nowhere', '--json'], ambient()), 1, 'profile_not_found');
  });

  it('a fresh home (no selection, no default profile): the default profile is named, nothing is reached', async () => {
    const home = await makeTempDir('lexec-empty-home-');
    try {
      const run = await runLexec(['ledger', 'agents', 'list', '--json'], { env: { LEXEC_HOME: home, ...ambient() } });
      runs.push(run);
      const error = expectFailure(run, 1, 'profile_not_found');
      expect(error.message).toContain('"sandbox"');
      expect(error.next_step).toContain('lexec stack start');
    } finally {
      await removeDir(home);
    }
  });

  it('a handoff left behind by a supervisor that is gone (stale lock of a dead pid): stack_not_running', async () => {
    const dead = spawn('true');
    await new Promise((resolve) => dead.once('exit', resolve));
    await strayProfile('stale', { supervisorPid: dead.pid ?? 1, lockPid: dead.pid ?? 1 });
    expectFailure(await lexec(['ledger', 'agents', 'list', '--profile', 'stale', '--json']), 1, 'stack_not_running');
  });

  it('a handoff written by another process than the running supervisor: handoff_missing', async () => {
    // The lock names a live supervisor; the handoff names a different live process.
    await strayProfile('foreign', { supervisorPid: process.pid, lockPid: sleeper() });
    const error = expectFailure(await lexec(['ledger', 'authorizations', 'request', '--amount-units', '1', '--profile', 'foreign', '--json']), 1, 'handoff_missing');
    expect(error.message).toContain(String(process.pid));
    expectFailure(await lexec(['run', 'a decoy', '--profile', 'foreign', '--json']), 1, 'handoff_missing');
  });

  it('a running supervisor that has not published a handoff yet: handoff_missing', async () => {
    const paths = await strayProfile('starting', null);
    await writeFile(paths.supervisorLock, `${String(sleeper())}\n`, { mode: 0o600 });
    const error = expectFailure(await lexec(['ledger', 'agents', 'list', '--profile', 'starting', '--json']), 1, 'handoff_missing');
    // One step for a stack still starting and for a lost handoff alike: start waits, joins and writes it; stop would interrupt work.
    expect(error.next_step).toContain('lexec stack start --profile starting');
    expect(error.next_step).not.toContain('stack stop');
  });

  it('a damaged handoff: handoff_invalid', async () => {
    const paths = await strayProfile('damaged', { supervisorPid: process.pid, lockPid: process.pid });
    const text = await readFile(paths.handoffFile, 'utf8');
    await writeFile(paths.handoffFile, text.replace('"handoff_version": 1', '"handoff_version": 7'));
    expectFailure(await lexec(['ledger', 'agents', 'list', '--profile', 'damaged', '--json']), 1, 'handoff_invalid');
  });
});

describe('a handoff credential of the wrong kind', () => {
  it('is refused before anything is sent (handoff_credential_invalid), naming the file, never its content', async () => {
    await writeHandoff(stack.paths, { ...stack.handoff, credentials: { ...stack.handoff.credentials, admin: stack.handoff.credentials.agent } });
    try {
      const error = expectFailure(await lexec(['ledger', 'agents', 'list', '--json']), 1, 'handoff_credential_invalid');
      expect(error.message).toContain(stack.handoff.credentials.agent);
    } finally {
      await writeHandoff(stack.paths, stack.handoff);
    }
  });
});

describe('local-only commands need no handoff', () => {
  it('ledger policy init and stack profiles work with no stack running', async () => {
    const home = await makeTempDir('lexec-local-only-');
    try {
      const file = join(home, 'p.json');
      const init = await runLexec(['ledger', 'policy', 'init', '--file', file, '--json'], { env: { LEXEC_HOME: home } });
      runs.push(init);
      expect(init.exitCode, init.stderr).toBe(0);
      const profiles = await runLexec(['stack', 'profiles', '--json'], { env: { LEXEC_HOME: home } });
      runs.push(profiles);
      expect(profiles.exitCode, profiles.stderr).toBe(0);
    } finally {
      await removeDir(home);
    }
  });
});
