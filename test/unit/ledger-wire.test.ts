import { describe, expect, it } from 'vitest';
import { agentSchema, authorizationAnswerSchema, resolutionAnswerSchema, spendingAnswerSchema } from '../../src/ledger/wire/answers.js';
import { call, setUpActors, startTestLedger } from '../support/ledger.js';

/* The ledger's answers, defined once (src/ledger/wire/answers.ts), as the real ledger writes them. */

describe('ledger wire shapes', () => {
  it('every answer the ledger writes parses with the one definition; amounts are bigint', async () => {
    const ledger = await startTestLedger();
    try {
      const actors = await setUpActors(ledger);
      const requested = await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '250000', units_scale: 6, currency: 'USD' } });
      const { authorization } = authorizationAnswerSchema.parse(requested.body);
      expect(authorization.amount_units).toBe(250_000n);
      const claimed = await call(ledger.url, 'POST', `/executor/authorizations/${authorization.token_id}/claim`, { token: actors.executor, body: { execution_id: 'exe_1' } });
      expect(resolutionAnswerSchema.parse(claimed.body).authorization).toMatchObject({ held_units: 250_000n, status: 'claimed', execution_id: 'exe_1' });
      const spending = await call(ledger.url, 'GET', '/agent/spending', { token: actors.agent });
      expect(spendingAnswerSchema.parse(spending.body).spending).toMatchObject({ held_units: 250_000n, units_scale: 6 });
    } finally {
      await ledger.close();
    }
  });

  it('reads an older ledger\'s agent and authorization, without the suspension fields, as not suspended and not cancelled', () => {
    const agent = agentSchema.parse({ agent_id: 'agt_1', name: 'bot', status: 'active', created_at: '2026-11-25T00:00:00.000Z' });
    expect(agent).toMatchObject({ suspended_at: null, suspension_reason: null });
    const authorization = {
      token_id: 't', account_id: 'a', agent_id: 'g', status: 'approved', amount_units: '1', units_scale: 6, currency: 'USD', amount_cents: '1', purpose: null,
      execution_id: null, decided_by: 'policy', decision_reason: null, created_at: '2026-11-25T00:00:00.000Z', decided_at: null, expires_at: '2026-11-25T01:00:00.000Z',
      settlement: null, release: null,
    };
    expect(authorizationAnswerSchema.parse({ authorization }).authorization.cancellation).toBeNull();
  });

  it('refuses an amount sent as a JSON number or a fraction: it may already have lost precision', () => {
    const resolution = { token_id: 't', account_id: 'a', agent_id: 'g', status: 'claimed', units_scale: 6, currency: 'USD', expires_at: '2026-11-25T00:00:00.000Z', execution_id: null };
    expect(resolutionAnswerSchema.safeParse({ authorization: { ...resolution, held_units: '9007199254740993' } }).data?.authorization.held_units).toBe(9_007_199_254_740_993n);
    for (const held of [JSON.parse('9007199254740993') as number, 5, '12.5', '-1', '1e6']) {
      expect(resolutionAnswerSchema.safeParse({ authorization: { ...resolution, held_units: held } }).success, String(held)).toBe(false);
    }
  });
});
