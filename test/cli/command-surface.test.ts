import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../support/cli.js';

interface ManifestFlag {
  name: string;
  type: string;
  required?: boolean;
  options?: string[];
  default?: unknown;
}

/**
 * Scripts depend on command names and flags. This freezes them as the build's manifest records
 * them: changing the surface means changing this test, on purpose.
 */
describe('command surface', () => {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'oclif.manifest.json'), 'utf8')) as {
    commands: Record<string, { flags: Record<string, ManifestFlag> }>;
  };
  const surface = Object.fromEntries(
    Object.entries(manifest.commands)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, command]) => [
        id,
        Object.values(command.flags)
          .map((flag) => ({ name: flag.name, type: flag.type, required: flag.required ?? false, options: flag.options, default: flag.default }))
          .sort((a, b) => a.name.localeCompare(b.name)),
      ]),
  );

  const global = [
    { name: 'color', type: 'option', required: false, options: ['auto', 'always', 'never'], default: 'auto' },
    { name: 'json', type: 'boolean', required: false, options: undefined, default: undefined },
  ];

  it('lists exactly these commands and flags', () => {
    expect(surface).toEqual({
      'executor:validate-config': [
        global[0],
        { name: 'config', type: 'option', required: true, options: undefined, default: undefined },
        global[1],
      ],
      'ledger:serve': [
        global[0],
        { name: 'config', type: 'option', required: false, options: undefined, default: undefined },
        global[1],
        { name: 'version', type: 'boolean', required: false, options: undefined, default: undefined },
      ],
      version: global,
    });
  });
});
