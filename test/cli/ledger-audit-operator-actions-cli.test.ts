import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerAuditPage } from '../../src/ledger/wire/answers.js';
import { expectResult, makeTempDir, removeDir, runLexec, type CliRun } from '../support/cli.js';
import { startLedgerProcess, type TemporaryLedgerProcess } from '../support/ledger-process.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * `lexec ledger audit` shows issue 28's operator actions (ledger migration 14): the built binary
 * against a real `lexec ledger serve` child. The operator adds a webhook sink, removes it and sets
 * the installation budget, each through its own command; the audit's table names each action in
 * words with what it changed, its `--json` keeps the ledger's action names — and no run's output
 * holds the sink URL's path or the secret file's content.
 */

let ledger: TemporaryLedgerProcess;
let receiver: WebhookReceiver;
let root: string;
let secret = '';
let secretPath = '';
let sinkId = '';
const runs: CliRun[] = [];
const SECRET_PATH_PART = 'T0SECRET/B0SECRET/xoxsecretpathpart';

async function lexec(args: readonly string[]): Promise<CliRun> {
  const run = await runLexec(args);
  runs.push(run);
  return run;
}
const admin = () => ['--url', ledger.url, '--token-file', ledger.adminCapabilityPath];

beforeAll(async () => {
  ledger = await startLedgerProcess();
  receiver = await startWebhookReceiver(200);
  root = await makeTempDir('lexec-ledger-audit-actions-cli-');
  await mkdir(join(root, 'secrets'), { mode: 0o700 });
  secretPath = join(root, 'secrets', 'hook.secret');
  secret = randomBytes(32).toString('hex');
  await writeFile(secretPath, `${secret}\n`, { mode: 0o600 });
  const added = expectResult(
    await lexec(['ledger', 'webhooks', 'add', ...admin(), '--webhook-url', `${receiver.origin}/hooks/${SECRET_PATH_PART}`, '--secret-file', secretPath, '--events', 'approval.waiting', '--json']),
  ) as { sink: { sink_id: string } };
  sinkId = added.sink.sink_id;
  expectResult(await lexec(['ledger', 'webhooks', 'remove', sinkId, ...admin(), '--json']));
  expectResult(await lexec(['ledger', 'budget', 'set', ...admin(), '--month-units', '90000000', '--expect-version', '1', '--json']));
}, 120_000);

afterAll(async () => {
  const adminCapability = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();
  await receiver.close();
  await ledger.stop();
  await removeDir(root);
  for (const run of runs) {
    for (const hidden of ['T0SECRET', 'xoxsecretpathpart', secret, adminCapability]) expect(run.stdout + run.stderr).not.toContain(hidden);
  }
});

describe('lexec ledger audit: webhook sinks and the installation budget', () => {
  it('--json: webhook_added, webhook_removed and budget_changed, by the admin, with before and after', async () => {
    const { events } = expectResult(await lexec(['ledger', 'audit', ...admin(), '--json'])) as LedgerAuditPage;
    const own = events.filter((event) => ['webhook_added', 'webhook_removed', 'budget_changed'].includes(event.action));
    expect(own.map((event) => [event.action, event.actor_kind, event.subject_id])).toEqual([
      ['webhook_added', 'admin', sinkId],
      ['webhook_removed', 'admin', sinkId],
      ['budget_changed', 'admin', 'installation_budget'],
    ]);
    expect(own[0]?.after).toMatchObject({ status: 'active', url_origin: receiver.origin, format: 'lexec', events: 'approval.waiting', secret_file: secretPath });
    expect([own[1]?.before, own[1]?.after]).toEqual([{ status: 'active' }, { status: 'removed', failed_deliveries: 0 }]);
    expect(own[2]?.after).toMatchObject({ version: '2', month_budget_units: '90000000' });
    expect(events.some((event) => event.action === 'policy_changed')).toBe(false);
  });

  it('the table names each in words, with what it changed', async () => {
    const human = await lexec(['ledger', 'audit', ...admin()]);
    expect([human.exitCode, human.stderr]).toEqual([0, '']);
    const line = (words: string) => human.stdout.split('\n').find((text) => text.includes(words)) ?? '';
    expect(line('webhook sink added')).toMatch(new RegExp(`admin admin +webhook sink added +— +${sinkId} +status active; url_origin ${receiver.origin.replaceAll('.', '\\.')}; format lexec; events approval\\.waiting; secret_file ${secretPath}`));
    expect(line('webhook sink removed')).toMatch(/admin admin +webhook sink removed +— +whk_\S+ +status active → removed; failed_deliveries 0/);
    expect(line('installation budget changed')).toMatch(/admin admin +installation budget changed +— +installation_budget +version 1 → 2; .*month_budget_units none → 90\.000000 USD/);
    expect(human.stdout).not.toContain('webhook_added');
  });
});
