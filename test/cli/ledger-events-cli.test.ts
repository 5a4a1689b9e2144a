import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, expectFailure, makeTempDir, removeDir, runLexec, type CliRun } from '../support/cli.js';
import { call, mintCredential } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';

/*
 * `lexec ledger events` end to end: the built binary in child processes against a real `lexec
 * ledger serve` child. It prints the ledger's events oldest first — readable lines (time, type,
 * agent name, target, exact USD, authorization id) or JSON Lines with --json — filtered by type;
 * an unknown type is a usage error naming --types. With --follow it prints events made after it
 * started, and when the ledger is SIGKILLed and started again on the same address it warns on
 * stderr, reconnects and continues after the last event it printed: every event once, in order.
 * SIGINT ends it with exit 0. No output holds the prompt or a capability.
 */

const PROMPT = 'a lighthouse at dusk, oil on canvas';
const TARGET = 'lexec:target:v1:flux-schnell';

let dir: string;
let ledger: LedgerProcess;
let port = 0;
let adminToken: string;
let agent: string;
const capabilities: string[] = [];
const runs: CliRun[] = [];

const admin = () => ['--url', ledger.url, '--token-file', ledger.adminCapabilityPath];
async function lexec(args: readonly string[]): Promise<CliRun> {
  const run = await runLexec(args);
  runs.push(run);
  return run;
}
async function request(amountUnits: string): Promise<string> {
  const answer = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: agent,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', target_id: TARGET, prompt: PROMPT },
  });
  expect(answer.status).toBe(201);
  return answer.body.authorization.token_id;
}
const start = async () => spawnLedger(dir, ledgerConfig(dir, { http: { host: '127.0.0.1', port } }));
const jsonLines = (text: string) => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { event_id: string; type: string; authorization_id: string | null });

beforeAll(async () => {
  dir = await makeTempDir('lexec-ledger-events-cli-');
  ledger = await start();
  // Bound by the ledger (port 0); a restart listens on the same one, so --url stays right.
  port = Number(new URL(ledger.url).port);
  adminToken = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();
  const added = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: adminToken, body: { name: 'poster-bot' } });
  agent = await mintCredential({ url: ledger.url, adminToken }, 'agent', added.body.agent.agent_id);
  capabilities.push(adminToken, agent);
}, 120_000);

afterAll(async () => {
  await ledger.stop();
  await removeDir(dir);
  for (const run of runs) {
    expect(run.stdout + run.stderr).not.toContain(PROMPT);
    expect(run.stdout + run.stderr).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{20,}/);
    for (const capability of capabilities) expect(run.stdout + run.stderr).not.toContain(capability);
  }
});

describe('lexec ledger events', () => {
  it('prints every event oldest first: readable lines, or JSON Lines with --json; --types filters', async () => {
    const auto = await request('500000');
    const waiting = await request('2000000');
    const human = await lexec(['ledger', 'events', ...admin()]);
    expect(human.exitCode, human.stderr).toBe(0);
    const lines = human.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  authorization\\.requested  poster-bot  ${TARGET}  0\\.500000 USD  ${auto}  status=approved$`));
    expect(lines[2]).toContain(`approval.waiting  poster-bot  ${TARGET}  2.000000 USD  ${waiting}`);

    const json = await lexec(['ledger', 'events', ...admin(), '--json', '--types', 'approval.waiting']);
    expect(json.exitCode, json.stderr).toBe(0);
    expect(jsonLines(json.stdout).map((event) => [event.type, event.authorization_id])).toEqual([['approval.waiting', waiting]]);
    const since = await lexec(['ledger', 'events', ...admin(), '--json', '--since', '2']);
    expect(jsonLines(since.stdout).map((event) => event.event_id)).toEqual(['3']);
  });

  it('refuses an unknown type and a bad --since with the flag named (exit 2)', async () => {
    const unknown = expectFailure(await lexec(['ledger', 'events', ...admin(), '--json', '--types', 'authorization.requested,spend.happened']), 2, 'invalid_flag_value');
    expect(unknown.message).toMatch(/^--types must be event types/);
    const since = expectFailure(await lexec(['ledger', 'events', ...admin(), '--json', '--since', '-1']), 2, 'invalid_flag_value');
    expect(since.message).toMatch(/^--since must be an event id/);
  });

  it('--follow prints events made after it started, across a ledger SIGKILL and restart, each once and in order; SIGINT ends it with exit 0', async () => {
    const before = jsonLines((await lexec(['ledger', 'events', ...admin(), '--json'])).stdout).at(-1)?.event_id ?? '0';
    const child = spawn(process.execPath, [BIN, 'ledger', 'events', ...admin(), '--follow', '--json', '--since', before], {
      env: { PATH: process.env.PATH ?? '', HOME: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => {
      child.once('close', (code) => {
        resolve(code);
      });
    });
    const until = async (what: string, ready: () => boolean) => {
      const deadline = Date.now() + 60_000;
      while (!ready()) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`never saw ${what}:\n${stdout}\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    try {
      const first = await request('600000');
      await until('the first event', () => stdout.includes(first));
      expect(await ledger.stop('SIGKILL')).toBe(128);
      await until('the warning', () => /Warning: The ledger at .* is unreachable/.test(stderr));
      ledger = await start();
      const second = await request('700000');
      const third = await request('3000000');
      await until('the events after the restart', () => stdout.includes(second) && stdout.includes(third));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      runs.push({ exitCode: 0, stdout, stderr });

      const printed = jsonLines(stdout);
      const ids = printed.map((event) => Number(event.event_id));
      // Every event after the cursor, once, in order: as many as there are, consecutive from the one after it.
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => Number(before) + 1 + index));
      expect(printed.map((event) => [event.type, event.authorization_id])).toEqual([
        ['authorization.requested', first],
        ['authorization.requested', second],
        ['authorization.requested', third],
        ['approval.waiting', third],
      ]);
    } finally {
      child.kill('SIGKILL');
    }
  }, 120_000);
});
