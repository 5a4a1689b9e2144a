import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, makeTempDir, removeDir } from '../support/cli.js';
import { tableAt } from '../support/example-profiles.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';

/*
 * A run the agent's spend policy refuses says which cap refused it and what would fit (issue 26
 * item 7): the per-authorization cap with the largest --count within it — not "wait for the
 * rolling daily spend", which cannot help — and the daily cap with what is left of it.
 * Sandbox price: 3/1000 USD a square_hd image (3000 micro-units). Over the policy's velocity
 * limit (issue 27 item 3), the run says how long to wait and how to raise the limit, and does not
 * retry into it.
 */

let stack: RunningStack;
let work: string;

beforeAll(async () => {
  work = await makeTempDir('lexec-policy-run-');
  stack = await startRunningStack({
    edit: (profile) => {
      const policy = tableAt(profile, 'ledger.default_policy');
      policy.per_authorization_cap_units = '7000';
      policy.daily_cap_units = '9000';
      policy.approval_threshold_units = '7000';
    },
  });
}, 180_000);

afterAll(async () => {
  await stack.stop();
  await removeDir(work);
}, 120_000);

async function held(): Promise<string> {
  const run = await stack.lexec(['ledger', 'authorizations', 'list', '--json']);
  return run.stdout;
}

describe('lexec run refused by the spend policy', () => {
  it('above the per-authorization cap: names the cap and the largest --count within it; nothing is requested', async () => {
    const before = await held();
    const run = await stack.lexec(['run', 'three lighthouses', '--count', '3', '--out', work, '--json'], { cwd: work });
    const error = expectFailure(run, 1, 'ledger_policy_refused');
    expect(error.message).toBe("This run costs 0.009000 USD (3 x square_hd), more than the agent's per-authorization cap of 0.007000 USD; nothing was requested or spent.");
    expect(error.next_step).toContain('Run it with --count 2 or fewer (the most square_hd images within 0.007000 USD)');
    expect(error.next_step).not.toContain('rolling');
    expect(await held()).toBe(before);
  });

  it('beyond what is left of the daily cap: says how much is left and that the window frees it', async () => {
    expect((await stack.lexec(['run', 'two lighthouses', '--count', '2', '--out', work, '--json'], { cwd: work })).exitCode).toBe(0);
    const run = await stack.lexec(['run', 'two more lighthouses', '--count', '2', '--out', work, '--json'], { cwd: work });
    const error = expectFailure(run, 1, 'ledger_policy_refused');
    expect(error.message).toBe("This run costs 0.006000 USD (2 x square_hd), more than is left of the agent's daily cap in the rolling 24 hours (0.003000 USD left); nothing was requested or spent.");
    expect(error.next_step).toContain('Wait until earlier spend leaves the 24-hour window');
  });

  it('over the velocity limit: says how many seconds to wait, or how to raise the limit; nothing is requested, nothing retried', async () => {
    // The same caps, and at most one request an hour: counted from now on, refused ones too.
    const file = join(work, 'velocity.json');
    await writeFile(file, JSON.stringify({ per_authorization_cap_units: '7000', daily_cap_units: '9000', approval_threshold_units: '7000', units_scale: 6, currency: 'USD', max_requests_per_hour: 1 }));
    expect((await stack.lexec(['ledger', 'policy', 'set', '--agent-id', stack.agentId, '--file', file, '--json'])).exitCode).toBe(0);
    // The first request is refused by the per-authorization cap, and counts.
    expectFailure(await stack.lexec(['run', 'three lighthouses', '--count', '3', '--out', work, '--json'], { cwd: work }), 1, 'ledger_policy_refused');
    const before = await held();
    const run = await stack.lexec(['run', 'one lighthouse', '--out', work, '--json'], { cwd: work });
    const error = expectFailure(run, 1, 'velocity_exceeded');
    expect(error.message).toBe("The ledger refused the spend request: the profile's agent made more requests than its policy's velocity limit (max_requests_per_hour) allows; nothing was requested or spent.");
    const wait = /^Wait (\d+) s, then run the command again/.exec(error.next_step);
    expect(Number(wait?.[1])).toBeGreaterThan(3000);
    expect(Number(wait?.[1])).toBeLessThanOrEqual(3600);
    expect(error.next_step).toContain('lexec ledger policy set');
    expect(await held()).toBe(before);
    // Two runs, two requests counted: the refused one was not retried.
    const db = new Database(stack.paths.ledgerDatabase, { readonly: true });
    try {
      expect(db.prepare('SELECT velocity_refused FROM agent_requests ORDER BY requested_at').all()).toEqual([{ velocity_refused: 0 }, { velocity_refused: 1 }]);
    } finally {
      db.close();
    }
  });

  it('beyond a calendar budget: names the budget, what is left of it and when the next period begins; nothing is requested', async () => {
    // A month budget of one micro-unit: whatever this month holds already, a run cannot fit.
    const file = join(work, 'budget.json');
    await writeFile(file, JSON.stringify({ per_authorization_cap_units: '7000', daily_cap_units: '1000000', approval_threshold_units: '7000', units_scale: 6, currency: 'USD', month_budget_units: '1' }));
    expect((await stack.lexec(['ledger', 'policy', 'set', '--agent-id', stack.agentId, '--file', file, '--json'])).exitCode).toBe(0);
    const before = await held();
    const error = expectFailure(await stack.lexec(['run', 'one lighthouse', '--out', work, '--json'], { cwd: work }), 1, 'ledger_policy_refused');
    expect(error.message).toMatch(/^This run costs 0\.003000 USD \(1 x square_hd\), more than is left of the budget agent\.month this month \(0\.00000[01] USD left of 0\.000001 USD\); nothing was requested or spent\.$/);
    expect(error.next_step).toMatch(/wait for the next month \(from \d{4}-\d{2}-\d{2}T00:00:00\.000Z\)/);
    expect(error.next_step).toContain('lexec ledger policy show');
    expect(await held()).toBe(before);
  });
});
