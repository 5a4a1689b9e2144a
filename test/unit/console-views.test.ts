import { describe, expect, it } from 'vitest';
import { auditEventView, executionDetailView } from '../../src/console/console-views.js';
import { atUnitsScale } from '../../src/domain/money.js';
import type { ExecutionDetail } from '../../src/executor/client/executor-client.js';

describe('exact amounts at their own scale', () => {
  it('converts an amount at any scale up to 6 to micro-units exactly, and a finer one only when it has no digits past the sixth place', () => {
    expect(atUnitsScale(300n, 2)).toBe(3_000_000n);
    expect(atUnitsScale(3_000n, 6)).toBe(3_000n);
    expect(atUnitsScale(7n, 0)).toBe(7_000_000n);
    expect(atUnitsScale(922_337_203_685_477n, 2)).toBe(9_223_372_036_854_770_000n);
    expect(atUnitsScale(12_000n, 9)).toBe(12n);
    expect(atUnitsScale(12_345n, 9)).toBeNull();
    expect(atUnitsScale(1n, -1)).toBeNull();
  });
});

describe('the console execution detail', () => {
  const detail = (attempt: { exact_amount: bigint | null; scale: number | null }) =>
    ({
      execution_id: `exe_${'a'.repeat(32)}`,
      state: 'succeeded',
      phase: null,
      state_reason: null,
      recommended_action: { code: 'none', description: 'Done.' },
      target_id: 'lexec:target:v1:flux-schnell',
      input: { prompt: 'a fox', image_count: 1, image_size: 'square_hd' },
      authorization: { spend_auth_token_id: '0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10', agent_id: 'agt_1', held_units: 9_000n, currency: 'USD' },
      provider_attempts: [
        { attempt_id: 'att_1', attempt_number: 1, state: 'completed', request_id: 'req_1', checkpointed: true, deadline_at: null, currency: 'USD', ...attempt },
      ],
      receipt: null,
      timeline: { admitted_at: null, submitted_at: null, checkpointed_at: null, stored_at: null, settled_at: null, released_at: null },
    }) as unknown as ExecutionDetail;

  it('shows a converted v4.3 attempt of 300 cents (scale 2) as 3.000000 USD, and a new one (scale 6) as it is', () => {
    expect(executionDetailView(detail({ exact_amount: 300n, scale: 2 }), [], new Map()).provider_attempts[0]?.amount).toEqual({ units: '3000000', display: '3.000000 USD' });
    expect(executionDetailView(detail({ exact_amount: 3_000n, scale: 6 }), [], new Map()).provider_attempts[0]?.amount).toEqual({ units: '3000', display: '0.003000 USD' });
    expect(executionDetailView(detail({ exact_amount: null, scale: null }), [], new Map()).provider_attempts[0]?.amount).toBeNull();
  });

  it('names the agent when the ledger lists it, and keeps its id alone when it does not', () => {
    const shown = executionDetailView(detail({ exact_amount: null, scale: null }), [], new Map([['agt_1', 'nightly-batch']]));
    expect(shown).toMatchObject({ agent_id: 'agt_1', agent_name: 'nightly-batch' });
    expect(executionDetailView(detail({ exact_amount: null, scale: null }), [], new Map()).agent_name).toBeNull();
  });
});

describe('the console Audit view', () => {
  const event = {
    audit_id: '7',
    at: '2026-11-25T10:00:00.000Z',
    actor_kind: 'approver',
    actor_credential_id: 'cred_1',
    actor_name: null,
    action: 'authorization_approved',
    agent_id: 'agt_1',
    subject_id: '0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10',
    before: { status: 'requested' },
    after: { status: 'approved', amount_units: '2000000', currency: 'USD' },
    reason: 'launch poster',
  };

  it('names the agent, says what changed in one line, and keeps a place for the person\'s name', () => {
    // Every field of the event but before/after, which become one line.
    const picked = Object.fromEntries(Object.entries(event).filter(([key]) => key !== 'before' && key !== 'after'));
    expect(auditEventView(event, new Map([['agt_1', 'bot']]))).toEqual({ ...picked, agent_name: 'bot', change: 'status requested → approved; amount_units 2.000000 USD' });
    expect(auditEventView({ ...event, agent_id: null }, new Map()).agent_name).toBeNull();
    expect(auditEventView(event, new Map()).agent_name).toBeNull();
  });
});
