import type { Migration } from '../../../storage/open-database.js';

export const COUNTED_UNITS_INDEX_MIGRATIONS: readonly Migration[] = [
  {
    version: 17,
    name: 'what the caps and budgets count, read from an index alone',
    // docs/ledger.md "Policies", "Budgets": every spend request sums what its agent settled and
    // holds in the last 24 hours — and, with calendar budgets, in the day, week or month, for the
    // agent, the target and the installation — in its transaction. Each sum read every
    // authorization row of its window and looked its settlement up: about 0.7 µs a row, so an
    // agent with a thousand authorizations in its window paid most of a millisecond per request
    // (docs/benchmarks.md). Now the settled amount is also on the authorization (`settled_units`,
    // copied from the settlement by a trigger when the settlement is written, and no other value
    // accepted), and the indexes the sums range over carry every column the sums read — status,
    // expiry, amount, settled amount — so a sum reads index pages only, no rows and no
    // settlements. The settlement row stays the record; `settled_units` is its copy, and the
    // triggers keep it one.
    //
    // The events' two indexes go: no query ranges over them (the event pages and the webhook
    // cursors read by event id), and each cost two page writes per event in the money
    // transactions.
    up: `
      ALTER TABLE authorizations ADD COLUMN settled_units INTEGER;
      UPDATE authorizations SET settled_units = (SELECT s.amount_units FROM settlements s WHERE s.token_id = authorizations.token_id)
        WHERE token_id IN (SELECT token_id FROM settlements);
      CREATE TRIGGER settled_units_from_settlement AFTER INSERT ON settlements
        BEGIN UPDATE authorizations SET settled_units = NEW.amount_units WHERE token_id = NEW.token_id; END;
      CREATE TRIGGER settled_units_are_the_settlement BEFORE UPDATE OF settled_units ON authorizations
        WHEN NEW.settled_units IS NOT (SELECT amount_units FROM settlements WHERE token_id = NEW.token_id)
        BEGIN SELECT RAISE(ABORT, 'settled_units is the settlement''s amount'); END;

      DROP INDEX authorizations_by_agent;
      CREATE INDEX authorizations_by_agent ON authorizations (agent_id, created_at, status, expires_at, amount_units, settled_units);
      DROP INDEX authorizations_by_time;
      CREATE INDEX authorizations_by_time ON authorizations (created_at, status, expires_at, amount_units, settled_units);
      DROP INDEX authorizations_by_agent_target;
      CREATE INDEX authorizations_by_agent_target ON authorizations (agent_id, target_id, created_at, status, expires_at, amount_units, settled_units)
        WHERE target_id IS NOT NULL;

      DROP INDEX events_by_agent;
      DROP INDEX events_by_time;
    `,
  },
];
