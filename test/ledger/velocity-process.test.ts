import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, expectResult, runLexec } from '../support/cli.js';
import { setUpActors, type Actors } from '../support/ledger.js';
import { startLedgerPair, type LedgerPair, type LedgerProcess, type TemporaryLedgerProcess } from '../support/ledger-process.js';

/*
 * Issue 27 item 3's proofs on real `lexec ledger serve` processes: concurrent requests cannot slip
 * past a velocity limit (from two ledger processes on one database: exactly `limit` accepted in
 * the window); a loop sending about 50 requests a second is cut at the limit, refused with 429 and
 * Retry-After, then the breaker suspends the agent and nothing is held afterwards. The CLI's
 * policy file, `policy show`, `agents list` and `authorizations request` speak of the limits.
 */

let ledger: TemporaryLedgerProcess;
let other: LedgerProcess;
let adminToken: string;
let reader: Database.Database;
let pair: LedgerPair;

beforeAll(async () => {
  // A second process on the same database: the count must hold across processes, not only within one.
  pair = await startLedgerPair();
  ({ ledger, other, adminToken, reader } = pair);
}, 60_000);

afterAll(async () => {
  await pair.stop();
});

const CAPS = { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' };
const admin = () => ['--url', ledger.url, '--token-file', ledger.adminCapabilityPath];

/** A policy file in the ledger's directory, and `lexec ledger policy set` from it. */
async function setPolicyFile(agentId: string, name: string, document: Record<string, unknown>) {
  const file = join(ledger.dir, 'policies', `${name}.json`);
  await mkdir(join(ledger.dir, 'policies'), { recursive: true });
  await writeFile(file, JSON.stringify(document));
  return runLexec(['ledger', 'policy', 'set', ...admin(), '--agent-id', agentId, '--file', file, '--json']);
}

async function request(url: string, actors: Actors) {
  const response = await fetch(`${url}/authorizations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${actors.agent}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount_units: '100000', units_scale: 6, currency: 'USD' }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as { error?: Record<string, unknown> } };
}

const count = (sql: string, ...params: unknown[]) => (reader.prepare(sql).get(...params) as { n: number }).n;

describe('velocity limits on real ledger processes', () => {
  it('refuses a policy file with a negative or fractional limit with every field path, sending nothing', async () => {
    const actors = await setUpActors({ url: ledger.url, adminToken }, 'bad-input');
    const before = reader.prepare('SELECT * FROM policies WHERE agent_id = ?').get(actors.agentId);
    const run = await setPolicyFile(actors.agentId, 'bad', { ...CAPS, max_requests_per_minute: -5, max_requests_per_hour: 2.5, suspend_after_velocity_refusals: 'three' });
    const error = expectFailure(run, 1, 'policy_file_invalid');
    expect(error.issues?.map((issue) => issue.path).sort()).toEqual(['max_requests_per_hour', 'max_requests_per_minute', 'suspend_after_velocity_refusals']);
    // The values are never echoed (the file's path, which may hold any characters, is left out of the search).
    const withoutPaths = (text: string) => text.replace(/\/\S+/g, '<path>');
    const said = withoutPaths(JSON.stringify({ message: error.message, next_step: error.next_step, issues: error.issues }) + run.stderr);
    expect(said).not.toMatch(/-5|2\.5|three/);
    expect(reader.prepare('SELECT * FROM policies WHERE agent_id = ?').get(actors.agentId)).toEqual(before);
  });

  it('N concurrent requests from two processes against a limit below N: exactly the limit accepted, the rest 429 with Retry-After', async () => {
    const actors = await setUpActors({ url: ledger.url, adminToken }, 'burst');
    const set = expectResult(await setPolicyFile(actors.agentId, 'burst', { ...CAPS, max_requests_per_minute: 7 })) as { policy: Record<string, unknown> };
    expect(set.policy).toMatchObject({ max_requests_per_minute: '7', max_requests_per_hour: null, suspend_after_velocity_refusals: null });

    const answers = await Promise.all(Array.from({ length: 24 }, (_, index) => request(index % 2 === 0 ? ledger.url : other.url, actors)));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(7);
    const refused = answers.filter((answer) => answer.status !== 201);
    expect(refused).toHaveLength(17);
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(answer.body.error).toMatchObject({ code: 'too_many_requests', reason_code: 'velocity_exceeded', velocity_limit: 'max_requests_per_minute', retry_after_seconds: Number(answer.retryAfter) });
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(answer.retryAfter)).toBeLessThanOrEqual(60);
    }
    expect(count('SELECT COUNT(*) AS n FROM authorizations WHERE agent_id = ?', actors.agentId)).toBe(7);
    expect(count('SELECT COUNT(*) AS n FROM agent_requests WHERE agent_id = ? AND velocity_refused = 1', actors.agentId)).toBe(17);

    // The CLI of an agent says how long to wait and how to raise the limit.
    const agentFile = join(ledger.dir, 'agent-credentials', 'burst.capability');
    await mkdir(join(ledger.dir, 'agent-credentials'), { recursive: true, mode: 0o700 });
    await writeFile(agentFile, actors.agent, { mode: 0o600 });
    const asked = await runLexec(['ledger', 'authorizations', 'request', '--url', ledger.url, '--token-file', agentFile, '--amount-units', '1000', '--json']);
    const error = expectFailure(asked, 1, 'ledger_velocity_exceeded');
    expect(error.message).toContain('velocity limit (max_requests_per_minute)');
    expect(error.next_step).toMatch(/^Wait \d+ s before the next request, without retrying meanwhile/);
    expect(error.next_step).toContain('lexec ledger policy set');
    // The operator sees the limit.
    const shown = await runLexec(['ledger', 'policy', 'show', ...admin(), '--agent-id', actors.agentId]);
    expect(shown.stdout).toContain('requests per minute at most 7');
    expect(shown.stdout).not.toContain('requests per hour');
  });

  it('a loop sending about 50 requests a second is cut at the limit, refused with Retry-After, then suspended by the breaker; nothing is held afterwards', async () => {
    const actors = await setUpActors({ url: ledger.url, adminToken }, 'runaway');
    expect(expectResult(await setPolicyFile(actors.agentId, 'runaway', { ...CAPS, max_requests_per_minute: 10, suspend_after_velocity_refusals: 5 }))).toBeTruthy();

    const answers: Awaited<ReturnType<typeof request>>[] = [];
    for (let index = 0; index < 25; index += 1) {
      answers.push(await request(ledger.url, actors));
      await delay(20);
    }
    const statuses = answers.map((answer) => answer.status);
    expect(statuses).toEqual([...Array<number>(10).fill(201), ...Array<number>(4).fill(429), ...Array<number>(11).fill(403)]);
    for (const answer of answers.slice(10, 14)) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    for (const answer of answers.slice(14)) {
      expect(answer).toMatchObject({ retryAfter: null, body: { error: { code: 'forbidden', reason_code: 'agent_suspended', suspended_by: 'velocity_breaker' } } });
    }

    // Suspended as an operator would: every hold freed, the agent marked as the breaker's.
    const spending = await fetch(`${ledger.url}/agent/spending`, { headers: { authorization: `Bearer ${actors.agent}` } });
    expect(((await spending.json()) as { spending: unknown }).spending).toMatchObject({ held_units: '0', spent_units: '0', agent_status: 'suspended' });
    expect(count("SELECT COUNT(*) AS n FROM authorizations WHERE agent_id = ? AND status = 'cancelled'", actors.agentId)).toBe(10);
    expect(count("SELECT COUNT(*) AS n FROM authorizations WHERE agent_id = ? AND status <> 'cancelled'", actors.agentId)).toBe(0);
    expect(reader.prepare('SELECT status, suspended_by, suspension_reason FROM agents WHERE agent_id = ?').get(actors.agentId)).toEqual({
      status: 'suspended',
      suspended_by: 'velocity_breaker',
      suspension_reason: 'velocity: 5 refusals in the last hour (limit 10 requests per minute); suspended automatically by the runaway-loop breaker',
    });
    const listed = await runLexec(['ledger', 'agents', 'list', ...admin()]);
    expect(listed.stdout.split('\n').find((line) => line.includes('runaway'))).toContain('suspended (automatic: velocity breaker)');
  });
});
