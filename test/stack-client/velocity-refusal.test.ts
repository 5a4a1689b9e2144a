import { describe, expect, it } from 'vitest';
import { agentSuspended, velocityExceeded } from '../../src/agent/agent-service.js';
import { errorResult } from '../../src/agent/mcp-server.js';
import { UserError } from '../../src/errors.js';
import type { OfferedTarget } from '../../src/executor/client/executor-client.js';
import { createLedgerClient } from '../../src/ledger/client/ledger-client.js';
import { obtainAuthorization } from '../../src/stack-client/paid-job/job-authorization.js';
import { quoteJob } from '../../src/stack-client/paid-job/quote.js';
import { call, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';

/*
 * How the stack's clients take the runaway-loop breaker (issue 27 item 3): a velocity refusal
 * reaches the client's own words once, with the ledger's Retry-After, and is never retried into;
 * the breaker's suspension reaches them as the breaker's. A real ledger app on a real SQLite file
 * and the real ledger client; the agent's MCP words as its error results carry them. (`lexec run`'s
 * words on a real stack: test/run/policy-refusal.test.ts.)
 */

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

const offered: OfferedTarget = {
  target_id: 'lexec:target:v1:flux-schnell',
  label: 'Flux',
  provider: 'fal',
  model: 'fal-ai/flux/schnell',
  presets: ['square_hd'],
  default_image_size: 'square_hd',
  max_image_count: 4,
  pricing: { currency: 'USD', unit: 'image', version: '2026-11-01', by_image_size: { square_hd: { numerator: '3', denominator: '1000' } } },
};
const quote = quoteJob(offered, 'square_hd', 1);

async function setPolicy(velocity: Record<string, number>) {
  const body = { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD', ...velocity };
  expect((await call(ledger.url, 'PUT', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken, body })).status).toBe(200);
}

let jobs = 0;

/** `obtainAuthorization` as a client calls it, for a new job each time (another prompt: another key), recording which of its words it was given. */
async function obtain() {
  const said: string[] = [];
  const client = createLedgerClient({ url: ledger.url, token: actors.agent });
  jobs += 1;
  try {
    return { authorization: (await obtainAuthorization(client, quote, {
      existingId: undefined,
      client: 'test',
      prompt: `job ${jobs}`,
      insufficient: () => new UserError('insufficient', 'insufficient', { nextStep: '-' }),
      suspended: (agentId, by) => {
        said.push(`suspended ${String(agentId)} ${by}`);
        return agentSuspended(agentId, null, by);
      },
      tooFast: (seconds, limit) => {
        said.push(`too fast ${String(limit)}`);
        return velocityExceeded(seconds, limit);
      },
    })).authorization, said };
  } catch (error) {
    return { error: error as UserError, said };
  }
}

const requests = () => Number(ledger.query<{ n: bigint }>('SELECT COUNT(*) AS n FROM agent_requests')[0]?.n);

describe('a velocity refusal at the stack client', () => {
  it('is worded once with the ledger\'s Retry-After (never retried), then the breaker\'s suspension as the breaker\'s', async () => {
    await setPolicy({ max_requests_per_minute: 1, suspend_after_velocity_refusals: 2 });
    expect((await obtain()).authorization?.status).toBe('approved');

    const refused = await obtain();
    expect(refused.said).toEqual(['too fast max_requests_per_minute']);
    expect(refused.error?.code).toBe('velocity_exceeded');
    const wait = /Wait (\d+) seconds before calling generate_images again, and do not call it in a loop/.exec(refused.error?.nextStep ?? '');
    expect(Number(wait?.[1])).toBeGreaterThanOrEqual(1);
    expect(Number(wait?.[1])).toBeLessThanOrEqual(60);
    // One request per call: the client did not retry into the limit.
    expect(requests()).toBe(2);

    const tripped = await obtain();
    expect(tripped.said).toEqual([`suspended ${actors.agentId} velocity_breaker`]);
    expect(tripped.error?.code).toBe('agent_suspended');
    expect(tripped.error?.message).toContain('suspended this agent automatically');
    expect(tripped.error?.nextStep).toContain(`lexec ledger agents resume --agent-id ${actors.agentId}`);
  });

  it('an operator\'s suspension is still worded as the operator\'s', async () => {
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/suspend`, { token: ledger.adminToken, body: {} })).status).toBe(200);
    const refused = await obtain();
    expect(refused.said).toEqual([`suspended ${actors.agentId} operator`]);
    expect(refused.error?.message).toBe('An operator suspended this agent: the stack refuses its spend requests; nothing was requested or spent.');
  });
});

describe('the MCP error result of a velocity refusal', () => {
  it('tells the agent how many seconds to wait and not to loop, in text and in _meta', () => {
    const result = errorResult(velocityExceeded(42, 'max_requests_per_minute'));
    expect(result.isError).toBe(true);
    expect(result._meta['lexec/error']).toMatchObject({
      code: 'velocity_exceeded',
      message: 'The stack refused this spend request: this agent sent more spend requests than its velocity limit (max_requests_per_minute) allows. Nothing was requested or spent.',
    });
    const text = JSON.stringify(result.content);
    expect(text).toContain('Wait 42 seconds before calling generate_images again, and do not call it in a loop meanwhile');
    expect(text).toContain('lexec ledger policy set');
  });
});
