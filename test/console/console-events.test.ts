import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLedgerClient, type LedgerClient } from '../../src/ledger/client/ledger-client.js';
import { createEventFollower, type EventFollower, type LiveMessage } from '../../src/console/console-events.js';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * The console's follower of the ledger's events (console-events.ts) against a real ledger on a
 * loopback port: it follows by long-polls — an event reaches the listeners as soon as it is
 * written, and an idle ledger is asked once per wait, not once a second — and it stops reading
 * when the last listener leaves.
 */

let ledger: TestLedger;
let actors: Actors;
let follower: EventFollower | null = null;
/** How many `GET /events` the follower has started. */
let reads = 0;

beforeEach(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger, 'watched');
  reads = 0;
});

afterEach(async () => {
  follower?.close();
  follower = null;
  await ledger.close();
});

/** A client with the approver capability whose event reads are counted. */
function countingClient(): LedgerClient {
  const client = createLedgerClient({ url: ledger.url, token: actors.approver });
  return {
    ...client,
    events: (filter) => {
      reads += 1;
      return client.events(filter);
    },
  };
}

/** Messages as a listener gets them, each waited for by a predicate. */
function listen(subject: EventFollower) {
  const messages: LiveMessage[] = [];
  const unsubscribe = subject.subscribe((message) => messages.push(message));
  return {
    unsubscribe,
    next: (wanted: (message: LiveMessage) => boolean, timeoutMs = 15_000) =>
      expect.poll(() => messages.find(wanted), { timeout: timeoutMs, interval: 20 }).toBeDefined().then(() => messages.find(wanted) as LiveMessage),
  };
}

async function requestNeedingApproval(): Promise<string> {
  const answer = await call<{ authorization: { token_id: string; status: string } }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: '2000000', units_scale: 6, currency: 'USD', purpose: 'followed' },
  });
  expect(answer.body.authorization.status).toBe('requested');
  return answer.body.authorization.token_id;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the console’s event follower', () => {
  it('delivers an event as soon as it is written, with the count of requests waiting, from a long-poll that was already waiting', async () => {
    follower = createEventFollower({ connect: () => Promise.resolve(countingClient()), waitSeconds: 30 });
    const tab = listen(follower);
    expect(await tab.next((message) => message.available)).toMatchObject({ pending_approvals: 0, events: [] });

    // Idle: after the first reads (the latest event's id, the first page), one long-poll waits
    // (30 s) — no read a second, as a poll would make.
    await expect.poll(() => reads, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    const idle = reads;
    await sleep(2_500);
    expect(reads).toBe(idle);

    const tokenId = await requestNeedingApproval();
    const arrived = await tab.next((message) => message.events.some((event) => event.type === 'approval.waiting' && event.authorization_id === tokenId));
    expect(arrived.pending_approvals).toBe(1);
    expect(arrived.events.map((event) => event.type)).toContain('authorization.requested');
  });

  it('stops reading when the last listener leaves, and a new listener is told the count as it is now', async () => {
    follower = createEventFollower({ connect: () => Promise.resolve(countingClient()), waitSeconds: 30 });
    const first = listen(follower);
    await first.next((message) => message.available);
    await expect.poll(() => reads, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);

    // The long-poll in flight is abandoned, and nothing more is read.
    first.unsubscribe();
    const left = reads;
    await sleep(1_500);
    expect(reads).toBe(left);

    // Written while nobody listened: a new tab's first count includes it.
    await requestNeedingApproval();
    const second = listen(follower);
    await second.next((message) => message.available && message.pending_approvals === 1);
  });
});
