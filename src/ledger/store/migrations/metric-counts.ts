import type { Migration } from '../../../storage/open-database.js';

export const METRIC_COUNTS_MIGRATIONS: readonly Migration[] = [
  {
    version: 18,
    name: 'what the metrics count, kept as the rows change',
    // docs/metrics.md, docs/decisions.md "A scrape reads kept counts, not the history":
    // `GET /metrics` counted the authorizations by status, summed every settlement by agent and
    // target, and counted the webhook deliveries by sink and status — each a read of the whole
    // history, on the request thread, at every scrape: at a million settled authorizations a
    // scrape held the ledger's requests up for about 1.3 s. Now three small tables hold those
    // figures, kept in the transaction of each change (a crash keeps the change and its count
    // together) and filled here from the rows. The rows stay the record: the invariant checker
    // holds each count to them (docs/reliability.md). The tables have no CHECK on purpose: a count
    // must never refuse the change it counts (a settlement above all).
    //
    // - Authorizations: only the closed statuses are counted (settled, released, denied, expired,
    //   cancelled), by triggers when a row enters one — once in its life, at its close — so a
    //   request's other transitions pay nothing. The open ones (requested, approved, claimed) are
    //   few at any time (the expiry sweep closes what nobody claims) and the metrics count them
    //   from the status index, reporting a requested or approved one past its expiry as expired,
    //   as the ledger answers it.
    // - Settled totals, by agent and target ('' for none): a trigger adds each settlement. A
    //   settlement is never changed or deleted (settlements_are_final, settlements_are_kept) and an
    //   authorization's agent and target never change, so a total only grows.
    // - Webhook deliveries, by sink and status: the webhook store adds up each transaction's
    //   changes and writes them once before its commit (store/webhook-store.ts), not a trigger per
    //   delivery — the delivery thread takes up and records dozens of deliveries per commit.
    up: `
      CREATE TABLE authorization_counts (
        status TEXT PRIMARY KEY,
        count INTEGER NOT NULL
      );
      INSERT INTO authorization_counts (status, count)
        SELECT status, COUNT(*) FROM authorizations WHERE status NOT IN ('requested', 'approved', 'claimed') GROUP BY status;
      CREATE TRIGGER authorization_counted AFTER INSERT ON authorizations
        WHEN NEW.status NOT IN ('requested', 'approved', 'claimed')
        BEGIN
          INSERT INTO authorization_counts (status, count) VALUES (NEW.status, 1)
            ON CONFLICT (status) DO UPDATE SET count = count + 1;
        END;
      -- One trigger for both ways (each trigger on an update costs its program's call, WHEN or not):
      -- into a closed status, counted; out of one (the schema never does it), uncounted.
      CREATE TRIGGER authorization_closed AFTER UPDATE OF status ON authorizations
        WHEN NEW.status IS NOT OLD.status AND (NEW.status NOT IN ('requested', 'approved', 'claimed') OR OLD.status NOT IN ('requested', 'approved', 'claimed'))
        BEGIN
          UPDATE authorization_counts SET count = count - 1 WHERE status = OLD.status AND OLD.status NOT IN ('requested', 'approved', 'claimed');
          INSERT INTO authorization_counts (status, count) SELECT NEW.status, 1 WHERE NEW.status NOT IN ('requested', 'approved', 'claimed')
            ON CONFLICT (status) DO UPDATE SET count = count + 1;
        END;
      CREATE TRIGGER authorization_uncounted AFTER DELETE ON authorizations
        WHEN OLD.status NOT IN ('requested', 'approved', 'claimed')
        BEGIN UPDATE authorization_counts SET count = count - 1 WHERE status = OLD.status; END;

      CREATE TABLE settled_totals (
        agent_id TEXT NOT NULL REFERENCES agents (agent_id),
        target_key TEXT NOT NULL,
        units INTEGER NOT NULL,
        PRIMARY KEY (agent_id, target_key)
      );
      INSERT INTO settled_totals (agent_id, target_key, units)
        SELECT a.agent_id, COALESCE(a.target_id, ''), SUM(s.amount_units)
        FROM settlements s JOIN authorizations a ON a.token_id = s.token_id GROUP BY 1, 2;
      CREATE TRIGGER settlement_totalled AFTER INSERT ON settlements
        BEGIN
          INSERT INTO settled_totals (agent_id, target_key, units)
            SELECT agent_id, COALESCE(target_id, ''), NEW.amount_units FROM authorizations WHERE token_id = NEW.token_id
            ON CONFLICT (agent_id, target_key) DO UPDATE SET units = units + excluded.units;
        END;
      -- Never fire while settlements_are_final and settlements_are_kept stand: the totals stay the sum whatever happens to the rows.
      CREATE TRIGGER settlement_retotalled AFTER UPDATE OF token_id, amount_units ON settlements
        BEGIN
          UPDATE settled_totals SET units = units - OLD.amount_units
            WHERE (agent_id, target_key) = (SELECT agent_id, COALESCE(target_id, '') FROM authorizations WHERE token_id = OLD.token_id);
          INSERT INTO settled_totals (agent_id, target_key, units)
            SELECT agent_id, COALESCE(target_id, ''), NEW.amount_units FROM authorizations WHERE token_id = NEW.token_id
            ON CONFLICT (agent_id, target_key) DO UPDATE SET units = units + excluded.units;
        END;
      CREATE TRIGGER settlement_untotalled AFTER DELETE ON settlements
        BEGIN
          UPDATE settled_totals SET units = units - OLD.amount_units
            WHERE (agent_id, target_key) = (SELECT agent_id, COALESCE(target_id, '') FROM authorizations WHERE token_id = OLD.token_id);
        END;

      CREATE TABLE webhook_delivery_counts (
        sink_id TEXT NOT NULL REFERENCES webhook_sinks (sink_id),
        status TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (sink_id, status)
      );
      INSERT INTO webhook_delivery_counts (sink_id, status, count) SELECT sink_id, status, COUNT(*) FROM webhook_deliveries GROUP BY 1, 2;
    `,
  },
];
