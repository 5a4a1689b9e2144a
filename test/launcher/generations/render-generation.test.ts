import { describe, expect, it } from 'vitest';
import type { BuildInfo } from '../../../src/build-info.js';
import { parseExecutorConfig } from '../../../src/executor/config/parse-executor-config.js';
import { UserError } from '../../../src/errors.js';
import { parseProfile } from '../../../src/launcher/profiles/profile-store.js';
import { compareGenerations, generationComponents, manifestSchema, renderGeneration } from '../../../src/launcher/generations/render-generation.js';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { exampleTable, exampleText, tableAt, toToml, type TomlTable } from '../../support/example-profiles.js';

/* The pure render (src/launcher/generations/render-generation.ts): ids, files, manifests, comparisons. */

const HOME = '/home/operator/.lexec';
const DEVELOPMENT: BuildInfo = { product: 'lexec', product_version: 'v0.3.0', contract_version: 'v4.5', commit: 'a'.repeat(40), build_kind: 'development' };
const RELEASE: BuildInfo = { ...DEVELOPMENT, build_kind: 'release' };

async function render(source: string | TomlTable, options: { name?: string; build?: BuildInfo; now?: Date } = {}) {
  const text = typeof source === 'string' ? exampleText(source) : toToml(source);
  const profile = await parseProfile(text, 'profile.toml');
  return renderGeneration({ profile, paths: profilePaths(HOME, options.name ?? 'sandbox'), build: options.build ?? DEVELOPMENT, now: options.now ?? new Date('2026-11-01T00:00:00Z') });
}

describe('render', () => {
  it('gives the same id for the same inputs, whenever it runs', async () => {
    const first = await render('sandbox', { now: new Date('2026-11-01T00:00:00Z') });
    const second = await render('sandbox', { now: new Date('2027-01-01T12:00:00Z') });
    expect(second.id).toBe(first.id);
    expect(second.files).toEqual(first.files);
    expect(second.manifest.rendered_at).not.toBe(first.manifest.rendered_at);
    expect(first.id).toMatch(/^g[0-9a-f]{16}$/);
  });

  it('gives another id for another profile content, profile name or binary', async () => {
    const base = await render('sandbox');
    const edited = exampleTable('sandbox');
    tableAt(edited, 'sandbox').complete_after_ms = 301;
    const ids = new Set([
      base.id,
      (await render(edited)).id,
      (await render('sandbox', { name: 'other' })).id,
      (await render('sandbox', { build: { ...DEVELOPMENT, commit: 'b'.repeat(40) } })).id,
      (await render('sandbox', { build: RELEASE })).id,
    ]);
    expect(ids.size).toBe(5);
  });

  it('renders runtime files the components accept, with state paths derived from the profile directory', async () => {
    const generation = await render('sandbox');
    const executor = parseExecutorConfig(JSON.parse(generation.files['executor.json'] ?? ''));
    if (!executor.ok) throw new Error(JSON.stringify(executor.issues));
    expect(executor.value.credentials).toEqual({ mode: 'managed', state_dir: `${HOME}/profiles/sandbox/state/credentials/executor` });
    expect(executor.value.storage.database_path).toBe(`${HOME}/profiles/sandbox/state/executor.db`);
    expect(executor.value.providers).toMatchObject({ mode: 'sandbox', base_url: 'http://127.0.0.1:7420' });
    expect(executor.value.ledger.product_version).toBe('v0.3.0');
    const ledger = JSON.parse(generation.files['ledger.json'] ?? '') as Record<string, unknown>;
    expect(ledger.database_path).toBe(`${HOME}/profiles/sandbox/state/ledger.db`);
    expect(manifestSchema.safeParse(generation.manifest).success).toBe(true);
  });

  it('renders [orphan_claims] into the executor configuration when the profile sets it, and nothing when it does not', async () => {
    const unset = JSON.parse((await render('sandbox')).files['executor.json'] ?? '') as Record<string, unknown>;
    expect(unset).not.toHaveProperty('orphan_claims');
    const table = exampleTable('sandbox');
    table.orphan_claims = { release_after_seconds: 120 };
    const executor = parseExecutorConfig(JSON.parse((await render(table)).files['executor.json'] ?? ''));
    if (!executor.ok) throw new Error(JSON.stringify(executor.issues));
    expect(executor.value.orphan_claims).toEqual({ release_after_seconds: 120 });
    table.orphan_claims = { release_after_seconds: 5 };
    await expect(render(table)).rejects.toMatchObject({ issues: [{ path: 'orphan_claims.release_after_seconds' }] });
  });

  it('renders a managed Temporal with its data in state/temporal, its log in logs/ and its ports from [ports], recorded in the manifest', async () => {
    const generation = await render('managed-temporal', { name: 'temporal' });
    const executor = parseExecutorConfig(JSON.parse(generation.files['executor.json'] ?? ''));
    if (!executor.ok) throw new Error(JSON.stringify(executor.issues));
    expect(executor.value.workflow_engine).toEqual({
      mode: 'managed_local',
      temporal_cli: { path: '/usr/local/bin/temporal', version: '1.5.1' },
      data_dir: `${HOME}/profiles/temporal/state/temporal`,
      log_dir: `${HOME}/profiles/temporal/logs`,
      port: 7630,
      ui_port: 7640,
      namespace: 'default',
    });
    expect(generation.manifest.components.executor).toEqual({ port: 7610, workflow_engine: 'managed_local', temporal: { port: 7630, ui_port: 7640 } });
  });

  it('renders an external Temporal as configured, with no Temporal ports in the manifest', async () => {
    const generation = await render('external-temporal');
    const executor = JSON.parse(generation.files['executor.json'] ?? '') as { workflow_engine: unknown };
    // No task_queue: the executor derives one from its installation id (docs/executions.md "Task-queue ownership").
    expect(executor.workflow_engine).toEqual({ mode: 'external', address: 'grpc://127.0.0.1:7233', namespace: 'default', ui_url: 'http://127.0.0.1:8233' });
    expect(generation.manifest.components.executor).toEqual({ port: 7710, workflow_engine: 'external' });
  });

  it('keeps a task_queue the profile names (a profile from before derived queues keeps its queue)', async () => {
    const profile = exampleTable('external-temporal');
    tableAt(profile, 'workflow_engine').task_queue = 'lexec-executions';
    const executor = JSON.parse((await render(profile)).files['executor.json'] ?? '') as { workflow_engine: { task_queue?: string } };
    expect(executor.workflow_engine.task_queue).toBe('lexec-executions');
  });

  it('reads a manifest written before Temporal ports were recorded', async () => {
    const generation = await render('sandbox');
    expect(manifestSchema.safeParse({ ...generation.manifest, components: { ...generation.manifest.components, executor: { port: 7410, workflow_engine: 'embedded' } } }).success).toBe(true);
  });

  it('turns the development allowance on only for a development build', async () => {
    const allowance = async (build: BuildInfo) => (JSON.parse((await render('sandbox', { build })).files['executor.json'] ?? '') as { development_allowance: boolean }).development_allowance;
    expect(await allowance(DEVELOPMENT)).toBe(true);
    expect(await allowance(RELEASE)).toBe(false);
  });

  it('records every file with its hash and the binary lineage in the manifest', async () => {
    const { manifest, files } = await render('sandbox');
    expect(manifest.files.map((file) => [file.name, file.component])).toEqual([
      ['ledger.json', 'ledger'],
      ['executor.json', 'executor'],
    ]);
    const { createHash } = await import('node:crypto');
    for (const file of manifest.files) expect(file.sha256).toBe(createHash('sha256').update(files[file.name] ?? '').digest('hex'));
    expect(manifest.lineage).toEqual({ product_version: 'v0.3.0', contract_version: 'v4.5', commit: 'a'.repeat(40), build_kind: 'development' });
  });

  it('starts ledger, executor and sandbox for a sandbox profile; ledger and executor for a live one', async () => {
    expect(generationComponents((await render('sandbox')).manifest)).toEqual(['ledger', 'executor', 'sandbox']);
    expect(generationComponents((await render('live', { name: 'live' })).manifest)).toEqual(['ledger', 'executor']);
  });

  it('renders a live profile into live provider settings without any secret', async () => {
    const generation = await render('live', { name: 'live' });
    const executor = JSON.parse(generation.files['executor.json'] ?? '') as { providers: Record<string, unknown> };
    expect(executor.providers).toMatchObject({ mode: 'live', target_id: 'lexec:target:v1:flux-schnell', credential: { store: 'file' } });
  });

  it('refuses a profile whose rendered configuration the executor would refuse, naming the fields', async () => {
    // The profile schema allows partial pricing; live mode needs a price for every preset.
    const table = exampleTable('live');
    delete tableAt(table, 'execution_targets.0.pricing.by_image_size').landscape_4_3;
    const profile = await parseProfile(toToml(table), 'profile.toml');
    const attempt = () => renderGeneration({ profile, paths: profilePaths(HOME, 'live'), build: DEVELOPMENT, now: new Date() });
    expect(attempt).toThrow(UserError);
    try {
      attempt();
    } catch (error) {
      expect((error as UserError).code).toBe('profile_not_renderable');
      expect((error as UserError).issues.map((issue) => issue.path)).toEqual(['executor.json: execution_targets[0].pricing.by_image_size.landscape_4_3']);
    }
  });
});

describe('compareGenerations', () => {
  it('against no active generation: every file changed, every component affected', async () => {
    const generation = await render('sandbox');
    expect(compareGenerations(null, generation.manifest)).toEqual({ changed_files: ['ledger.json', 'executor.json'], affected_components: ['ledger', 'executor', 'sandbox'] });
  });

  it('against itself: nothing', async () => {
    const generation = await render('sandbox');
    expect(compareGenerations(generation.manifest, generation.manifest)).toEqual({ changed_files: [], affected_components: [] });
  });

  it('a sandbox-only change affects only the sandbox', async () => {
    const before = await render('sandbox');
    const table = exampleTable('sandbox');
    tableAt(table, 'sandbox').complete_after_ms = 1000;
    const after = await render(table);
    expect(compareGenerations(before.manifest, after.manifest)).toEqual({ changed_files: [], affected_components: ['sandbox'] });
  });

  it('a ledger port change affects the ledger and the executor that calls it', async () => {
    const before = await render('sandbox');
    const table = exampleTable('sandbox');
    tableAt(table, 'ports').ledger = 7401;
    const after = await render(table);
    expect(compareGenerations(before.manifest, after.manifest)).toEqual({ changed_files: ['ledger.json', 'executor.json'], affected_components: ['ledger', 'executor'] });
  });

  it('a Temporal port change affects the executor, which starts that server', async () => {
    const before = await render('managed-temporal');
    const table = exampleTable('managed-temporal');
    tableAt(table, 'ports').temporal_ui = 7641;
    const after = await render(table);
    expect(compareGenerations(before.manifest, after.manifest)).toEqual({ changed_files: ['executor.json'], affected_components: ['executor'] });
  });

  it('a policy change affects only the ledger', async () => {
    const before = await render('sandbox');
    const table = exampleTable('sandbox');
    tableAt(table, 'ledger.default_policy').daily_cap_units = '30000000';
    const after = await render(table);
    expect(compareGenerations(before.manifest, after.manifest)).toEqual({ changed_files: ['ledger.json'], affected_components: ['ledger'] });
  });

  it('a new binary affects every component even when no file changed', async () => {
    const before = await render('sandbox');
    const after = await render('sandbox', { build: { ...DEVELOPMENT, commit: 'c'.repeat(40) } });
    expect(compareGenerations(before.manifest, after.manifest)).toEqual({ changed_files: [], affected_components: ['ledger', 'executor', 'sandbox'] });
  });
});
