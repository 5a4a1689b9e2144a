import type { BuildInfo } from '../../build-info.js';
import type { ProviderCatalog } from '../../executor/provider-catalog.js';
import type { FieldIssue } from '../../errors.js';
import type { PermissionFix } from './state-permissions.js';

/*
 * The `stack doctor` report, version 3 (spec §8 Operations 7, §9; docs/stack.md "Doctor"). Every
 * check has a stable id, a status, a one-line summary and a fix hint (null when it passed). The
 * report adds the provider contract catalog and the lineage it compared. Pure: no I/O here.
 */

export const DOCTOR_REPORT_VERSION = 3;

export const CHECK_STATUSES = ['pass', 'warn', 'fail', 'skip'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

/** Every check id, in report order. Stable: scripts and `stack start` select checks by id. */
export const DOCTOR_CHECK_IDS = [
  'profile.valid',
  'generation.active',
  'generation.current',
  'lineage.contract',
  'lineage.commit',
  'lineage.development_allowance',
  'stack.state',
  'stack.handoff',
  'temporal.cli',
  'temporal.external',
  'ports.ledger.free',
  'ports.executor.free',
  'ports.sandbox.free',
  'ports.temporal.free',
  'ports.temporal_ui.free',
  'credentials.permissions',
  'state.permissions',
  'live.credential',
  // Issue 29: an executor host's remote ledger (skipped where the stack runs its own).
  'ledger.remote',
  'disk.space',
  'executions.awaiting_human',
  'executions.rescheduled_runs',
  'provider.catalog',
] as const;
export type DoctorCheckId = (typeof DOCTOR_CHECK_IDS)[number];

export interface DoctorCheck {
  readonly id: DoctorCheckId;
  readonly status: CheckStatus;
  readonly summary: string;
  /** What to do about it; null when the check passed or was skipped for a reason that needs nothing. */
  readonly fix: string | null;
  /** Field problems by path (`ports.bogus`), for the checks that read a document; else empty. */
  readonly issues: readonly FieldIssue[];
}

export type Lineage = Pick<BuildInfo, 'product_version' | 'contract_version' | 'commit' | 'build_kind'>;

export interface DoctorLineage {
  /** This binary: the launcher, and the ledger, executor and sandbox it starts. */
  readonly binary: Lineage;
  /** The lineage recorded in the active generation's manifest; null without one. */
  readonly generation: Lineage | null;
  /** The ledger product version the active executor.json pins; null without one. */
  readonly pinned_ledger_product_version: string | null;
  /** `development_allowance` of the active executor.json; null without one. */
  readonly development_allowance: boolean | null;
}

export type OverallStatus = 'pass' | 'warn' | 'fail';

export interface DoctorReport {
  readonly report_version: typeof DOCTOR_REPORT_VERSION;
  readonly profile: string;
  readonly overall: OverallStatus;
  readonly running: boolean;
  readonly active_generation_id: string | null;
  readonly checks: readonly DoctorCheck[];
  /** The sanitized provider catalog (schema version 1) of the active generation; null without one. */
  readonly provider_catalog: ProviderCatalog | null;
  readonly lineage: DoctorLineage;
  /**
   * What `--fix-permissions` tightened before the checks ran: each path with its mode before and
   * after; empty when nothing needed it; null when not asked (the doctor then changes nothing).
   */
  readonly permissions_fixed: readonly PermissionFix[] | null;
}

/** A failed check fails the report; otherwise a warning warns; skipped checks count for nothing. */
export function overallStatus(checks: readonly DoctorCheck[]): OverallStatus {
  if (checks.some((check) => check.status === 'fail')) return 'fail';
  if (checks.some((check) => check.status === 'warn')) return 'warn';
  return 'pass';
}

export function passed(id: DoctorCheckId, summary: string): DoctorCheck {
  return { id, status: 'pass', summary, fix: null, issues: [] };
}

export function skipped(id: DoctorCheckId, summary: string): DoctorCheck {
  return { id, status: 'skip', summary, fix: null, issues: [] };
}

export function warned(id: DoctorCheckId, summary: string, fix: string): DoctorCheck {
  return { id, status: 'warn', summary, fix, issues: [] };
}

export function failed(id: DoctorCheckId, summary: string, fix: string, issues: readonly FieldIssue[] = []): DoctorCheck {
  return { id, status: 'fail', summary, fix, issues };
}

/** Puts checks in the documented order, so the report reads the same whatever ran first. */
export function inReportOrder(checks: readonly DoctorCheck[]): DoctorCheck[] {
  return [...checks].sort((a, b) => DOCTOR_CHECK_IDS.indexOf(a.id) - DOCTOR_CHECK_IDS.indexOf(b.id));
}
