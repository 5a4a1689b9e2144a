import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuildInfo } from '../../src/build-info.js';
import { renderGeneration } from '../../src/launcher/generations/render-generation.js';
import { profilePaths } from '../../src/launcher/home/stack-home.js';
import { parseProfile } from '../../src/launcher/profiles/profile-store.js';
import { loadLedgerConfig } from '../../src/ledger/ledger-config.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { exampleTable, sandboxWithLedgerSetting, toToml } from '../support/example-profiles.js';

/*
 * The installation's time zone (docs/ledger.md "Budgets", docs/stack.md): `[ledger] time_zone` in
 * a profile, rendered into the ledger's `time_zone` only when set (UTC by default); an unknown zone
 * is refused with its field path by the profile's validation and by the ledger at start.
 */

const BUILD: BuildInfo = { product: 'lexec', product_version: 'v0.3.0', contract_version: 'v4.5', commit: 'a'.repeat(40), build_kind: 'development' };

const profileIssues = (zone: unknown) => sandboxWithLedgerSetting('time_zone', zone);

let dir: string | null = null;
afterEach(async () => {
  if (dir !== null) await removeDir(dir);
  dir = null;
});

describe('[ledger] time_zone', () => {
  it('renders a known zone into the ledger configuration, and nothing when the profile sets none', async () => {
    const { profile } = await profileIssues('America/New_York');
    if (profile === null) throw new Error('expected the profile to parse');
    const rendered = renderGeneration({ profile, paths: profilePaths('/home/operator/.lexec', 'sandbox'), build: BUILD, now: new Date('2026-11-01T00:00:00Z') });
    expect(JSON.parse(rendered.files['ledger.json'] ?? '')).toMatchObject({ time_zone: 'America/New_York' });
    const plain = await parseProfile(toToml(exampleTable('sandbox')), 'profile.toml');
    const unset = renderGeneration({ profile: plain, paths: profilePaths('/home/operator/.lexec', 'sandbox'), build: BUILD, now: new Date('2026-11-01T00:00:00Z') });
    expect(JSON.parse(unset.files['ledger.json'] ?? '')).not.toHaveProperty('time_zone');
  });

  it('refuses an unknown zone or a non-string with the path ledger.time_zone', async () => {
    for (const zone of ['Mars/Olympus_Mons', 42]) {
      const { issues } = await profileIssues(zone);
      expect(issues.map((issue) => issue.path)).toEqual(['ledger.time_zone']);
      expect(issues[0]?.message).toMatch(/IANA time zone/);
    }
  });

  it('is refused by the ledger at start when its own configuration names an unknown zone', async () => {
    dir = await makeTempDir('lexec-ledger-zone-');
    const path = join(dir, 'ledger.json');
    const config = {
      schema_version: 1,
      http: { host: '127.0.0.1', port: 7400 },
      database_path: join(dir, 'ledger.db'),
      admin_capability_path: join(dir, 'admin.capability'),
      default_policy: { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' },
      time_zone: 'Europe/Atlantis',
    };
    await writeFile(path, JSON.stringify(config));
    await expect(loadLedgerConfig(path)).rejects.toMatchObject({ code: 'config_invalid', issues: [{ path: 'time_zone' }] });
    await writeFile(path, JSON.stringify({ ...config, time_zone: undefined }));
    expect((await loadLedgerConfig(path)).time_zone).toBe('UTC');
  });
});
