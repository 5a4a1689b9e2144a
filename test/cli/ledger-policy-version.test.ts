import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, expectResult, makeTempDir, removeDir, runLexec } from '../support/cli.js';
import { startLedgerProcess, type TemporaryLedgerProcess } from '../support/ledger-process.js';

/*
 * `lexec ledger policy set --expect-version N` (issue 27 item 4): the built binary in child
 * processes against a real `lexec ledger serve` child process with its own SQLite file. A change
 * made from a version the policy is no longer at changes nothing and says which version it is at.
 */

interface Policy {
  agent_id: string;
  per_authorization_cap_units: string;
  version: string;
  source: string;
}

let ledger: TemporaryLedgerProcess;
let root: string;
let agentId: string;

const target = () => ['--url', ledger.url, '--token-file', ledger.adminCapabilityPath];

/** The agent's policy row as the ledger's database file holds it. */
function storedPolicy(): Record<string, unknown>[] {
  const db = new Database(join(ledger.dir, 'state', 'ledger.db'), { readonly: true });
  try {
    return db.prepare('SELECT * FROM policies WHERE agent_id = ?').all(agentId) as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** A policy file with this per-authorization cap (micro-units). */
async function policyFile(name: string, cap: string): Promise<string> {
  const file = join(root, `${name}.json`);
  await writeFile(file, JSON.stringify({ per_authorization_cap_units: cap, daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' }));
  return file;
}

const set = (file: string, ...more: string[]) => runLexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', file, ...more, '--json']);

async function currentVersion(): Promise<string> {
  const shown = expectResult(await runLexec(['ledger', 'policy', 'show', ...target(), '--agent-id', agentId, '--json'])) as { policy: Policy };
  return shown.policy.version;
}

beforeAll(async () => {
  ledger = await startLedgerProcess();
  root = await makeTempDir('lexec-policy-version-');
  const added = expectResult(await runLexec(['ledger', 'agents', 'add', ...target(), '--name', 'bot', '--json'])) as { agent: { agent_id: string } };
  agentId = added.agent.agent_id;
});

afterAll(async () => {
  await ledger.stop();
  await removeDir(root);
});

describe('ledger policy set --expect-version', () => {
  it('sets the policy when it is still at the version shown; the result names the version it was made from', async () => {
    const version = await currentVersion();
    expect(version).toBe('1');
    const shown = await runLexec(['ledger', 'policy', 'show', ...target(), '--agent-id', agentId]);
    expect(shown.stdout).toContain('(version 1, updated');
    expect(shown.stdout).toContain('lexec ledger policy set --file <path> --expect-version 1');

    const result = expectResult(await set(await policyFile('four', '4000000'), '--expect-version', version)) as { policy: Policy; expected_version: string };
    expect(result).toMatchObject({ expected_version: '1', policy: { version: '2', per_authorization_cap_units: '4000000', source: 'operator' } });

    const human = await runLexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', await policyFile('three', '3000000'), '--expect-version', '2']);
    expect([human.exitCode, human.stderr]).toEqual([0, '']);
    expect(human.stdout).toContain('(it was at version 2, as expected)');
    expect(human.stdout).toContain('(version 3, updated');
  });

  it('a stale version is ledger_policy_version_mismatch (exit 1) naming the current version, and nothing changes', async () => {
    const before = storedPolicy();
    expect(before).toEqual([expect.objectContaining({ version: 3 })]);
    const run = await set(await policyFile('stale', '1000000'), '--expect-version', '2');
    const error = expectFailure(run, 1, 'ledger_policy_version_mismatch');
    expect(error.kind).toBe('user');
    expect(error.message).toBe(`The ledger at ${ledger.url} changed nothing: the policy is at version 3 now, not the version expected (412 policy_version_mismatch).`);
    expect(error.next_step).toContain('--expect-version 3');
    expect(error.issues).toEqual([{ path: '--expect-version', message: 'refused by the ledger (policy_version_mismatch): the policy is at version 3' }]);
    expect(storedPolicy()).toEqual(before);

    const human = await runLexec(['ledger', 'policy', 'set', ...target(), '--agent-id', agentId, '--file', await policyFile('stale', '1000000'), '--expect-version', '2']);
    expect([human.exitCode, human.stdout]).toEqual([1, '']);
    expect(human.stderr).toContain('the policy is at version 3 now');
  });

  it.each([['abc'], ['1.5'], ['-1'], ['0'], ['1e3'], [' 3'], [''], ['9223372036854775808']])(
    '--expect-version %j is a usage error (exit 2) naming the flag; nothing is sent',
    async (value) => {
      const before = storedPolicy();
      const run = await set(await policyFile('unsent', '1000000'), `--expect-version=${value}`);
      const error = expectFailure(run, 2, 'invalid_flag_value');
      expect(error.kind).toBe('usage');
      // The flag is named; the value typed is not repeated.
      expect(error.message).toBe('--expect-version must be a version: a whole number from 1 to 9223372036854775807, as `lexec ledger policy show` shows it.');
      expect(storedPolicy()).toEqual(before);
    },
  );

  it('two sets at once from the same version: exactly one wins, the other gets policy_version_mismatch and changes nothing', async () => {
    const version = await currentVersion();
    const next = String(Number(version) + 1);
    const files = [await policyFile('racer-one', '1100000'), await policyFile('racer-two', '2200000')];
    // Both processes start together; whichever order their requests reach the ledger in, one lands.
    const runs = await Promise.all(files.map((file) => set(file, '--expect-version', version)));
    expect(runs.map((run) => run.exitCode).sort()).toEqual([0, 1]);
    const winner = runs.find((run) => run.exitCode === 0);
    const loser = runs.find((run) => run.exitCode === 1);
    if (winner === undefined || loser === undefined) throw new Error('no winner or no loser');
    const won = expectResult(winner) as { policy: Policy };
    expect(won.policy.version).toBe(next);
    const error = expectFailure(loser, 1, 'ledger_policy_version_mismatch');
    expect(error.issues).toEqual([{ path: '--expect-version', message: `refused by the ledger (policy_version_mismatch): the policy is at version ${next}` }]);
    // The database holds the winner's policy, once: the loser's change was not applied after it.
    expect(storedPolicy()).toEqual([expect.objectContaining({ version: Number(next), per_authorization_cap_units: Number(won.policy.per_authorization_cap_units) })]);
  });
});
