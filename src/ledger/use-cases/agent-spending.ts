import type { LedgerSpending } from '../wire/answers.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { ROLLING_WINDOW_MS, type SpendPolicy } from '../authorization-rules.js';
import type { SuspensionStore } from '../store/suspension-store.js';
import { budgetStandings, standingView, type BudgetContext } from './budget-standing.js';

/**
 * An agent's own standing against its daily cap, read in one transaction: settled amounts
 * and live holds in the rolling window the cap uses (exactly what `requestAuthorization`
 * counts), and what is left. `remaining_units` never goes below zero. `agent_status` says
 * whether an operator suspended it (then every request is refused, whatever is left). `budgets`
 * is each calendar budget's standing in its current period, read in the same transaction.
 */
export function agentSpending(context: BudgetContext & { readonly suspensions: SuspensionStore }, agentId: string, policy: SpendPolicy): Omit<LedgerSpending, 'policy'> {
  const { store, now, suspensions } = context;
  return store.immediate(() => {
    const at = now();
    const { spent, held } = store.windowUnits({ agentId, now: at, since: at - ROLLING_WINDOW_MS });
    const left = policy.daily_cap_units - spent - held;
    return {
      agent_id: agentId,
      window: 'rolling_24h' as const,
      spent_units: spent,
      held_units: held,
      remaining_units: left > 0n ? left : 0n,
      units_scale: UNITS_SCALE,
      currency: 'USD',
      as_of: new Date(at).toISOString(),
      agent_status: suspensions.agent(agentId)?.status ?? null,
      // Every calendar budget over the agent, its own and the installation's (docs/ledger.md "Budgets").
      budgets: budgetStandings(context, agentId, policy, at).map(standingView),
      time_zone: context.calendar.timeZone,
    };
  });
}
