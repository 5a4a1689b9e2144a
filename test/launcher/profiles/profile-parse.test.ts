import { describe, expect, it } from 'vitest';
import { LIVE_SPEND_ACKNOWLEDGEMENT } from '../../../src/executor/config/executor-config-schema.js';
import { UserError, type FieldIssue } from '../../../src/errors.js';
import { parseProfile } from '../../../src/launcher/profiles/profile-store.js';
import { exampleNames, exampleTable, exampleText, profileRefusal, tableAt, toToml, type TomlTable } from '../../support/example-profiles.js';

/* Profile TOML (src/launcher/profiles/profile-schema.ts, profile-store.ts `parseProfile`), called directly. */

const SOURCE = '/home/operator/.lexec/profiles/test/profile.toml';

const problems = (text: string): Promise<UserError> => profileRefusal(text, SOURCE);

async function issuesOf(table: TomlTable): Promise<readonly FieldIssue[]> {
  const error = await problems(toToml(table));
  expect(error.code).toBe('profile_invalid');
  return error.issues;
}

function edited(example: string, change: (table: TomlTable) => void): TomlTable {
  const table = exampleTable(example);
  change(table);
  return table;
}

describe('the shipped example profiles', () => {
  it('ships the sandbox, managed Temporal, external Temporal and live examples', () => {
    expect(exampleNames()).toEqual(['external-temporal.toml', 'live.toml', 'managed-temporal.toml', 'sandbox.toml']);
  });

  it.each(exampleNames())('%s parses', async (name) => {
    const profile = await parseProfile(exampleText(name), SOURCE);
    expect(profile.schema_version).toBe(1);
    expect(profile.execution_targets?.length).toBeGreaterThan(0);
  });

  it('reads amounts as exact integers and fills defaults', async () => {
    const profile = await parseProfile(exampleText('sandbox'), SOURCE);
    expect(profile.ledger.default_policy?.per_authorization_cap_units).toBe(5_000_000n);
    expect(profile.execution_targets?.[0]?.pricing.by_image_size.square_hd).toEqual({ numerator: 3n, denominator: 1000n });
    const live = await parseProfile(exampleText('live'), SOURCE);
    expect(live.live?.spend_ceiling.amount_units).toBe(10_000_000n);
  });
});

describe('unknown keys', () => {
  it.each([
    ['ports.bogus', (table: TomlTable) => (tableAt(table, 'ports').bogus = 1)],
    ['execution_targets[0].pricing.extra', (table: TomlTable) => (tableAt(table, 'execution_targets.0.pricing').extra = 'x')],
    ['surprise', (table: TomlTable) => (table.surprise = true)],
    ['ledger.default_policy.note', (table: TomlTable) => (tableAt(table, 'ledger.default_policy').note = 'x')],
    ['workflow_engine.address', (table: TomlTable) => (tableAt(table, 'workflow_engine').address = 'http://127.0.0.1:7233')],
    ['sandbox.fault', (table: TomlTable) => (tableAt(table, 'sandbox').fault = 'x')],
  ])('%s is refused by its path', async (path, change) => {
    const issues = await issuesOf(edited('sandbox', change));
    expect(issues).toContainEqual({ path, message: 'unknown field' });
  });

  it('are refused in the live section too', async () => {
    const issues = await issuesOf(edited('live', (table) => (tableAt(table, 'live.spend_ceiling').cents = 5)));
    expect(issues).toContainEqual({ path: 'live.spend_ceiling.cents', message: 'unknown field' });
  });

  it('lists every problem of a document at once', async () => {
    const issues = await issuesOf(
      edited('sandbox', (table) => {
        tableAt(table, 'ports').bogus = 1;
        tableAt(table, 'agent').name = '';
        table.schema_version = 2;
      }),
    );
    expect(issues.map((issue) => issue.path).sort()).toEqual(['agent.name', 'ports.bogus', 'schema_version']);
  });
});

describe('TOML syntax errors', () => {
  it('name line and column and never echo the document', async () => {
    const marker = 'hunter2-do-not-echo';
    const text = `${exampleText('sandbox')}\n[agent]\nname = "${marker}\n`;
    const error = await problems(text);
    expect(error.code).toBe('profile_invalid');
    expect(error.message).toMatch(/line \d+, column \d+/);
    expect(error.message).toContain(SOURCE);
    const everything = JSON.stringify({ message: error.message, next: error.nextStep, issues: error.issues });
    expect(everything).not.toContain(marker);
    expect(everything).not.toContain('complete_after_ms');
  });

  it('points at the offending line', async () => {
    const error = await problems('schema_version = 1\nkind = "sandbox"\nports = { ledger = 7400,, }\n');
    expect(error.message).toMatch(/line 3, column \d+/);
  });
});

describe('raw secrets pasted into the profile', () => {
  it.each([
    ['execution_targets[0].label', (table: TomlTable) => (tableAt(table, 'execution_targets.0').label = 'Key 0123456789abcdef0123456789abcdef')],
    ['agent.name', (table: TomlTable) => (tableAt(table, 'agent').name = 'lexec_agent_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')],
  ])('are refused at %s without repeating the value', async (path, change) => {
    const table = edited('sandbox', change);
    const error = await problems(toToml(table));
    const issue = error.issues.find((item) => item.path === path && item.message.includes('raw secret'));
    expect(issue).toBeDefined();
    const everything = JSON.stringify({ message: error.message, issues: error.issues });
    expect(everything).not.toContain('0123456789abcdef');
    expect(everything).not.toContain('AAAAAAAAAAAAAAAA');
  });

  it('a pasted key is never echoed as a path either', async () => {
    const table = edited('sandbox', (t) => (tableAt(t, 'ports')['Bearer abcdefghijklmnop'] = 1));
    const error = await problems(toToml(table));
    expect(JSON.stringify(error.issues)).not.toContain('abcdefghijklmnop');
    expect(error.issues.some((issue) => issue.path === 'ports[?]')).toBe(true);
  });
});

describe('rules across sections', () => {
  it('a sandbox profile needs ports.sandbox', async () => {
    const issues = await issuesOf(edited('sandbox', (table) => delete tableAt(table, 'ports').sandbox));
    expect(issues).toContainEqual({ path: 'ports.sandbox', message: 'required in a sandbox profile' });
  });

  it('a sandbox profile has no [live] section', async () => {
    const live = exampleTable('live').live;
    const issues = await issuesOf(edited('sandbox', (table) => (table.live = live)));
    expect(issues.map((issue) => issue.path)).toContain('live');
  });

  it('a live profile needs [live]', async () => {
    const issues = await issuesOf(edited('live', (table) => delete table.live));
    expect(issues).toContainEqual({ path: 'live', message: 'required in a live profile' });
  });

  it('a live profile has no sandbox port and no [sandbox] section', async () => {
    const issues = await issuesOf(
      edited('live', (table) => {
        tableAt(table, 'ports').sandbox = 7520;
        table.sandbox = { complete_after_ms: 10 };
      }),
    );
    expect(issues.map((issue) => issue.path).sort()).toEqual(['ports.sandbox', 'sandbox']);
  });

  it("a live profile's target must be one of execution_targets", async () => {
    const issues = await issuesOf(edited('live', (table) => (tableAt(table, 'live').target_id = 'lexec:target:v1:elsewhere')));
    expect(issues).toContainEqual({ path: 'live.target_id', message: 'must name one of execution_targets' });
  });

  it('a live profile needs the literal acknowledgement', async () => {
    const issues = await issuesOf(edited('live', (table) => (tableAt(table, 'live').acknowledgement = 'yes')));
    expect(issues.map((issue) => issue.path)).toEqual(['live.acknowledgement']);
    expect(issues[0]?.message).toContain(LIVE_SPEND_ACKNOWLEDGEMENT);
  });

  it('two components cannot share a port', async () => {
    const issues = await issuesOf(
      edited('sandbox', (table) => {
        const ports = tableAt(table, 'ports');
        ports.executor = ports.ledger;
      }),
    );
    expect(issues).toContainEqual({ path: 'ports.executor', message: 'is the same port as ports.ledger' });
  });

  it('ports are fixed, unprivileged TCP ports', async () => {
    const issues = await issuesOf(
      edited('sandbox', (table) => {
        tableAt(table, 'ports').ledger = 0;
        tableAt(table, 'ports').executor = 80;
      }),
    );
    expect(issues.map((issue) => issue.path).sort()).toEqual(['ports.executor', 'ports.ledger']);
  });

  it('a target id is listed once', async () => {
    const issues = await issuesOf(
      edited('sandbox', (table) => {
        const targets = table.execution_targets as TomlTable[];
        targets.push(structuredClone(targets[0] as TomlTable));
      }),
    );
    expect(issues).toContainEqual({ path: 'execution_targets[1].target_id', message: 'is listed twice' });
  });

  it('managed_local needs ports for its Temporal server and its UI, distinct from the others; other engines refuse them', async () => {
    const missing = await issuesOf(edited('managed-temporal', (table) => {
      delete tableAt(table, 'ports').temporal;
      delete tableAt(table, 'ports').temporal_ui;
    }));
    expect(missing.map((issue) => [issue.path, issue.message])).toEqual([
      ['ports.temporal', 'required with workflow_engine.mode = "managed_local"'],
      ['ports.temporal_ui', 'required with workflow_engine.mode = "managed_local"'],
    ]);
    const clash = await issuesOf(edited('managed-temporal', (table) => (tableAt(table, 'ports').temporal_ui = 7610)));
    expect(clash.map((issue) => issue.path)).toEqual(['ports.temporal_ui']);
    const stray = await issuesOf(edited('sandbox', (table) => (tableAt(table, 'ports').temporal = 7430)));
    expect(stray.map((issue) => issue.path)).toEqual(['ports.temporal']);
    expect(stray[0]?.message).toContain('only allowed with workflow_engine.mode = "managed_local"');
  });

  it('managed_local needs an absolute, pinned Temporal CLI', async () => {
    const issues = await issuesOf(edited('managed-temporal', (table) => (tableAt(table, 'workflow_engine').temporal_cli = { path: 'temporal', version: '^1.4' })));
    expect(issues.map((issue) => issue.path).sort()).toEqual(['workflow_engine.temporal_cli.path', 'workflow_engine.temporal_cli.version']);
  });
});
