import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCAL_CATALOG_FACTS } from '../../support/catalog-facts.js';
import { ANSI, listTree, removeDir, runLexec } from '../../support/cli.js';
import { exampleTable, toToml } from '../../support/example-profiles.js';
import { renderAndActivate } from '../../support/stack-home.js';
import { makeProfileHome, type ProfileHome } from '../logs/log-fixtures.js';

interface CatalogDocument {
  readonly ok: boolean;
  readonly result: {
    readonly profile: string;
    readonly generation_id: string;
    readonly credential_reference_basis: string;
    readonly catalog: { readonly facts: Record<string, unknown> } & Record<string, unknown>;
  };
  readonly error?: { kind: string; code: string; message: string; next_step: string };
}

const homes: ProfileHome[] = [];
const servers: Server[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  await Promise.all(homes.splice(0).map((home) => removeDir(home.home)));
});

/** A loopback listener that counts the connections it receives (the provider must get none). */
async function countingListener(port = 0): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port, connections: () => connections };
}

async function catalogJson(home: ProfileHome, profile: string): Promise<CatalogDocument> {
  const run = await runLexec(['stack', 'catalog', '--profile', profile, '--json'], { env: home.env });
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout) as CatalogDocument;
}

const SANDBOX_PRICE = { numerator: '3', denominator: '1000' };

describe('lexec stack catalog', () => {
  it("shows the sanitised catalog of the active generation, computed locally: no connection reaches the sandbox provider's (or any stack) port", async () => {
    const sandbox = await countingListener();
    const executor = await countingListener();
    const ledger = await countingListener();
    const profile = exampleTable('sandbox');
    profile.ports = { ledger: ledger.port, executor: executor.port, sandbox: sandbox.port };
    const home = await makeProfileHome({ toml: toToml(profile) });
    homes.push(home);
    const generation = await renderAndActivate(home.home, 'sandbox');
    const before = await listTree(home.home);

    const document = await catalogJson(home, 'sandbox');
    expect(document.ok).toBe(true);
    expect(document.result).toEqual({
      profile: 'sandbox',
      generation_id: generation,
      credential_reference_basis: 'not_applicable',
      catalog: {
        catalog_schema_version: 1,
        contract: { provider: 'fal', protocol: 'fal_queue', contract_version: 1 },
        providers_mode: 'sandbox',
        targets: [
          {
            target_id: 'lexec:target:v1:flux-schnell',
            label: 'FLUX.1 [schnell]',
            model: 'fal-ai/flux/schnell',
            presets: ['square_hd', 'square', 'portrait_4_3', 'portrait_16_9', 'landscape_4_3', 'landscape_16_9'],
            max_image_count: 4,
            send_seed: true,
            pricing: {
              currency: 'USD',
              unit: 'image',
              by_image_size: {
                square_hd: SANDBOX_PRICE,
                square: SANDBOX_PRICE,
                portrait_4_3: SANDBOX_PRICE,
                portrait_16_9: SANDBOX_PRICE,
                landscape_4_3: SANDBOX_PRICE,
                landscape_16_9: SANDBOX_PRICE,
              },
            },
            policy_versions: { pricing: '2026-11-01', target: 'v1' },
          },
        ],
        // Four independent facts: configured does not imply the others, and nothing claims qualification.
        facts: LOCAL_CATALOG_FACTS,
      },
    });

    const human = await runLexec(['stack', 'catalog', '--color', 'always'], { env: home.env });
    expect(human.exitCode).toBe(0);
    expect(human.stderr).toBe('');
    const plain = human.stdout.replaceAll(new RegExp(ANSI.source, 'g'), '');
    expect(plain).toContain(`Provider catalog of profile sandbox, generation ${generation} (schema 1; computed locally, the provider is not called)`);
    expect(plain).toContain('  pricing 2026-11-01 (USD per image): square_hd 3/1000, square 3/1000');
    expect(plain).toContain('  credential reference present  no (no credential reference outside live mode)');
    expect(plain).toContain('  live qualified                no (not_performed)');

    expect(sandbox.connections() + executor.connections() + ledger.connections()).toBe(0);
    // Read-only: the catalog writes nothing, not even the executor's catalog file.
    expect(await listTree(home.home)).toEqual(before);
  });

  it('for a live profile: never shows the secret coordinates, and takes credential_reference_present only from a running executor of the same generation', async () => {
    const home = await makeProfileHome({ profile: 'live', example: 'live' });
    homes.push(home);
    const generation = await renderAndActivate(home.home, 'live');

    const stopped = await catalogJson(home, 'live');
    expect(stopped.result.credential_reference_basis).toBe('not_resolved');
    expect(stopped.result.catalog.providers_mode).toBe('live');
    expect(stopped.result.catalog.facts).toEqual(LOCAL_CATALOG_FACTS);
    expect(JSON.stringify(stopped)).not.toMatch(/fal\.key|\/home\/operator|keychain|credential"/);

    // A stack running this generation: its supervisor holds the lock, its handoff names the
    // generation, and its executor recorded at startup that the secret resolved.
    const supervisor = spawn('sleep', ['60']);
    children.push(supervisor);
    const pid = supervisor.pid ?? 0;
    const state = join(home.profileDir, 'state');
    await mkdir(state, { recursive: true, mode: 0o700 });
    await writeFile(join(state, 'supervisor.lock'), `${pid}\n`);
    const credential = (role: string) => join(state, 'credentials', `${role}.capability`);
    const handoff = (generationId: string) => ({
      handoff_version: 1,
      profile: 'live',
      generation_id: generationId,
      supervisor_pid: pid,
      written_at: new Date().toISOString(),
      ledger: { endpoint: 'http://127.0.0.1:7500' },
      executor: { endpoint: 'http://127.0.0.1:7510' },
      credentials: { admin: credential('admin'), agent: credential('agent'), approver: credential('approver'), caller: credential('caller'), reconciliation: credential('reconciliation') },
      agent: { name: 'local', agent_id: 'agt_00000000-0000-4000-8000-000000000000' },
    });
    await writeFile(join(state, 'handoff.json'), JSON.stringify(handoff(generation)), { mode: 0o600 });
    await writeFile(join(state, 'provider-catalog.json'), JSON.stringify({ ...stopped.result.catalog, facts: { ...stopped.result.catalog.facts, credential_reference_present: true } }));

    const running = await catalogJson(home, 'live');
    expect(running.result.credential_reference_basis).toBe('executor_startup');
    // Only that one fact changes: the others stay independent of it.
    expect(running.result.catalog.facts).toEqual({ ...stopped.result.catalog.facts, credential_reference_present: true });

    // A running stack of another generation says nothing about this one.
    await writeFile(join(state, 'handoff.json'), JSON.stringify(handoff('g0000000000000000')), { mode: 0o600 });
    expect((await catalogJson(home, 'live')).result.credential_reference_basis).toBe('not_resolved');
  });

  it('without an active generation fails with the next step; an unknown profile is profile_not_found', async () => {
    const home = await makeProfileHome();
    homes.push(home);
    const none = await runLexec(['stack', 'catalog', '--json'], { env: home.env });
    expect(none.exitCode).toBe(1);
    expect((JSON.parse(none.stdout) as CatalogDocument).error).toEqual({
      kind: 'user',
      code: 'no_active_generation',
      message: 'Profile "sandbox" has no active generation, so there is no catalog to show yet.',
      next_step:
        'Run `lexec stack render --profile sandbox` then `lexec stack activate --generation <id>` (or `lexec stack start --profile sandbox`, which does both on first use).',
      issues: [],
    });
    const unknown = await runLexec(['stack', 'catalog', '--profile', 'nosuch', '--json'], { env: home.env });
    expect(unknown.exitCode).toBe(1);
    expect((JSON.parse(unknown.stdout) as CatalogDocument).error?.code).toBe('profile_not_found');
  });
});
