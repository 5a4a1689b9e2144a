import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, expectResult, runLexec, type CliRun } from '../support/cli.js';
import { call, claimBody, preciseReceipt, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * `lexec ledger spend` end to end: the built binary in child processes against a real ledger on a
 * loopback port with its own SQLite file, after two settlements and one open hold. The table,
 * the `--json` result and the RFC 4180 CSV show the same exact sums; bad flags are usage errors
 * (exit 2) naming the flag; no output holds a capability.
 */

let ledger: TestLedger;
let actors: Actors;
const runs: CliRun[] = [];

async function lexec(args: readonly string[]): Promise<CliRun> {
  const run = await runLexec(args);
  runs.push(run);
  return run;
}
const admin = () => ['--url', ledger.url, '--token-file', join(ledger.dir, 'credentials', 'admin.capability')];

async function requestAndSettle(units: string, settled: string | null, target: string | null): Promise<void> {
  const body = { amount_units: units, units_scale: 6, currency: 'USD', ...(target === null ? {} : { target_id: target }) };
  const requested = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', { token: actors.agent, body });
  const tokenId = requested.body.authorization.token_id;
  if (settled === null) return;
  const executionId = `exe_${randomUUID().replaceAll('-', '')}`;
  expect((await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: claimBody(ledger, tokenId, executionId) })).status).toBe(200);
  const answer = await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/settle`, { token: actors.executor, body: { execution_id: executionId, receipt: preciseReceipt(settled) } });
  expect(answer.status).toBe(200);
}

beforeAll(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
  await requestAndSettle('900000', '899999', 'lexec:target:v1:flux-schnell');
  await requestAndSettle('500000', '250001', 'lexec:target:v1:flux,"dev"');
  await requestAndSettle('700000', null, null);
}, 60_000);

afterAll(async () => {
  const secrets = [ledger.adminToken, actors.agent, actors.executor, actors.approver];
  await ledger.close();
  for (const run of runs) {
    for (const secret of secrets) expect(run.stdout + run.stderr).not.toContain(secret);
  }
});

describe('lexec ledger spend', () => {
  it('--json: the report as the ledger answered it, amounts as digit strings', async () => {
    const result = expectResult(await lexec(['ledger', 'spend', ...admin(), '--by', 'agent', '--json'])) as Record<string, unknown>;
    expect(result).toMatchObject({
      by: 'agent',
      time_zone: 'UTC',
      groups: [{ group: actors.agentId, label: 'bot', settled_units: '1150000', settled_count: 2, held_units: '700000', held_count: 1 }],
      total: { settled_units: '1150000', settled_count: 2, held_units: '700000', held_count: 1 },
    });
  });

  it('a table with exact USD amounts and a total line', async () => {
    const run = await lexec(['ledger', 'spend', ...admin(), '--by', 'target']);
    expect(run.exitCode, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toMatch(/^Spend settled from the first settlement to now, by target \(UTC\); held as of /);
    expect(lines.slice(1).map((line) => line.trim().split(/\s{2,}/))).toEqual([
      ['target', 'settled', 'settlements', 'held', 'holds'],
      ['(none)', '0.000000 USD', '0', '0.700000 USD', '1'],
      ['lexec:target:v1:flux,"dev"', '0.250001 USD', '1', '0.000000 USD', '0'],
      ['lexec:target:v1:flux-schnell', '0.899999 USD', '1', '0.000000 USD', '0'],
      ['total', '1.150000 USD', '2', '0.700000 USD', '1'],
    ]);
  });

  it('--csv: RFC 4180 with a header, CRLF line ends, quoted fields, amounts in USD and micro-units', async () => {
    const run = await lexec(['ledger', 'spend', ...admin(), '--by', 'target', '--since', '2020-01-01', '--csv']);
    expect(run.exitCode, run.stderr).toBe(0);
    // execa drops the last CRLF; every record ends with one.
    expect(`${run.stdout}\r\n`).toBe(
      [
        'group,label,settled_usd,settled_units,settled_count,held_usd,held_units,held_count',
        '(none),(none),0.000000,0,0,0.700000,700000,1',
        '"lexec:target:v1:flux,""dev""","lexec:target:v1:flux,""dev""",0.250001,250001,1,0.000000,0,0',
        'lexec:target:v1:flux-schnell,lexec:target:v1:flux-schnell,0.899999,899999,1,0.000000,0,0',
        'total,total,1.150000,1150000,2,0.700000,700000,1',
      ].map((record) => `${record}\r\n`).join(''),
    );
  });

  it('refuses bad flags as usage errors naming the flag', async () => {
    expect(expectFailure(await lexec(['ledger', 'spend', ...admin(), '--by', 'year', '--json']), 2, 'invalid_flag_value').message).toContain('--by');
    expect(expectFailure(await lexec(['ledger', 'spend', ...admin(), '--by', 'day', '--since', '2026-02-30', '--json']), 2, 'invalid_flag_value').message).toContain('--since');
    expect(expectFailure(await lexec(['ledger', 'spend', ...admin(), '--by', 'day', '--until', 'tomorrow', '--json']), 2, 'invalid_flag_value').message).toContain('--until');
    expectFailure(await lexec(['ledger', 'spend', ...admin(), '--by', 'day', '--csv', '--json']), 2, 'usage_error');
    // The ledger refuses an empty range with the field at fault.
    const empty = expectFailure(await lexec(['ledger', 'spend', ...admin(), '--by', 'day', '--since', '2026-12-01', '--until', '2026-11-01', '--json']), 1, 'ledger_invalid_request');
    expect(JSON.stringify(empty)).toContain('until');
  });
});
