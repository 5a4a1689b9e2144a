import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../support/cli.js';
import { durableHarness, setFaults, until } from '../support/durable-stack.js';
import { checkInvariants, type InvariantInputs, type Rule } from './check-invariants.js';

/*
 * The independent invariant checker (issue 14 item 1): zero violations on a real run that mixes
 * successes, a billing-ambiguous job, a kill during submission and a failure before transmission;
 * and each rule caught when exactly that rule is broken in a copy of the run's files.
 */

const harness = durableHarness('lexec-proof-');
let fixture = '';

afterAll(async () => {
  if (fixture !== '') await removeDir(fixture);
});

/** The run's files, copied to `to` (databases with their WAL, the log, the artifacts). */
async function copyRun(from: string, to: string): Promise<InvariantInputs> {
  await mkdir(join(to, 'artifacts'), { recursive: true });
  for (const [dir, base] of [[join(from, 'ledger', 'state'), 'ledger.db'], [join(from, 'executor'), 'executor.db']] as const) {
    for (const suffix of ['', '-wal', '-shm']) await copyFile(join(dir, `${base}${suffix}`), join(to, `${base}${suffix}`)).catch(() => undefined);
  }
  await copyFile(join(from, 'submissions.jsonl'), join(to, 'submissions.jsonl'));
  for (const execution of await readdir(join(from, 'executor', 'artifacts'))) {
    await mkdir(join(to, 'artifacts', execution), { recursive: true });
    for (const file of await readdir(join(from, 'executor', 'artifacts', execution))) await copyFile(join(from, 'executor', 'artifacts', execution, file), join(to, 'artifacts', execution, file));
  }
  return inputsIn(to);
}

function inputsIn(dir: string): InvariantInputs {
  return { ledgerDatabase: join(dir, 'ledger.db'), executorDatabase: join(dir, 'executor.db'), submissionsLog: join(dir, 'submissions.jsonl'), artifactRoot: join(dir, 'artifacts') };
}

describe('the invariant checker', () => {
  it('shares no code with the system under test: it imports only Node.js built-ins and better-sqlite3', async () => {
    const source = await readFile(new URL('./check-invariants.ts', import.meta.url), 'utf8');
    const imported = [...source.matchAll(/^import [^;]*? from '([^']+)';$/gm)].map((match) => match[1]);
    expect(imported.length).toBeGreaterThan(0);
    for (const specifier of imported) expect(specifier === 'better-sqlite3' || specifier?.startsWith('node:'), specifier).toBe(true);
  });

  it('finds no violation in a real run of successes, a billing-ambiguous job, a kill during submission and a failure before transmission', async () => {
    const dir = harness.dir();
    const s = await harness.stack({ sandboxArgs: ['--complete-after-ms', '200', '--submissions-log', join(dir, 'submissions.jsonl')] });
    const finished = (id: string) => s.waitFor(id, 'terminal', (e) => ['succeeded', 'failed', 'reconciliation'].includes(e.state));
    for (const images of [1, 2, 3]) await finished(await s.submit(await s.approvedToken(), images));
    await setFaults(s, [{ kind: 'complete_with_error', times: 1 }]);
    expect((await finished(await s.submit(await s.approvedToken(), 1))).state).toBe('reconciliation');
    await setFaults(s, [{ kind: 'hang_submit', times: 1 }]);
    const hung = await s.submit(await s.approvedToken(), 1);
    await until('the hung submission received', async () => ((await s.sandbox.submissions()).length === 5 ? true : undefined));
    await s.executor.kill('SIGKILL');
    await s.sandbox.clearFaults();
    await s.restart();
    expect((await finished(hung)).state_reason).toBe('submission_unconfirmed');
    await s.sandbox.stop('SIGKILL');
    expect((await finished(await s.submit(await s.approvedToken(), 1))).state).toBe('failed');
    await s.executor.kill('SIGTERM');
    await s.ledger.stop('SIGTERM');

    fixture = await makeTempDir('lexec-proof-fixture-');
    const report = checkInvariants(await copyRun(dir, fixture));
    expect(report.violations).toEqual([]);
    expect(report.counts).toEqual({ executions: 6, attempts: 6, submissions: 5, settlements: 3, releases: 1, reconciliations: 2, artifacts: 6 });
  }, 120_000);

  /** A copy of the clean run with one breach planted by `plant`, checked. */
  async function breached(plant: (files: { ledger: Database.Database; executor: Database.Database; dir: string }) => Promise<void> | void): Promise<Rule[]> {
    expect(fixture).not.toBe('');
    const dir = await makeTempDir('lexec-proof-breach-');
    try {
      // The fixture is the run's files, flat: copy it as it is.
      for (const name of await readdir(fixture)) {
        if (name === 'artifacts') continue;
        await copyFile(join(fixture, name), join(dir, name));
      }
      await mkdir(join(dir, 'artifacts'), { recursive: true });
      for (const execution of await readdir(join(fixture, 'artifacts'))) {
        await mkdir(join(dir, 'artifacts', execution), { recursive: true });
        for (const file of await readdir(join(fixture, 'artifacts', execution))) await copyFile(join(fixture, 'artifacts', execution, file), join(dir, 'artifacts', execution, file));
      }
      const ledger = new Database(join(dir, 'ledger.db'));
      const executor = new Database(join(dir, 'executor.db'));
      ledger.defaultSafeIntegers(true);
      executor.defaultSafeIntegers(true);
      // The breaches are ones the schemas and their triggers forbid; the copy plants them anyway.
      for (const db of [ledger, executor]) {
        for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as { name: string }[]) db.exec(`DROP TRIGGER "${name}"`);
      }
      ledger.pragma('ignore_check_constraints = ON');
      executor.pragma('ignore_check_constraints = ON');
      ledger.pragma('foreign_keys = OFF');
      executor.pragma('foreign_keys = OFF');
      try {
        await plant({ ledger, executor, dir });
      } finally {
        ledger.close();
        executor.close();
      }
      return [...new Set(checkInvariants(inputsIn(dir)).violations.map((violation) => violation.rule))];
    } finally {
      await removeDir(dir);
    }
  }

  const succeededOne = (executor: Database.Database) =>
    executor.prepare("SELECT execution_id, spend_auth_token_id AS token_id FROM executions WHERE state = 'succeeded' LIMIT 1").get() as { execution_id: string; token_id: string };

  it('catches a second submission for one request, and a submission no attempt accounts for', async () => {
    expect(
      await breached(async ({ dir }) => {
        const lines = (await readFile(join(dir, 'submissions.jsonl'), 'utf8')).trimEnd().split('\n');
        const accepted = lines.find((line) => (JSON.parse(line) as { request_id: string | null }).request_id !== null);
        await writeFile(join(dir, 'submissions.jsonl'), `${[...lines, accepted].join('\n')}\n`);
      }),
    ).toEqual(['one_submission_per_attempt']);
    expect(
      await breached(async ({ dir }) => {
        const line = JSON.stringify({ sequence: 99, received_at: new Date().toISOString(), request_id: '11111111-1111-4111-8111-111111111111', outcome: 'accepted' });
        await writeFile(join(dir, 'submissions.jsonl'), `${await readFile(join(dir, 'submissions.jsonl'), 'utf8')}${line}\n`);
      }),
    ).toEqual(['one_submission_per_attempt']);
  });

  it('catches a second attempt for one execution', async () => {
    expect(
      await breached(({ executor }) => {
        const { execution_id: id } = succeededOne(executor);
        executor.prepare("INSERT INTO provider_attempts (attempt_id, execution_id, attempt_number, state, created_at, updated_at) VALUES ('att_x', ?, 2, 'ambiguous', 0, 0)").run(id);
      }),
    ).toEqual(['one_attempt_per_execution']);
  });

  it('catches a release beside a settlement', async () => {
    expect(
      await breached(({ ledger, executor }) => {
        const { execution_id: id, token_id: token } = succeededOne(executor);
        ledger.prepare("INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES ('rel_x', ?, ?, 'cancelled', 0)").run(token, id);
      }),
    ).toEqual(['settle_xor_release']);
  });

  it('catches a settlement over the hold, and one that is not the price times the images delivered', async () => {
    expect(
      await breached(({ ledger, executor }) => {
        const { token_id: token } = succeededOne(executor);
        ledger.prepare('UPDATE authorizations SET amount_units = 1 WHERE token_id = ?').run(token);
      }),
    ).toEqual(['settled_within_hold']);
    expect(
      await breached(({ ledger, executor }) => {
        const { token_id: token } = succeededOne(executor);
        ledger.prepare('UPDATE settlements SET amount_units = amount_units + 1 WHERE token_id = ?').run(token);
      }),
    ).toEqual(['settled_equals_price_times_delivered']);
  });

  it('catches a succeeded execution without its settlement, a parked one without its ledger record, a failed one not released, and one left running', async () => {
    expect(
      await breached(({ ledger, executor }) => {
        ledger.prepare('DELETE FROM settlements WHERE token_id = ?').run(succeededOne(executor).token_id);
      }),
    ).toEqual(['succeeded_has_one_settlement', 'submitted_has_money_record']);
    expect(await breached(({ ledger }) => void ledger.prepare("DELETE FROM reconciliation_records WHERE reason = 'billing_ambiguous'").run())).toEqual([
      'reconciliation_has_ledger_record',
      'submitted_has_money_record',
    ]);
    expect(await breached(({ ledger }) => void ledger.prepare('DELETE FROM releases').run())).toEqual(['submitted_has_money_record', 'failed_has_release']);
    expect(await breached(({ executor }) => void executor.prepare("UPDATE executions SET state = 'running' WHERE state = 'failed'").run())).toEqual(['terminal_or_reconciliation']);
  });

  it('catches a missing or altered artifact file', async () => {
    expect(
      await breached(async ({ dir, executor }) => {
        const key = (executor.prepare('SELECT storage_key FROM artifacts LIMIT 1').get() as { storage_key: string }).storage_key;
        await rm(join(dir, 'artifacts', key));
      }),
    ).toEqual(['artifacts_intact']);
    expect(
      await breached(async ({ dir, executor }) => {
        const key = (executor.prepare('SELECT storage_key FROM artifacts LIMIT 1').get() as { storage_key: string }).storage_key;
        await writeFile(join(dir, 'artifacts', key), 'not the image');
      }),
    ).toEqual(['artifacts_intact']);
  });

  it('catches an amount stored as REAL', async () => {
    expect(
      await breached(({ ledger, executor }) => {
        ledger.prepare('UPDATE settlements SET amount_cents = 12.5 WHERE token_id = ?').run(succeededOne(executor).token_id);
      }),
    ).toEqual(['amounts_are_integers']);
  });
});
