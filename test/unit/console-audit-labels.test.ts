import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { AUDIT_ACTIONS } from '../../src/ledger/store/audit-store.js';

/*
 * The Audit view names every action the ledger audits in words (assets/audit-view.js runs in the
 * browser, so its table is read here as text): an action added to the ledger without a label
 * would show as its bare code.
 */

describe('the Audit view\'s action labels', () => {
  it('has a label for every audited action, and none for an action the ledger does not have', () => {
    const source = readFileSync(join(PACKAGE_ROOT, 'src', 'console', 'assets', 'audit-view.js'), 'utf8');
    const table = /const ACTION_LABELS = \{([^}]*)\};/.exec(source)?.[1] ?? '';
    const labelled = [...table.matchAll(/^\s*([a-z_]+): '([^']+)',$/gm)].map((match) => match[1]);
    expect([...labelled].sort()).toEqual([...AUDIT_ACTIONS].sort());
  });
});
