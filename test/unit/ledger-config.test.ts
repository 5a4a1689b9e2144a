import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerConfigSchema } from '../../src/ledger/ledger-config.js';
import { toFieldIssues } from '../../src/config/zod-issues.js';
import { TEMPLATES_DIR } from '../support/config-fixtures.js';

const example = () => JSON.parse(readFileSync(join(TEMPLATES_DIR, 'ledger.example.json'), 'utf8')) as Record<string, unknown>;
const issues = (document: unknown) => {
  const parsed = ledgerConfigSchema.safeParse(document, { reportInput: true });
  return parsed.success ? [] : toFieldIssues(parsed.error.issues);
};

describe('ledger configuration', () => {
  it('the shipped example validates with exact amounts and defaults', () => {
    const parsed = ledgerConfigSchema.parse(example());
    expect(parsed.default_policy.daily_cap_units).toBe(20_000_000n);
    expect(parsed.contract_level).toBe('v4.5');
    expect(parsed.http.allow_non_loopback).toBe(false);
  });

  it('reports every problem with its path', () => {
    const config = example();
    config.database_path = 'ledger.db';
    config.contract_level = 'v5';
    config.surprise = 1;
    (config.default_policy as Record<string, unknown>).daily_cap_units = 1.5;
    (config.http as Record<string, unknown>).host = '0.0.0.0';
    expect(issues(config).map((issue) => issue.path).sort()).toEqual([
      'contract_level',
      'database_path',
      'default_policy.daily_cap_units',
      'http.host',
      'http.tls',
      'surprise',
    ]);
  });

  it('refuses a per-authorization cap above the daily cap', () => {
    const config = example();
    (config.default_policy as Record<string, unknown>).per_authorization_cap_units = '30000000';
    expect(issues(config)).toEqual([{ path: 'default_policy.per_authorization_cap_units', message: 'must not exceed daily_cap_units' }]);
  });
});
