import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SpendPolicy } from '../../src/ledger/authorization-rules.js';
import { createLedgerAdmin } from '../../src/ledger/ledger-admin.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { TEST_ADMIN } from '../support/ledger.js';

/*
 * [ledger.default_policy] is not a template copied once: an agent that was never given its own
 * policy (`ledger policy set`) follows the configured default, applied at every ledger start —
 * so a lowered cap or threshold really is lowered. An agent with its own policy keeps it.
 * Real SQLite files; each "start" opens the database again with another default.
 */

const policy = (cap: bigint, daily: bigint, threshold: bigint): SpendPolicy => ({ per_authorization_cap_units: cap, daily_cap_units: daily, approval_threshold_units: threshold });
const FIRST = policy(5_000_000n, 20_000_000n, 1_000_000n);
const LOWER = policy(2_000_000n, 8_000_000n, 5_000n);

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-default-policy-');
});
afterEach(async () => {
  await removeDir(dir);
});

/** One ledger start: open (and migrate) the database, apply the default, hand out the admin. */
function start(defaultPolicy: SpendPolicy) {
  const db = openDatabase(join(dir, 'ledger.db'), LEDGER_MIGRATIONS);
  const admin = createLedgerAdmin({ db, now: () => Date.now(), defaultPolicy });
  const applied = admin.applyDefaultPolicy();
  return { db, admin, applied };
}

describe('the default spend policy', () => {
  it('applies at the next start to every agent that follows it; an agent with its own policy keeps it', () => {
    const first = start(FIRST);
    const follower = first.admin.addAgent('follower', TEST_ADMIN).agent_id;
    const own = first.admin.addAgent('own', TEST_ADMIN).agent_id;
    first.admin.setPolicy(own, policy(3_000_000n, 9_000_000n, 500_000n), TEST_ADMIN);
    expect(first.admin.policy(follower)).toMatchObject({ source: 'default', version: 1n, approval_threshold_units: 1_000_000n });
    expect(first.admin.policy(own)).toMatchObject({ source: 'operator', version: 2n });
    first.db.close();

    const second = start(LOWER);
    expect(second.applied).toEqual([follower]);
    expect(second.admin.policy(follower)).toMatchObject({ source: 'default', version: 2n, per_authorization_cap_units: 2_000_000n, daily_cap_units: 8_000_000n, approval_threshold_units: 5_000n });
    expect(second.admin.policy(own)).toMatchObject({ source: 'operator', version: 2n, per_authorization_cap_units: 3_000_000n, approval_threshold_units: 500_000n });
    second.db.close();

    // The same default again changes nothing (no new version).
    const third = start(LOWER);
    expect(third.applied).toEqual([]);
    expect(third.admin.policy(follower).version).toBe(2n);
    third.db.close();
  });

  it('an agent stops following the default once the operator sets its policy', () => {
    const first = start(FIRST);
    const agent = first.admin.addAgent('bot', TEST_ADMIN).agent_id;
    first.admin.setPolicy(agent, FIRST, TEST_ADMIN);
    first.db.close();
    const second = start(LOWER);
    expect(second.applied).toEqual([]);
    expect(second.admin.policy(agent)).toMatchObject({ source: 'operator', approval_threshold_units: 1_000_000n });
    second.db.close();
  });

  it('migration: a policy never set (version 1) follows the default from then on; one set (version > 1) stays the operator\'s', () => {
    const old = openDatabase(join(dir, 'ledger.db'), LEDGER_MIGRATIONS.slice(0, 1));
    const insert = (id: string, version: number) => {
      old.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES (?, ?, 'active', 0)").run(id, id);
      old.prepare("INSERT INTO policies VALUES (?, 5000000, 20000000, 1000000, 6, 'USD', ?, 0)").run(id, version);
    };
    insert('agt_never_set', 1);
    insert('agt_set', 3);
    old.close();
    const upgraded = start(LOWER);
    expect(upgraded.applied).toEqual(['agt_never_set']);
    expect(upgraded.admin.policy('agt_never_set')).toMatchObject({ source: 'default', approval_threshold_units: 5_000n, version: 2n });
    expect(upgraded.admin.policy('agt_set')).toMatchObject({ source: 'operator', approval_threshold_units: 1_000_000n, version: 3n });
    upgraded.db.close();
  });
});
