import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { cleanRunFixture, none, withoutUnique, type Planted, type Run } from './invariant-fixture.js';

/*
 * The invariant checker's rules on the ledger's authorizations, money, every execution's end,
 * artifacts and amounts: each caught when it is broken in a copy of a real run's files
 * (invariant-fixture.ts). What reached the provider, and the checker itself: check-invariants.test.ts.
 */

const { clean, breached } = cleanRunFixture();
const first = () => clean.succeeded[0] ?? none;

describe('the ledger\'s authorizations', () => {
  it('settle_xor_release: a second release of one authorization; a release beside a settlement (its status then disagrees too)', async () => {
    expect(
      await breached(({ ledger }) => {
        withoutUnique(ledger, 'releases');
        ledger.prepare("INSERT INTO releases SELECT 'rel_planted', token_id, execution_id, reason, created_at FROM releases WHERE token_id = ?").run(clean.notTransmitted.token);
      }),
    ).toEqual({ rules: ['settle_xor_release'], messages: ['2 releases'] });
    expect(
      (
        await breached(({ ledger }) => {
          ledger.prepare("INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES ('rel_x', ?, ?, 'cancelled', 0)").run(first().token, first().execution);
        })
      ).rules,
    ).toEqual(['authorization_status_matches', 'settle_xor_release']);
  });

  it('authorization_status_matches: a settled authorization whose status says claimed', async () => {
    expect((await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET status = 'claimed' WHERE token_id = ?").run(first().token))).rules).toEqual([
      'authorization_status_matches',
    ]);
  });

  it('settled_units_match: what the caps count as spent differs from the settlement; a spent amount with no settlement', async () => {
    const report = await breached(({ ledger }) => {
      ledger.prepare('UPDATE authorizations SET settled_units = settled_units - 1 WHERE token_id = ?').run(first().token);
      ledger.prepare('UPDATE authorizations SET settled_units = 5 WHERE token_id = ?').run(clean.notTransmitted.token);
    });
    expect(report.rules).toEqual(['settled_units_match']);
    expect(report.messages[1]).toBe('counts 5 as spent, the settlement says none');
    expect(report.messages[0]).toMatch(/^counts \d+ as spent, the settlement says \d+$/);
  });

  it('kept_counts_match: a closed status, a settled total, a sink\'s deliveries or an ended state counted otherwise than its rows', async () => {
    const report = await breached(({ ledger, executor }) => {
      ledger.prepare("UPDATE authorization_counts SET count = count + 1 WHERE status = 'settled'").run();
      ledger.prepare('DELETE FROM settled_totals WHERE rowid = (SELECT MIN(rowid) FROM settled_totals)').run();
      ledger.prepare("INSERT INTO webhook_delivery_counts (sink_id, status, count) VALUES ('whk_planted', 'delivered', 3)").run();
      executor.prepare("INSERT INTO execution_counts (state, count) VALUES ('running', 1)").run();
    });
    expect(report.rules).toEqual(['kept_counts_match']);
    expect(report.messages).toEqual([
      expect.stringMatching(/^keeps \d+, the rows count \d+$/) as string,
      expect.stringMatching(/^keeps 0, the rows count \d+$/) as string,
      'keeps 3, the rows count 0',
      'keeps 1, the rows count 0',
    ]);
    // A settled authorization whose status a plant changes leaves its closed count by the trigger, as the ledger would.
    expect((await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET status = 'claimed' WHERE token_id = ?").run(first().token))).rules).toEqual([
      'authorization_status_matches',
    ]);
  });

  it('kept_counts_match: a sink\'s delivered count is its delivered rows plus those the retention removed (pruned), never less', async () => {
    const plant = (delivered: number, pruned: number) => ({ ledger }: Planted) => {
      ledger.prepare("INSERT INTO webhook_delivery_counts (sink_id, status, count) VALUES ('whk_planted', 'delivered', ?), ('whk_planted', 'pruned', ?)").run(delivered, pruned);
    };
    // Three delivered, all three rows since removed by the retention: as the ledger keeps it.
    expect((await breached(plant(3, 3))).rules).toEqual([]);
    const fewer = await breached(plant(3, 2));
    expect(fewer.rules).toEqual(['kept_counts_match']);
    expect(fewer.messages).toEqual(['keeps 3, the rows count 2']);
    const negative = await breached(plant(0, -1));
    expect(negative.messages).toEqual(['keeps -1: not a count of removed deliveries']);
  });

  it('closed_by_claiming_execution: an authorization claimed by another execution than the one that settled it and runs on it', async () => {
    const report = await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET execution_id = 'exe_other' WHERE token_id = ?").run(first().token));
    expect(report.rules).toEqual(['claim_has_execution', 'closed_by_claiming_execution']);
    expect(report.messages).toEqual([
      `closed by execution ${first().execution}, claimed by exe_other`,
      `claimed for exe_other, which the executor does not have`,
      `the ledger's claim of ${first().token} names exe_other`,
    ]);
  });

  it('claim_has_execution: a claim at the ledger for an execution the executor never recorded (a stuck hold)', async () => {
    const report = await breached(({ ledger }) => {
      ledger.exec(`CREATE TEMP TABLE ghost AS SELECT * FROM authorizations WHERE token_id = '${first().token}'`);
      ledger.exec("UPDATE ghost SET token_id = 'tok_ghost', execution_id = 'exe_ghost', status = 'claimed', settled_units = NULL");
      ledger.exec('INSERT INTO authorizations SELECT * FROM ghost');
    });
    expect(report.rules).toEqual(['claim_has_execution']);
    expect(report.messages).toEqual(['claimed for exe_ghost, which the executor does not have']);
  });

  /** A copy of the first authorization as another token, claimed for an execution the executor never had. */
  const ghost = (ledger: Database.Database, status: string) => {
    ledger.exec(`CREATE TEMP TABLE ghost AS SELECT * FROM authorizations WHERE token_id = '${first().token}'`);
    ledger.exec(`UPDATE ghost SET token_id = 'tok_ghost', execution_id = 'exe_ghost', status = '${status}', settled_units = NULL`);
    ledger.exec('INSERT INTO authorizations SELECT * FROM ghost');
  };

  it('claim_has_execution: a claim the executor never had, released as claim_without_execution, is right', async () => {
    const report = await breached(({ ledger }) => {
      ghost(ledger, 'released');
      ledger.exec("INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES ('rel_ghost', 'tok_ghost', 'exe_ghost', 'claim_without_execution', 0)");
    });
    expect(report.rules).toEqual([]);
  });

  it('claim_has_execution: released for another reason, or released as claim_without_execution although the executor has the execution', async () => {
    const otherReason = await breached(({ ledger }) => {
      ghost(ledger, 'released');
      ledger.exec("INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES ('rel_ghost', 'tok_ghost', 'exe_ghost', 'not_transmitted', 0)");
    });
    expect(otherReason.messages).toEqual(['claimed for exe_ghost, which the executor does not have']);
    const wrongful = await breached(({ ledger }) => void ledger.prepare("UPDATE releases SET reason = 'claim_without_execution' WHERE token_id = ?").run(clean.notTransmitted.token));
    expect(wrongful.rules).toEqual(['claim_has_execution']);
    expect(wrongful.messages).toEqual([`released as claim_without_execution, but the executor has execution ${clean.notTransmitted.execution}`]);
  });
});

describe('an operator\'s suspension of an agent', () => {
  it('cancelled_never_claimed: a cancelled authorization that names an execution (its claim then has none either); an execution running on a cancelled authorization', async () => {
    const claimed = await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET execution_id = 'exe_late' WHERE token_id = ?").run(clean.cancelled.token));
    expect(claimed.rules).toEqual(['cancelled_never_claimed', 'claim_has_execution']);
    expect(claimed.messages).toContain('cancelled, yet claimed for exe_late');
    const run = await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET status = 'cancelled', cancellation_reason = 'agent_suspended' WHERE token_id = ?").run(first().token));
    expect(run.rules).toContain('cancelled_never_claimed');
    expect(run.messages).toContain(`runs on cancelled authorization ${first().token}`);
  });

  it('suspension_is_whole: a suspended agent whose unclaimed authorization is still approved (half a suspension)', async () => {
    const half = await breached(({ ledger }) => void ledger.prepare("UPDATE authorizations SET status = 'approved', cancellation_reason = NULL WHERE token_id = ?").run(clean.cancelled.token));
    expect(half.rules).toEqual(['suspension_is_whole']);
    expect(half.messages[0]).toMatch(/^agent agt_[0-9a-f-]+ is suspended, yet this authorization is still approved$/);
  });
});

describe('the ledger\'s audit trail of operator actions', () => {
  /** Since when the ledger keeps its trail (found by the migration's name, as the checker does). */
  const since = (ledger: Database.Database) => ledger.prepare("SELECT applied_at FROM schema_migrations WHERE name = 'operator actions are audited'").pluck().get() as bigint;
  const suspendedAgent = (ledger: Database.Database) => ledger.prepare("SELECT agent_id FROM agents WHERE status = 'suspended'").pluck().get() as string;

  it('the clean run holds every operator action with its event: the admin credential, the agent, its credentials, the resolutions at the ledger, a webhook sink added and removed, the installation budget, the suspension', async () => {
    expect(await breached(() => undefined)).toEqual({ rules: [], messages: [] });
    const actions = await breached(({ ledger }) => {
      const rows = ledger.prepare('SELECT action, actor_kind FROM audit_events ORDER BY audit_id').all() as { action: string; actor_kind: string }[];
      expect(rows[0]).toEqual({ action: 'credential_registered', actor_kind: 'ledger' });
      expect(rows.map((row) => row.action)).toEqual(expect.arrayContaining(['agent_added', 'reconciliation_resolved', 'webhook_added', 'webhook_removed', 'budget_changed', 'agent_suspended']));
    });
    expect(actions.rules).toEqual([]);
  });

  it('operator_action_audited: a suspension whose event is gone, or was written apart from it (another time), or by the ledger for an operator\'s', async () => {
    const gone = await breached(({ ledger }) => void ledger.exec("DELETE FROM audit_events WHERE action = 'agent_suspended'"));
    expect(gone.rules).toEqual(['operator_action_audited']);
    expect(gone.messages[0]).toMatch(/^suspended by an operator at \d+: 0 audit events at that time \(0 of that action\)$/);
    const apart = await breached(({ ledger }) => void ledger.exec("UPDATE audit_events SET at = at + 1 WHERE action = 'agent_suspended'"));
    expect(apart.messages[0]).toMatch(/^suspended by an operator at \d+: 0 audit events at that time \(1 of that action\)$/);
    const byLedger = await breached(({ ledger }) => void ledger.exec("UPDATE audit_events SET actor_kind = 'ledger', actor_credential_id = NULL WHERE action = 'agent_suspended'"));
    expect(byLedger).toEqual({ rules: ['operator_action_audited'], messages: ['suspended by an operator: its audit event names ledger'] });
    // The breaker's suspension is the ledger's own act: an event naming a credential is wrong.
    const breaker = await breached(({ ledger }) => void ledger.prepare("UPDATE agents SET suspended_by = 'velocity_breaker' WHERE agent_id = ?").run(suspendedAgent(ledger)));
    expect(breaker).toEqual({ rules: ['operator_action_audited'], messages: ['suspended by the velocity breaker: its audit event names admin admin'] });
  });

  it("operator_action_audited: an agent added by the ledger is an enrolment's redemption only (the enrolment_redeemed event that follows names the agent)", async () => {
    const asLedger = "UPDATE audit_events SET actor_kind = 'ledger', actor_credential_id = NULL WHERE action = 'agent_added'";
    const byLedger = await breached(({ ledger }) => void ledger.exec(asLedger));
    expect(byLedger.rules).toEqual(['operator_action_audited']);
    expect(byLedger.messages).toEqual([expect.stringMatching(/^agent added: its audit event names ledger$/) as string]);
    const redeemed = await breached(({ ledger }) => {
      ledger.exec(asLedger);
      // The redemption's transaction: the agent's event, then (here with no registrations between) the redemption naming it.
      ledger.exec("UPDATE audit_events SET audit_id = (SELECT MAX(audit_id) + 1 FROM audit_events) WHERE action = 'agent_added'");
      ledger.exec(
        "INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason) SELECT at, NULL, 'ledger', 'enrolment_redeemed', agent_id, 'enr_test', '{\"status\":\"open\"}', '{\"status\":\"redeemed\"}', NULL FROM audit_events WHERE action = 'agent_added'",
      );
    });
    expect(redeemed).toEqual({ rules: [], messages: [] });
    // A redemption that names another agent does not make this agent the ledger's.
    const another = await breached(({ ledger }) => {
      ledger.exec(asLedger);
      ledger.exec("UPDATE audit_events SET audit_id = (SELECT MAX(audit_id) + 1 FROM audit_events) WHERE action = 'agent_added'");
      ledger.exec("INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason) SELECT at, NULL, 'ledger', 'enrolment_redeemed', NULL, 'enr_test', NULL, NULL, NULL FROM audit_events WHERE action = 'agent_added'");
    });
    expect(another.messages).toContain('agent added: its audit event names ledger');
  });

  it('operator_action_audited: a human decision, a policy change, an agent added or a credential registered without its event; a change recorded twice', async () => {
    const decided = await breached(({ ledger }) => {
      ledger.prepare("UPDATE authorizations SET decided_by = 'cred_human', decided_at = ? WHERE token_id = ?").run(since(ledger) + 1n, first().token);
    });
    expect(decided.rules).toEqual(['operator_action_audited']);
    expect(decided.messages).toEqual([expect.stringMatching(/^authorization_approved by cred_human at \d+: 0 audit events at that time \(0 of that action\)$/) as string]);
    const policy = await breached(({ ledger }) => void ledger.prepare('UPDATE policies SET version = version + 1, updated_at = ?').run(since(ledger) + 1n));
    expect(policy.rules).toEqual(['operator_action_audited']);
    expect(policy.messages[0]).toMatch(/^policy at version \d+: 0 audit events made it$/);
    const added = await breached(({ ledger }) => void ledger.exec("DELETE FROM audit_events WHERE action IN ('agent_added', 'credential_registered')"));
    expect(added.rules).toEqual(['operator_action_audited']);
    expect(added.messages).toEqual(expect.arrayContaining([expect.stringMatching(/^agent added at \d+: 0 audit events/), expect.stringMatching(/^credential registered at \d+: 0 audit events/)]));
    const twice = await breached(({ ledger }) => {
      ledger.exec("INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason) SELECT at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason FROM audit_events WHERE action = 'reconciliation_resolved' LIMIT 1");
    });
    expect(twice.rules).toEqual(['operator_action_audited']);
    expect(twice.messages[0]).toMatch(/^resolved by cred_[0-9a-f-]+ at \d+: 2 audit events at that time/);
  });

  it('audit_event_has_change: an approval the ledger never made; a resolution by another credential than the one the record names', async () => {
    const invented = await breached(({ ledger }) => {
      ledger
        .prepare("INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id) SELECT ?, 'cred_ghost', 'approver', 'authorization_approved', agent_id, token_id FROM authorizations WHERE token_id = ?")
        .run(since(ledger) + 1n, first().token);
    });
    expect(invented).toEqual({ rules: ['audit_event_has_change'], messages: [expect.stringMatching(/^audit event \d+ \(authorization_approved by cred_ghost\): the ledger holds no such decision$/) as string] });
    const other = await breached(({ ledger }) => void ledger.exec("UPDATE audit_events SET actor_credential_id = 'cred_other' WHERE action = 'reconciliation_resolved'"));
    expect(other.rules).toEqual(['audit_event_has_change', 'operator_action_audited']);
    expect(other.messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^resolved by cred_\S+: its audit event names reconciliation cred_other$/) as string,
        expect.stringMatching(/^audit event \d+ \(reconciliation_resolved by cred_other\): the ledger holds no such resolution$/) as string,
      ]),
    );
  });

  it('operator_action_audited: a webhook sink added or removed, or the installation budget changed, without its event; the budget change recorded as policy_changed since it has its own action', async () => {
    const gone = await breached(({ ledger }) => void ledger.exec("DELETE FROM audit_events WHERE action IN ('webhook_added', 'webhook_removed', 'budget_changed')"));
    expect(gone.rules).toEqual(['operator_action_audited']);
    expect(gone.messages).toEqual([
      expect.stringMatching(/^webhook sink added at \d+: 0 audit events at that time \(0 of that action\)$/) as string,
      expect.stringMatching(/^webhook sink removed at \d+: 0 audit events at that time \(0 of that action\)$/) as string,
      'installation budget at version 2: 0 budget_changed events made it',
    ]);
    const asPolicy = await breached(({ ledger }) => void ledger.exec("UPDATE audit_events SET action = 'policy_changed' WHERE action = 'budget_changed'"));
    expect(asPolicy).toEqual({ rules: ['operator_action_audited'], messages: ['installation budget at version 2: 0 budget_changed events made it'] });
    const byLedger = await breached(({ ledger }) => void ledger.exec("UPDATE audit_events SET actor_kind = 'ledger', actor_credential_id = NULL WHERE action = 'webhook_removed'"));
    expect(byLedger).toEqual({ rules: ['operator_action_audited'], messages: ['webhook sink removed: its audit event names ledger'] });
  });

  it('before the migration that gave them their own actions: sinks are not judged, and a budget change is one policy_changed of the installation budget (history kept)', async () => {
    const later = "UPDATE schema_migrations SET applied_at = 8000000000000 WHERE name = 'webhook sinks and the installation budget are audited'";
    const kept = await breached(({ ledger }) => {
      ledger.exec(later);
      ledger.exec("UPDATE audit_events SET action = 'policy_changed' WHERE action = 'budget_changed'");
      ledger.exec("DELETE FROM audit_events WHERE action IN ('webhook_added', 'webhook_removed')");
    });
    expect(kept).toEqual({ rules: [], messages: [] });
    const unrecorded = await breached(({ ledger }) => void ledger.exec(later));
    expect(unrecorded).toEqual({ rules: ['operator_action_audited'], messages: ['installation budget at version 2: 0 policy_changed events made it'] });
  });

  it('audit_event_has_change: a webhook sink removed at another time than the ledger removed it', async () => {
    const twice = await breached(({ ledger }) => {
      ledger.exec(
        "INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after) SELECT at + 1, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after FROM audit_events WHERE action = 'webhook_removed'",
      );
    });
    expect(twice.rules).toEqual(['audit_event_has_change']);
    expect(twice.messages).toEqual([expect.stringMatching(/^audit event \d+ \(webhook_removed by admin\): the ledger removed no such sink then$/) as string]);
  });

  it('a ledger from before the trail (no audit migration) is not judged by it', async () => {
    const old = await breached(({ ledger }) => {
      ledger.exec("DELETE FROM audit_events; DELETE FROM schema_migrations WHERE name = 'operator actions are audited'");
    });
    expect(old).toEqual({ rules: [], messages: [] });
  });
});

describe('money', () => {
  it('hold_matches_ledger: the executor records another hold than the ledger; a settlement in another currency', async () => {
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE executions SET authorization_held_units = authorization_held_units + 1 WHERE execution_id = ?').run(first().execution))).rules,
    ).toEqual(['hold_matches_ledger']);
    expect((await breached(({ ledger }) => void ledger.prepare("UPDATE settlements SET currency = 'EUR' WHERE token_id = ?").run(first().token))).rules).toEqual(['hold_matches_ledger']);
  });

  it('settled_within_hold: a settlement over the hold', async () => {
    expect(
      (
        await breached(({ ledger, executor }) => {
          ledger.prepare('UPDATE authorizations SET amount_units = 1 WHERE token_id = ?').run(first().token);
          executor.prepare('UPDATE executions SET authorization_held_units = 1, quoted_units = NULL WHERE execution_id = ?').run(first().execution);
        })
      ).rules,
    ).toEqual(['settled_within_hold']);
  });

  it('settled_equals_price_times_delivered: a settlement of a unit more (then not its receipt either); a human billing count the settlement is not priced by (nor its receipt)', async () => {
    // The ledger's copy of the amount too (ledger migration 17), as a ledger that settled it so would have it.
    const more = (ledger: Database.Database) => {
      ledger.prepare('UPDATE settlements SET amount_units = amount_units + 1 WHERE token_id = ?').run(first().token);
      ledger.prepare('UPDATE authorizations SET settled_units = settled_units + 1 WHERE token_id = ?').run(first().token);
    };
    expect((await breached(({ ledger }) => {
      more(ledger);
    })).rules).toEqual(['settled_equals_price_times_delivered', 'settlement_matches_receipt']);
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE reconciliation_resolutions SET images_billed = 2 WHERE execution_id = ?').run(clean.settledByHuman.execution))).rules,
    ).toEqual(['receipt_equals_price_times_billed', 'settled_equals_price_times_delivered']);
  });

  it('settlement_matches_receipt: a receipt that does not record its settlement; a settlement of another receipt', async () => {
    expect((await breached(({ executor }) => void executor.prepare('UPDATE receipts SET ledger_settlement_id = NULL WHERE execution_id = ?').run(first().execution))).rules).toEqual([
      'settlement_matches_receipt',
    ]);
    expect((await breached(({ ledger }) => void ledger.prepare("UPDATE settlements SET receipt_id = 'rcpt_other' WHERE token_id = ?").run(first().token))).rules).toEqual([
      'settlement_matches_receipt',
    ]);
  });

  it('receipt_equals_price_times_billed: a receipt whose exact amount is not its micro-units', async () => {
    expect((await breached(({ executor }) => void executor.prepare('UPDATE receipts SET exact_amount = exact_amount + 1 WHERE execution_id = ?').run(first().execution))).rules).toEqual([
      'receipt_equals_price_times_billed',
    ]);
  });

  it('attempt_amount_matches_receipt: the attempt records another amount than the receipt it bills', async () => {
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE provider_attempts SET exact_amount = exact_amount + 1 WHERE execution_id = ?').run(clean.fewer.execution))).rules,
    ).toEqual(['attempt_amount_matches_receipt']);
  });

  it('resolution_matches_ledger: a human resolution recording another amount than was settled, or closed otherwise at the ledger', async () => {
    expect(
      (await breached(({ executor }) => void executor.prepare('UPDATE reconciliation_resolutions SET amount_units = amount_units + 1 WHERE execution_id = ?').run(clean.settledByHuman.execution)))
        .rules,
    ).toEqual(['resolution_matches_ledger']);
    expect(
      (await breached(({ ledger }) => void ledger.prepare("UPDATE reconciliation_records SET resolution = 'settled' WHERE token_id = ?").run(clean.releasedByHuman.token))).rules,
    ).toEqual(['resolution_matches_ledger']);
    // A human naming 1 image for a kept receipt of the 2 delivered (the executor's route accepts that today).
    const report = await breached(({ ledger, executor }) => {
      const settled = ledger.prepare('SELECT amount_units FROM settlements WHERE token_id = ?').pluck().get(clean.fewer.token) as bigint;
      executor.prepare("UPDATE executions SET state_reason = 'reconciled_settled' WHERE execution_id = ?").run(clean.fewer.execution);
      executor
        .prepare("INSERT INTO reconciliation_resolutions (execution_id, resolution, images_billed, amount_units, note, resolved_at) VALUES (?, 'settled', 1, ?, 'one image', 0)")
        .run(clean.fewer.execution, settled);
    });
    expect(report).toEqual({ rules: ['resolution_matches_ledger'], messages: ['the human billed 1 images, the receipt bills 2'] });
  });
});

describe('every execution\'s end', () => {
  it('terminal_or_reconciliation: an execution left running', async () => {
    expect((await breached(({ executor }) => void executor.prepare("UPDATE executions SET state = 'running' WHERE execution_id = ?").run(clean.notTransmitted.execution))).rules).toEqual([
      'terminal_or_reconciliation',
    ]);
  });

  it('reconciliation_has_ledger_record: a parked execution without its record (then, having reached the provider, no money record either)', async () => {
    const remove = (run: Run) => ({ ledger }: Planted) => void ledger.prepare('DELETE FROM reconciliation_records WHERE token_id = ?').run(run.token);
    expect((await breached(remove(clean.killedWhileSubmitting))).rules).toEqual(['reconciliation_has_ledger_record', 'submitted_has_money_record']);
    // Settled at the ledger by a human: the settlement is its money record (the human's audited resolution now names a record the ledger lacks).
    expect((await breached(remove(clean.settledAtLedger))).rules).toEqual(['audit_event_has_change', 'reconciliation_has_ledger_record']);
  });

  it('succeeded_has_one_settlement: a succeeded execution the ledger never settled (its submission reached the provider)', async () => {
    expect(
      (
        await breached(({ ledger, executor }) => {
          ledger.prepare('DELETE FROM settlements WHERE token_id = ?').run(first().token);
          ledger.prepare("UPDATE authorizations SET status = 'claimed', closed_at = NULL, settled_units = NULL WHERE token_id = ?").run(first().token);
          executor.prepare('UPDATE receipts SET ledger_settlement_id = NULL WHERE execution_id = ?').run(first().execution);
        })
      ).rules,
    ).toEqual(['submitted_has_money_record', 'succeeded_has_one_settlement']);
  });

  it('submitted_has_money_record: an execution whose submission reached the provider, released as not transmitted', async () => {
    const run = clean.killedWhileSubmitting;
    const report = await breached(({ ledger, executor }) => {
      ledger.prepare('DELETE FROM reconciliation_records WHERE token_id = ?').run(run.token);
      ledger.prepare("INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES ('rel_planted', ?, ?, 'not_transmitted', 0)").run(run.token, run.execution);
      ledger.prepare("UPDATE authorizations SET status = 'released', closed_at = 0 WHERE token_id = ?").run(run.token);
      executor.prepare("UPDATE executions SET state = 'failed', state_reason = 'not_transmitted' WHERE execution_id = ?").run(run.execution);
    });
    expect(report).toEqual({ rules: ['submitted_has_money_record'], messages: ['released as not_transmitted without reconciliation although its submission reached the provider'] });
  });

  it('failed_has_release: a failed execution whose hold was never released', async () => {
    const run = clean.notTransmitted;
    expect(
      (
        await breached(({ ledger }) => {
          ledger.prepare('DELETE FROM releases WHERE token_id = ?').run(run.token);
          ledger.prepare("UPDATE authorizations SET status = 'claimed', closed_at = NULL WHERE token_id = ?").run(run.token);
        })
      ).rules,
    ).toEqual(['failed_has_release']);
  });
});

describe('artifacts', () => {
  const keyOf = (executor: Database.Database, run: Run, ordinal = 0) =>
    executor.prepare('SELECT storage_key FROM artifacts WHERE execution_id = ? AND ordinal = ?').pluck().get(run.execution, ordinal) as string;

  it('artifacts_intact: a missing file, an altered one of the same size, a size or a storage key outside the root not as recorded', async () => {
    const cases: ((planted: Planted) => Promise<void> | void)[] = [
      ({ dir, executor }) => rm(join(dir, 'artifacts', keyOf(executor, clean.succeeded[1] ?? none))),
      async ({ dir, executor }) => {
        const path = join(dir, 'artifacts', keyOf(executor, clean.fewer));
        const bytes = await readFile(path);
        await writeFile(path, Buffer.concat([bytes.subarray(0, -1), Buffer.from([(bytes.at(-1) ?? 0) ^ 0x01])]));
      },
      ({ executor }) => void executor.prepare('UPDATE artifacts SET size_bytes = size_bytes + 1 WHERE execution_id = ?').run(first().execution),
      ({ executor }) => void executor.prepare("UPDATE artifacts SET storage_key = '../executor.db' WHERE execution_id = ?").run(first().execution),
    ];
    const messages: string[] = [];
    for (const plant of cases) {
      const report = await breached(plant);
      expect(report.rules).toEqual(['artifacts_intact']);
      messages.push(...report.messages);
    }
    expect(messages.map((message) => message.replace(/^[^:]*: /, ''))).toEqual([
      'missing',
      expect.stringMatching(/does not match its sha256$/),
      expect.stringMatching(/^\d+ bytes on disk, \d+ recorded$/),
      'outside the artifact root',
    ]);
  });

  it('artifacts_intact: a succeeded execution missing an artifact record, or with a gap in its ordinals', async () => {
    const run = clean.succeeded[2] ?? none;
    expect(await breached(({ executor }) => void executor.prepare('DELETE FROM artifacts WHERE execution_id = ? AND ordinal = 2').run(run.execution))).toEqual({
      rules: ['artifacts_intact'],
      messages: ['2 artifacts recorded, 3 images delivered'],
    });
    expect(await breached(({ executor }) => void executor.prepare('UPDATE artifacts SET ordinal = 5 WHERE execution_id = ? AND ordinal = 1').run(run.execution))).toEqual({
      rules: ['artifacts_intact'],
      messages: ['artifact ordinals 0,2,5 are not 0…2'],
    });
  });
});

describe('amounts', () => {
  it('amounts_are_integers: an amount stored as REAL or as TEXT, a REAL in any other column, an amount column gone from the schema', async () => {
    const cases: [string, (planted: Planted) => void][] = [
      ['stored as real', ({ ledger }) => void ledger.prepare('UPDATE settlements SET amount_cents = 12.5 WHERE token_id = ?').run(first().token)],
      ['stored as text', ({ ledger }) => void ledger.prepare("UPDATE authorizations SET amount_cents = '0.90 USD' WHERE token_id = ?").run(clean.notTransmitted.token)],
      ['stored as real', ({ executor }) => void executor.prepare('UPDATE executions SET created_at = created_at + 0.5 WHERE execution_id = ?').run(first().execution)],
      ["not in the schema: the checker's knowledge of it is stale", ({ ledger }) => void ledger.exec('ALTER TABLE policies RENAME COLUMN daily_cap_units TO daily_limit')],
    ];
    for (const [message, plant] of cases) expect(await breached(plant)).toEqual({ rules: ['amounts_are_integers'], messages: [message] });
  });
});

describe("the ledger's events outbox", () => {
  const outbox = { outbox: true } as const;
  const typesOf = (ledger: Database.Database, token: string) => ledger.prepare('SELECT type FROM events WHERE token_id = ? ORDER BY event_id').pluck().all(token) as string[];

  it('the clean run has exactly one event for each of its changes: requests, settlements, releases, records opened and resolved, the suspension and its cancellation', async () => {
    const report = await breached(({ ledger }) => {
      expect(typesOf(ledger, first().token)).toEqual(['authorization.requested', 'authorization.settled']);
      expect(typesOf(ledger, clean.settledAtLedger.token)).toEqual(['authorization.requested', 'reconciliation.opened', 'authorization.settled', 'reconciliation.resolved']);
      expect(typesOf(ledger, clean.releasedByHuman.token)).toEqual(['authorization.requested', 'reconciliation.opened', 'authorization.released', 'reconciliation.resolved']);
      expect(typesOf(ledger, clean.cancelled.token)).toEqual(['authorization.requested', 'authorization.cancelled']);
      expect(ledger.prepare("SELECT COUNT(*) FROM events WHERE type = 'agent.suspended'").pluck().get()).toBe(1n);
    }, undefined, outbox);
    expect(report).toEqual({ rules: [], messages: [] });
  });

  it('change_has_one_event: a settlement, a release, a cancellation or a record resolved whose event is gone; a settlement recorded twice', async () => {
    for (const [type, token] of [
      ['authorization.settled', first().token],
      ['authorization.released', clean.notTransmitted.token],
      ['authorization.cancelled', clean.cancelled.token],
      ['reconciliation.resolved', clean.releasedAtLedger.token],
    ] as const) {
      const gone = await breached(({ ledger }) => void ledger.prepare('DELETE FROM events WHERE type = ? AND token_id = ?').run(type, token), undefined, outbox);
      expect(gone.rules).toEqual(['change_has_one_event']);
      expect(gone.messages[0]).toMatch(new RegExp(`: 0 ${type.replace('.', '\\.')} events$`));
    }
    const twice = await breached(({ ledger }) => {
      ledger.prepare("INSERT INTO events (at, type, agent_id, target_id, token_id, amount_units, details) SELECT at, type, agent_id, target_id, token_id, amount_units, details FROM events WHERE type = 'authorization.settled' AND token_id = ?").run(first().token);
    }, undefined, outbox);
    expect(twice.messages).toEqual(['settled: 2 authorization.settled events']);
  });

  it('change_has_one_event: an event of another time (another transaction) or another amount than its change', async () => {
    const later = await breached(({ ledger }) => void ledger.prepare("UPDATE events SET at = at + 1 WHERE type = 'authorization.settled' AND token_id = ?").run(first().token), undefined, outbox);
    expect(later.rules).toEqual(['change_has_one_event']);
    expect(later.messages[0]).toMatch(/^settled: its authorization\.settled event is at \d+, the change at \d+$/);
    const more = await breached(({ ledger }) => void ledger.prepare("UPDATE events SET amount_units = amount_units + 1 WHERE type = 'authorization.settled' AND token_id = ?").run(first().token), undefined, outbox);
    expect(more.rules).toEqual(['change_has_one_event']);
  });

  it('event_has_change: a settlement event for an authorization the ledger never settled; a release gone with its event left', async () => {
    const invented = await breached(({ ledger }) => {
      ledger.prepare("INSERT INTO events (at, type, agent_id, token_id, amount_units, details) SELECT created_at, 'authorization.settled', agent_id, token_id, amount_units, '{}' FROM authorizations WHERE token_id = ?").run(clean.cancelled.token);
    }, undefined, outbox);
    expect(invented.rules).toEqual(['event_has_change']);
    expect(invented.messages[0]).toMatch(/\(authorization\.settled\): the ledger holds no such change$/);
  });

  it('change_has_one_event: a suspended agent whose suspension event is gone', async () => {
    const gone = await breached(({ ledger }) => void ledger.exec("DELETE FROM events WHERE type = 'agent.suspended'"), undefined, outbox);
    expect(gone.rules).toEqual(['change_has_one_event']);
    expect(gone.messages[0]).toMatch(/^suspended at \d+: the latest suspension event is none$/);
  });
});
