import { Counter, Gauge, Registry } from 'prom-client';
import type { MetricsReads } from './store/metrics-reads.js';

/*
 * The ledger's Prometheus metrics (docs/metrics.md): one registry per ledger, every value read
 * from the database when a scraper asks (store/metrics-reads.ts). Amounts are micro-units; a
 * Prometheus sample is a float, exact up to 2^53 micro-units (about 9 billion USD).
 */

/** One budget's remaining amount now, as `lexec_ledger_budget_remaining_units` reports it. */
export interface BudgetRemaining {
  /** The agent's name, or the seam's own label for an installation-wide budget. */
  readonly agent: string;
  /** Which budget: `rolling_24h`, or a calendar budget's name. */
  readonly budget: string;
  /** The budget's period: `rolling_24h`, `day`, `week` or `month`. */
  readonly period: string;
  readonly remaining: bigint;
}

/** Webhook deliveries since the ledger's database began (the webhook sinks' table). */
export interface WebhookDeliveryCounts {
  readonly delivered: bigint;
  readonly failed: bigint;
}

export interface LedgerMetricsOptions {
  readonly reads: MetricsReads;
  readonly now: () => number;
  /** Whether the ledger can take requests: null when it can, or why not (`disk_full`). */
  readonly notReady: () => Promise<string | null>;
  /** Calendar and installation-wide budgets (none until they exist); the rolling 24 h cap is reported beside them. */
  readonly budgets?: (now: number) => readonly BudgetRemaining[];
  /** Webhook deliveries (zeros until webhook sinks exist). */
  readonly webhookDeliveries?: () => WebhookDeliveryCounts;
}

const NO_DELIVERIES: WebhookDeliveryCounts = { delivered: 0n, failed: 0n };

/** The ledger's metrics registry: a new one per ledger, nothing global. */
export function createLedgerMetrics(options: LedgerMetricsOptions): Registry {
  const registry = new Registry();
  const registers = [registry];
  const { reads, now } = options;
  new Gauge({
    name: 'lexec_ledger_authorizations',
    help: 'Spend authorizations by status (a requested or approved one past its expiry counts as expired).',
    labelNames: ['status'],
    registers,
    collect() {
      this.reset();
      for (const row of reads.authorizationsByStatus(now())) this.set({ status: row.status }, Number(row.count));
    },
  });
  new Counter({
    name: 'lexec_ledger_settled_units_total',
    help: 'Settled spend in micro-units (USD 1e-6), by agent and executor target: the sum of the settlement rows.',
    labelNames: ['agent', 'target'],
    registers,
    collect() {
      this.reset();
      for (const row of reads.settledUnits()) this.inc({ agent: row.agent, target: row.target }, Number(row.units));
    },
  });
  new Gauge({
    name: 'lexec_ledger_held_units',
    help: 'Held now in micro-units, by agent and executor target: requested or approved and not expired, or claimed.',
    labelNames: ['agent', 'target'],
    registers,
    collect() {
      this.reset();
      for (const row of reads.heldUnits(now())) this.set({ agent: row.agent, target: row.target }, Number(row.units));
    },
  });
  new Gauge({
    name: 'lexec_ledger_budget_remaining_units',
    help: 'What a budget has left now in micro-units: the rolling 24 h cap per agent (budget="rolling_24h"), and calendar budgets.',
    labelNames: ['agent', 'budget', 'period'],
    registers,
    collect() {
      this.reset();
      const at = now();
      for (const row of reads.rollingRemaining(at)) this.set({ agent: row.agent, budget: 'rolling_24h', period: 'rolling_24h' }, Number(row.remaining));
      for (const row of options.budgets?.(at) ?? []) this.set({ agent: row.agent, budget: row.budget, period: row.period }, Number(row.remaining));
    },
  });
  new Gauge({
    name: 'lexec_ledger_open_reconciliations',
    help: 'Reconciliation records still open (an execution whose billing is ambiguous, awaiting a human).',
    registers,
    collect() {
      this.set(Number(reads.openReconciliations()));
    },
  });
  new Gauge({
    name: 'lexec_ledger_ready',
    help: '1 when the ledger can take requests, 0 when it cannot (its disk is full).',
    registers,
    async collect() {
      this.set((await options.notReady()) === null ? 1 : 0);
    },
  });
  new Counter({
    name: 'lexec_ledger_webhook_deliveries_total',
    help: 'Webhook deliveries a sink accepted (2xx), also those whose rows the retention has since removed.',
    registers,
    collect() {
      this.reset();
      this.inc(Number((options.webhookDeliveries?.() ?? NO_DELIVERIES).delivered));
    },
  });
  new Counter({
    name: 'lexec_ledger_webhook_delivery_failures_total',
    help: 'Webhook deliveries that failed for good: retries ended (24 h after the event) or the sink was removed. A failed attempt that is retried is not counted.',
    registers,
    collect() {
      this.reset();
      this.inc(Number((options.webhookDeliveries?.() ?? NO_DELIVERIES).failed));
    },
  });
  return registry;
}
