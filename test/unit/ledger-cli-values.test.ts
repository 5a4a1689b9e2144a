import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentIdFlag, amountUnitsFlag, sinceFlag, tokenIdArgument, versionFlag, wholeNumberFlag } from '../../src/cli/flag-values.js';
import { auditActionWords, auditActor, auditChange } from '../../src/ledger/client/ledger-audit.js';
import { decimalUnits, formatUnits } from '../../src/domain/money.js';
import { plain } from '../../src/terminal/plain-text.js';
import { UsageError } from '../../src/errors.js';
import { STARTER_POLICY, policyFileDocument } from '../../src/ledger/policy-file.js';
import { spendPolicySchema } from '../../src/ledger/ledger-config.js';
import { ledgerBaseUrl } from '../../src/stack-client/connect-ledger.js';
import { writeNewFile } from '../../src/storage/write-new-file.js';

function usageCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof UsageError) return error.code;
    throw error;
  }
  return undefined;
}

describe('amountUnitsFlag', () => {
  it('reads digits as an exact bigint, beyond the safe-integer range too', () => {
    expect(amountUnitsFlag('2500000')).toBe(2_500_000n);
    expect(amountUnitsFlag('9007199254740993')).toBe(9_007_199_254_740_993n);
    expect(amountUnitsFlag('0010')).toBe(10n);
  });

  it.each(['1.5', '-1', '+1', '0', '1e6', '0x10', '', ' 1', '1_000', '9223372036854775808', '١٢'])('refuses %j naming the flag', (value) => {
    expect(usageCode(() => amountUnitsFlag(value))).toBe('invalid_flag_value');
    expect(() => amountUnitsFlag(value)).toThrow(/^--amount-units must be a whole number of micro-units/);
  });
});

describe('versionFlag', () => {
  it('reads a version as an exact bigint from 1', () => {
    expect(versionFlag('1', '--expect-version')).toBe(1n);
    expect(versionFlag('9223372036854775807', '--expect-version')).toBe(9_223_372_036_854_775_807n);
    expect(versionFlag('007', '--expect-version')).toBe(7n);
  });

  it.each(['0', '-1', '1.5', '1e3', '', ' 1', 'abc', '9223372036854775808'])('refuses %j naming the flag', (value) => {
    expect(usageCode(() => versionFlag(value, '--expect-version'))).toBe('invalid_flag_value');
    expect(() => versionFlag(value, '--expect-version')).toThrow(/^--expect-version must be a version/);
  });
});

describe('other flag values', () => {
  it('wholeNumberFlag keeps to its range', () => {
    expect(wholeNumberFlag('500', '--limit', 1, 500)).toBe(500);
    for (const value of ['0', '501', '1.0', '-1', 'ten']) expect(usageCode(() => wholeNumberFlag(value, '--limit', 1, 500))).toBe('invalid_flag_value');
  });

  it('agent ids and token ids have the ledger’s shapes', () => {
    expect(agentIdFlag('agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10')).toBe('agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10');
    expect(usageCode(() => agentIdFlag('bot'))).toBe('invalid_flag_value');
    expect(tokenIdArgument('0B7E6C1A-2F4D-4C8E-9A51-3D2F8E7C6B10')).toBe('0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10');
    expect(usageCode(() => tokenIdArgument('../agents'))).toBe('invalid_argument');
  });
});

describe('ledgerBaseUrl', () => {
  it('accepts http on loopback and https anywhere, without a trailing slash', () => {
    expect(ledgerBaseUrl('http://127.0.0.1:7400/')).toBe('http://127.0.0.1:7400');
    expect(ledgerBaseUrl('http://localhost:7400')).toBe('http://localhost:7400');
    expect(ledgerBaseUrl('http://[::1]:7400')).toBe('http://[::1]:7400');
    expect(ledgerBaseUrl('https://ledger.example.com/lexec/')).toBe('https://ledger.example.com/lexec');
  });

  it.each(['ledger:7400', 'ftp://127.0.0.1', 'http://ledger.example.com', 'http://user:pw@127.0.0.1:7400', 'http://127.0.0.1:7400/?x=1', 'http://127.0.0.1#f'])(
    'refuses %j without repeating it',
    (value) => {
      expect(usageCode(() => ledgerBaseUrl(value))).toBe('ledger_url_invalid');
      expect(() => ledgerBaseUrl(value)).not.toThrow(value);
    },
  );
});

describe('formatUnits and plain', () => {
  it('formats micro-units exactly', () => {
    expect(formatUnits(0n, 'USD')).toBe('0.000000 USD');
    expect(formatUnits(1n, 'USD')).toBe('0.000001 USD');
    expect(formatUnits(2_500_000n, 'USD')).toBe('2.500000 USD');
    expect(formatUnits(9_223_372_036_854_775_807n, 'USD')).toBe('9223372036854.775807 USD');
    expect(formatUnits(-1_500_000n, 'USD')).toBe('-1.500000 USD');
    // Without the currency: a CSV's amount column.
    expect(decimalUnits(2_500_000n)).toBe('2.500000');
    expect(decimalUnits(-1n)).toBe('-0.000001');
  });

  it('removes control characters from text that came from the ledger', () => {
    expect(plain('poster\u001b[31m draft\u0007\u009b')).toBe('poster[31m draft');
  });
});

describe('sinceFlag', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');

  it('reads a duration back from now, or an ISO 8601 time', () => {
    expect(sinceFlag('30s', now)).toBe(now - 30_000);
    expect(sinceFlag('2h', now)).toBe(now - 7_200_000);
    expect(sinceFlag('7d', now)).toBe(now - 7 * 86_400_000);
    expect(sinceFlag('2026-11-25', now)).toBe(Date.parse('2026-11-25'));
    expect(sinceFlag('2026-11-25T10:00:00+01:00', now)).toBe(Date.parse('2026-11-25T09:00:00Z'));
  });

  it.each(['garbage', '2h ago', '-2h', '1w', '2026-13-45', '25/11/2026', ''])('refuses %j naming the flag, with it as the field at fault', (value) => {
    expect(usageCode(() => sinceFlag(value, now))).toBe('invalid_flag_value');
    expect(() => sinceFlag(value, now)).toThrow(/^--since must be a duration back from now/);
    try {
      sinceFlag(value, now);
    } catch (error) {
      expect((error as UsageError).issues.map((issue) => issue.path)).toEqual(['--since']);
    }
  });
});

describe('an audit event in a few words', () => {
  it('says each field that changed before → after, amounts in their currency, a field on one side alone with its value', () => {
    const policy = (version: string, cap: string, perMinute: string | null) => ({ version, source: 'operator', per_authorization_cap_units: cap, max_requests_per_minute: perMinute });
    expect(auditChange({ before: policy('3', '5000000', null), after: policy('4', '2000000', '30') })).toBe(
      'version 3 → 4; per_authorization_cap_units 5.000000 USD → 2.000000 USD; max_requests_per_minute none → 30',
    );
    expect(auditChange({ before: { status: 'requested' }, after: { status: 'approved', amount_units: '2500', currency: 'USD' } })).toBe('status requested → approved; amount_units 0.002500 USD');
    expect(auditChange({ before: { status: 'suspended', suspended_at: null }, after: { status: 'active' } })).toBe('status suspended → active; suspended_at none');
    expect(auditChange({ before: null, after: null })).toBe('');
  });

  it('names issue 28\'s actions in words; any other action as the ledger names it', () => {
    expect(['webhook_added', 'webhook_removed', 'budget_changed'].map(auditActionWords)).toEqual(['webhook sink added', 'webhook sink removed', 'installation budget changed']);
    expect(['agent_suspended', 'some_future_action', 'toString', '__proto__'].map(auditActionWords)).toEqual(['agent_suspended', 'some_future_action', 'toString', '__proto__']);
    expect(auditChange({ before: { status: 'active' }, after: { status: 'removed', failed_deliveries: 2 } })).toBe('status active → removed; failed_deliveries 2');
  });

  it('names who acted: the credential, the ledger itself, a person once credentials carry names', () => {
    expect(auditActor({ actor_kind: 'approver', actor_credential_id: 'cred_1', actor_name: null })).toBe('approver cred_1');
    expect(auditActor({ actor_kind: 'ledger', actor_credential_id: null, actor_name: null })).toBe('ledger');
    expect(auditActor({ actor_kind: 'approver', actor_credential_id: 'cred_1', actor_name: 'Ada' })).toBe('Ada (approver cred_1)');
  });
});

describe('policy files', () => {
  it('the starter policy is a valid policy file', () => {
    expect(spendPolicySchema.safeParse(policyFileDocument(STARTER_POLICY)).success).toBe(true);
  });
});

describe('writeNewFile', () => {
  it('creates a file with the mode asked for, never replaces one, and leaves no temporary file behind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lexec-new-file-'));
    try {
      const path = join(dir, 'secret');
      expect(await writeNewFile(path, 'first\n', 0o600)).toBe('created');
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect(await writeNewFile(path, 'second\n', 0o600)).toBe('exists');
      expect(await readFile(path, 'utf8')).toBe('first\n');
      await writeFile(join(dir, 'other'), 'x');
      expect((await readdir(dir)).sort()).toEqual(['other', 'secret']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
