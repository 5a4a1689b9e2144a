import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/*
 * The money rules, checked by an oracle that shares no code with the system under test (issue 14
 * item 1). It imports nothing from src/ (a test enforces it): it reads the ledger's and the
 * executor's SQLite files read-only with its own SQL, the sandbox provider's submissions log and
 * the artifact files, and knows the rules from the spec, not from the implementation.
 */

export interface InvariantInputs {
  readonly ledgerDatabase: string;
  readonly executorDatabase: string;
  /** The sandbox's `--submissions-log` (JSON lines); null when the run had none. */
  readonly submissionsLog: string | null;
  readonly artifactRoot: string;
}

export type Rule =
  | 'one_attempt_per_execution'
  | 'one_submission_per_attempt'
  | 'settle_xor_release'
  | 'settled_within_hold'
  | 'settled_equals_price_times_delivered'
  | 'terminal_or_reconciliation'
  | 'reconciliation_has_ledger_record'
  | 'succeeded_has_one_settlement'
  | 'submitted_has_money_record'
  | 'failed_has_release'
  | 'artifacts_intact'
  | 'amounts_are_integers';

export interface Violation {
  readonly rule: Rule;
  readonly subject: string;
  readonly message: string;
}

export interface InvariantReport {
  readonly violations: readonly Violation[];
  readonly counts: {
    readonly executions: number;
    readonly attempts: number;
    readonly submissions: number;
    readonly settlements: number;
    readonly releases: number;
    readonly reconciliations: number;
    readonly artifacts: number;
  };
}

/** Every column that holds an amount, a count of money or a scale, per table. */
const AMOUNT_COLUMNS: Readonly<Record<'ledger' | 'executor', Readonly<Record<string, readonly string[]>>>> = {
  ledger: {
    authorizations: ['amount_units', 'amount_cents', 'units_scale'],
    settlements: ['amount_units', 'amount_cents', 'units_scale'],
    policies: ['per_authorization_cap_units', 'daily_cap_units', 'approval_threshold_units', 'units_scale'],
  },
  executor: {
    executions: ['authorization_held_cents', 'authorization_held_units', 'quoted_units', 'units_scale'],
    provider_attempts: ['cost_cents', 'exact_amount', 'scale', 'delivered_images'],
    receipts: ['amount_cents', 'amount_units', 'exact_amount', 'scale', 'units_scale'],
    reconciliation_resolutions: ['images_billed', 'amount_units'],
  },
};

function open(path: string): Database.Database {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  db.defaultSafeIntegers(true);
  return db;
}

/** ceil(images × numerator × 10^6 / denominator): the spec's `ceil_micro_units` rounding. */
function priceTimes(snapshotJson: string, images: bigint): bigint {
  const snapshot = JSON.parse(snapshotJson) as { unit_price: { numerator: string; denominator: string }; rounding: string };
  const numerator = images * BigInt(snapshot.unit_price.numerator) * 1_000_000n;
  const denominator = BigInt(snapshot.unit_price.denominator);
  return numerator % denominator === 0n ? numerator / denominator : numerator / denominator + 1n;
}

interface SubmissionLine {
  readonly request_id: string | null;
  readonly outcome: string;
}

function readSubmissions(path: string | null): SubmissionLine[] {
  if (path === null || !existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SubmissionLine);
}

export function checkInvariants(inputs: InvariantInputs): InvariantReport {
  const violations: Violation[] = [];
  const fail = (rule: Rule, subject: string, message: string) => violations.push({ rule, subject, message });
  const ledger = open(inputs.ledgerDatabase);
  const executor = open(inputs.executorDatabase);
  try {
    // Amounts: INTEGER storage everywhere, never REAL or TEXT.
    for (const [side, db] of [['ledger', ledger], ['executor', executor]] as const) {
      for (const [table, columns] of Object.entries(AMOUNT_COLUMNS[side])) {
        for (const column of columns) {
          const rows = db.prepare(`SELECT rowid AS id, typeof(${column}) AS kind FROM ${table} WHERE typeof(${column}) NOT IN ('integer', 'null')`).all() as { id: bigint; kind: string }[];
          for (const row of rows) fail('amounts_are_integers', `${side}.${table}.${column}#${String(row.id)}`, `stored as ${row.kind}`);
        }
      }
    }

    const executions = executor.prepare('SELECT execution_id, spend_auth_token_id AS token_id, state, pricing_snapshot FROM executions').all() as {
      execution_id: string;
      token_id: string;
      state: string;
      pricing_snapshot: string;
    }[];
    const attempts = executor.prepare('SELECT execution_id, state, request_id, delivered_images FROM provider_attempts').all() as {
      execution_id: string;
      state: string;
      request_id: string | null;
      delivered_images: bigint | null;
    }[];
    const settlements = ledger.prepare('SELECT token_id, execution_id, amount_units FROM settlements').all() as { token_id: string; execution_id: string; amount_units: bigint }[];
    const releases = ledger.prepare('SELECT token_id, execution_id FROM releases').all() as { token_id: string; execution_id: string | null }[];
    const records = ledger.prepare('SELECT token_id, execution_id FROM reconciliation_records').all() as { token_id: string; execution_id: string }[];
    const holds = new Map((ledger.prepare('SELECT token_id, amount_units FROM authorizations').all() as { token_id: string; amount_units: bigint }[]).map((row) => [row.token_id, row.amount_units]));
    const artifacts = executor.prepare('SELECT execution_id, sha256, storage_key FROM artifacts').all() as { execution_id: string; sha256: string; storage_key: string }[];
    const submissions = readSubmissions(inputs.submissionsLog).filter((line) => line.request_id !== null);

    // At most one attempt per execution, and at most one submission per attempt.
    const attemptsOf = new Map<string, typeof attempts>();
    for (const attempt of attempts) attemptsOf.set(attempt.execution_id, [...(attemptsOf.get(attempt.execution_id) ?? []), attempt]);
    for (const [executionId, list] of attemptsOf) if (list.length > 1) fail('one_attempt_per_execution', executionId, `${list.length} provider attempts`);
    const known = new Set(attempts.flatMap((attempt) => (attempt.request_id === null ? [] : [attempt.request_id])));
    const seen = new Map<string, number>();
    for (const line of submissions) seen.set(line.request_id ?? '', (seen.get(line.request_id ?? '') ?? 0) + 1);
    for (const [requestId, count] of seen) if (count > 1) fail('one_submission_per_attempt', requestId, `${count} submissions with one request id`);
    // A submission whose id the executor never learned belongs to an attempt that was never
    // answered — and not to one the executor says never left it (`not_transmitted`): if it did,
    // the submissions outnumber the attempts that could have sent them.
    const unanswered = attempts.filter((attempt) => attempt.request_id === null && attempt.state !== 'not_transmitted').length;
    const orphans = [...seen.keys()].filter((requestId) => !known.has(requestId));
    if (orphans.length > unanswered) fail('one_submission_per_attempt', orphans.join(','), `${orphans.length} submissions no attempt accounts for (${unanswered} attempts never answered)`);

    // Settle XOR release, once.
    const settledTokens = new Map<string, number>();
    for (const row of settlements) settledTokens.set(row.token_id, (settledTokens.get(row.token_id) ?? 0) + 1);
    const releasedTokens = new Map<string, number>();
    for (const row of releases) releasedTokens.set(row.token_id, (releasedTokens.get(row.token_id) ?? 0) + 1);
    for (const [token, count] of settledTokens) {
      if (count > 1) fail('settle_xor_release', token, `${count} settlements`);
      if (releasedTokens.has(token)) fail('settle_xor_release', token, 'settled and released');
    }
    for (const [token, count] of releasedTokens) if (count > 1) fail('settle_xor_release', token, `${count} releases`);
    for (const row of settlements) {
      const hold = holds.get(row.token_id);
      if (hold === undefined || row.amount_units > hold) fail('settled_within_hold', row.token_id, `settled ${String(row.amount_units)} over the hold ${String(hold ?? 'missing')}`);
    }

    // Every execution ends terminal or in reconciliation, with its ledger record.
    const artifactsOf = new Map<string, typeof artifacts>();
    for (const artifact of artifacts) artifactsOf.set(artifact.execution_id, [...(artifactsOf.get(artifact.execution_id) ?? []), artifact]);
    for (const execution of executions) {
      const id = execution.execution_id;
      const settledHere = settlements.filter((row) => row.execution_id === id);
      const attempt = attemptsOf.get(id)?.[0];
      if (!['succeeded', 'failed', 'reconciliation'].includes(execution.state)) fail('terminal_or_reconciliation', id, `state ${execution.state}`);
      if (execution.state === 'reconciliation' && !records.some((record) => record.token_id === execution.token_id && record.execution_id === id)) {
        fail('reconciliation_has_ledger_record', id, 'no reconciliation record at the ledger');
      }
      if (execution.state === 'succeeded') {
        if (settledHere.length !== 1) fail('succeeded_has_one_settlement', id, `${settledHere.length} settlements by this execution`);
        const delivered = attempt?.delivered_images ?? 0n;
        for (const row of settledHere) {
          const expected = priceTimes(execution.pricing_snapshot, delivered);
          if (row.amount_units !== expected) fail('settled_equals_price_times_delivered', id, `settled ${String(row.amount_units)}, price × ${String(delivered)} images is ${String(expected)}`);
        }
        const files = artifactsOf.get(id) ?? [];
        if (BigInt(files.length) !== delivered) fail('artifacts_intact', id, `${files.length} artifacts recorded, ${String(delivered)} images delivered`);
        for (const file of files) {
          const path = join(inputs.artifactRoot, file.storage_key);
          if (!existsSync(path)) fail('artifacts_intact', id, `missing ${file.storage_key}`);
          else if (createHash('sha256').update(readFileSync(path)).digest('hex') !== file.sha256) fail('artifacts_intact', id, `${file.storage_key} does not match its sha256`);
        }
      }
      // Whatever reached the provider has a money record: settled, released or parked.
      if (attempt !== undefined) {
        const recorded = settledHere.length > 0 || releases.some((row) => row.token_id === execution.token_id) || records.some((row) => row.token_id === execution.token_id);
        if (!recorded) fail('submitted_has_money_record', id, 'an attempt was made but the ledger holds no settlement, release or reconciliation record');
      }
      // A failed execution charged nothing: its hold is released.
      if (execution.state === 'failed' && !releases.some((row) => row.token_id === execution.token_id)) fail('failed_has_release', id, 'failed, but its authorization was not released');
    }

    return {
      violations,
      counts: {
        executions: executions.length,
        attempts: attempts.length,
        submissions: submissions.length,
        settlements: settlements.length,
        releases: releases.length,
        reconciliations: records.length,
        artifacts: artifacts.length,
      },
    };
  } finally {
    ledger.close();
    executor.close();
  }
}
