import type { Facts } from './facts.ts';
import type { LedgerEventRow } from './read-databases.ts';
import type { Fail } from './report.ts';
import { units } from './values.ts';

/*
 * The ledger's events outbox (its migration "spend requests name what they pay for; the ledger
 * keeps its events"): every change the ledger records since the outbox began (the migration's
 * applied_at) has exactly one event, written in the change's own transaction — so at the very
 * time the change records, naming its authorization (or record, or agent) — and no such event
 * stands without its change (`change_has_one_event`, `event_has_change`). The changes judged:
 * a request made; a decision by a credential (approved or denied; the policy's approval is the
 * request's own event); an expiry and a cancellation (by `closed_at`); a settlement (its amount
 * the amount settled); a release (its reason); a reconciliation record opened (its reason) and
 * resolved (its resolution); an agent's suspension (the latest of its suspension events agrees
 * with its status). Known from the spec and the migration, not from the code that writes them.
 */

const DECIDED_BY_POLICY = 'policy';

/** The types whose events each stand for one change of one authorization. */
const ONCE_PER_AUTHORIZATION = ['authorization.requested', 'authorization.approved', 'authorization.denied', 'authorization.expired', 'authorization.cancelled', 'authorization.settled', 'authorization.released'];

function detailsOf(event: LedgerEventRow): Record<string, unknown> {
  try {
    return JSON.parse(event.details) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export function checkEvents(facts: Facts, fail: Fail): void {
  const { outbox } = facts;
  // A ledger from before the outbox: nothing to check.
  if (outbox === null) return;
  const { since, events } = outbox;
  const key = (type: string, subject: string | null) => `${type} ${subject ?? ''}`;
  const bySubject = new Map<string, LedgerEventRow[]>();
  for (const event of events) {
    const recordId = detailsOf(event).record_id;
    const subject = event.type.startsWith('reconciliation.') ? (typeof recordId === 'string' ? recordId : null) : event.token_id;
    const k = key(event.type, subject);
    bySubject.set(k, [...(bySubject.get(k) ?? []), event]);
  }
  const eventsOf = (type: string, subject: string) => bySubject.get(key(type, subject)) ?? [];
  /** Which events some change accounts for: any left over is an event without its change. */
  const accounted = new Set<LedgerEventRow>();

  /** The change of `subject` made at `at` has exactly one `type` event, at that time, and `matches` accepts it. */
  const oneEvent = (type: string, subject: string, at: bigint, what: string, matches: (event: LedgerEventRow) => string | null = () => null) => {
    const found = eventsOf(type, subject);
    for (const event of found) accounted.add(event);
    if (found.length !== 1) {
      fail('change_has_one_event', subject, `${what}: ${found.length} ${type} events`);
      return;
    }
    const [event] = found;
    if (event === undefined) return;
    if (event.at !== at) fail('change_has_one_event', subject, `${what}: its ${type} event is at ${String(event.at)}, the change at ${String(at)}`);
    const mismatch = matches(event);
    if (mismatch !== null) fail('change_has_one_event', subject, `${what}: its ${type} event ${mismatch}`);
  };
  const sameAmount = (expected: unknown) => (event: LedgerEventRow) =>
    units(event.amount_units) === units(expected) ? null : `says ${String(event.amount_units)}, the ledger ${String(expected)}`;
  const detail = (name: string, expected: string | null) => (event: LedgerEventRow) =>
    detailsOf(event)[name] === expected ? null : `says ${name} ${String(detailsOf(event)[name])}, the ledger ${String(expected)}`;

  for (const authorization of facts.authorizations) {
    const token = authorization.token_id;
    if (authorization.created_at >= since) oneEvent('authorization.requested', token, authorization.created_at, 'requested', sameAmount(authorization.amount_units));
    const { decided_by: decidedBy, decided_at: decidedAt, closed_at: closedAt } = authorization;
    if (decidedBy !== null && decidedBy !== DECIDED_BY_POLICY && decidedAt !== null && decidedAt >= since) {
      const type = authorization.status === 'denied' ? 'authorization.denied' : 'authorization.approved';
      oneEvent(type, token, decidedAt, `decided by ${decidedBy}`);
    }
    if ((authorization.status === 'expired' || authorization.status === 'cancelled') && closedAt !== null && closedAt >= since) {
      oneEvent(`authorization.${authorization.status}`, token, closedAt, authorization.status);
    }
  }
  for (const settlement of facts.settlements) {
    if (settlement.created_at >= since) oneEvent('authorization.settled', settlement.token_id, settlement.created_at, 'settled', sameAmount(settlement.amount_units));
  }
  for (const release of facts.releases) {
    if (release.created_at >= since) oneEvent('authorization.released', release.token_id, release.created_at, 'released', detail('reason', release.reason));
  }
  for (const record of facts.records) {
    if (record.created_at >= since) oneEvent('reconciliation.opened', record.record_id, record.created_at, 'record opened', detail('reason', record.reason));
    if (record.status === 'resolved' && record.resolved_at !== null && record.resolved_at >= since) {
      oneEvent('reconciliation.resolved', record.record_id, record.resolved_at, 'record resolved', detail('resolution', record.resolution));
    }
  }
  for (const agent of facts.agents) {
    const switches = events.filter((event) => event.agent_id === agent.agent_id && (event.type === 'agent.suspended' || event.type === 'agent.resumed'));
    for (const event of switches) accounted.add(event);
    const latest = switches.at(-1);
    if (agent.status === 'suspended' && agent.suspended_at !== null && agent.suspended_at >= since && (latest?.type !== 'agent.suspended' || latest.at !== agent.suspended_at)) {
      fail('change_has_one_event', agent.agent_id, `suspended at ${String(agent.suspended_at)}: the latest suspension event is ${latest === undefined ? 'none' : `${latest.type} at ${String(latest.at)}`}`);
    }
    if (agent.status === 'active' && latest?.type === 'agent.suspended') fail('event_has_change', agent.agent_id, `event ${String(latest.event_id)} (agent.suspended): the agent is active and no agent.resumed follows`);
  }

  // The reverse: an event of these types that no change accounts for (its change is not in the ledger).
  const judged = new Set([...ONCE_PER_AUTHORIZATION, 'reconciliation.opened', 'reconciliation.resolved']);
  for (const event of events) {
    if (!judged.has(event.type) || accounted.has(event) || event.at < since) continue;
    fail('event_has_change', event.token_id ?? String(event.event_id), `event ${String(event.event_id)} (${event.type}): the ledger holds no such change`);
  }
}
