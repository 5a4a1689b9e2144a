import type Database from 'better-sqlite3';
import { INSTALLATION_ID } from '../domain/installation.js';

/** One workflow run started again (migration 7's `workflow_reschedules`). */
export interface RescheduleRecord {
  readonly executionId: string;
  /** What the engine said of the run found: a closed status (`TERMINATED`, …), `NOT_FOUND`, or `RUNNING` on another task queue. */
  readonly previousStatus: string;
  /** The task queue of the run found, when it had one. */
  readonly previousTaskQueue: string | null;
  /** The task queue the new run was started on. */
  readonly taskQueue: string;
}

/**
 * The installation's identity and its log of rescheduled workflow runs, on the executor's own
 * database (docs/executions.md "Task-queue ownership"). The launcher reads the same log read-only
 * for `stack status` and `stack doctor` (src/launcher/status/executor-database.ts).
 */
export function createInstallationStore(db: Database.Database, now: () => number = Date.now) {
  const statements = {
    installation: db.prepare('SELECT installation_id FROM installation WHERE singleton = 1'),
    createdAt: db.prepare('SELECT created_at FROM installation WHERE singleton = 1'),
    record: db.prepare(
      'INSERT INTO workflow_reschedules (execution_id, previous_status, previous_task_queue, task_queue, rescheduled_at) VALUES (?, ?, ?, ?, ?)',
    ),
  };
  return {
    /** The id migration 7 created; a database without one is not an executor database this binary migrated. */
    installationId(): string {
      const row = statements.installation.get() as { installation_id: string } | undefined;
      if (row === undefined || !INSTALLATION_ID.test(row.installation_id)) throw new Error('the executor database has no installation id');
      return row.installation_id;
    },
    /**
     * When this database got its identity (ms since the epoch): a new database, or the upgrade
     * that added the identity to an older one. It knows of no execution admitted before.
     */
    createdAt(): number {
      const row = statements.createdAt.get() as { created_at: bigint } | undefined;
      if (row === undefined) throw new Error('the executor database has no installation id');
      return Number(row.created_at);
    },
    recordReschedule(record: RescheduleRecord): void {
      statements.record.run(record.executionId, record.previousStatus, record.previousTaskQueue, record.taskQueue, now());
    },
  };
}

export type InstallationStore = ReturnType<typeof createInstallationStore>;
