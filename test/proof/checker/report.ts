/*
 * What the invariant checker answers (check-invariants.ts): the violations, each with a stable
 * rule id (docs/reliability.md lists what each rule reads) and the execution, token or line it
 * concerns, and what it counted. Every rule runs whatever the others find; the violations keep
 * the order the rules found them in.
 */

export type Rule =
  | 'one_attempt_per_execution'
  | 'one_submission_per_attempt'
  | 'one_submission_per_execution'
  | 'request_id_on_one_attempt'
  | 'attempt_request_id_submitted'
  | 'submissions_source_readable'
  | 'settle_xor_release'
  | 'authorization_status_matches'
  | 'settled_units_match'
  | 'closed_by_claiming_execution'
  | 'claim_has_execution'
  | 'cancelled_never_claimed'
  | 'suspension_is_whole'
  | 'hold_matches_ledger'
  | 'settled_within_hold'
  | 'settled_equals_price_times_delivered'
  | 'settlement_matches_receipt'
  | 'receipt_equals_price_times_billed'
  | 'attempt_amount_matches_receipt'
  | 'resolution_matches_ledger'
  | 'terminal_or_reconciliation'
  | 'reconciliation_has_ledger_record'
  | 'succeeded_has_one_settlement'
  | 'submitted_has_money_record'
  | 'failed_has_release'
  | 'artifacts_intact'
  | 'amounts_are_integers'
  | 'operator_action_audited'
  | 'audit_event_has_change'
  | 'change_has_one_event'
  | 'event_has_change'
  | 'kept_counts_match';

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

/** How a rule reports a breach. */
export type Fail = (rule: Rule, subject: string, message: string) => void;

/** The violations found so far, in order, and the `fail` that adds one. */
export function findings(): { readonly violations: Violation[]; readonly fail: Fail } {
  const violations: Violation[] = [];
  return { violations, fail: (rule, subject, message) => violations.push({ rule, subject, message }) };
}
