import type { BuildInfo } from '../build-info.js';
import { UNKNOWN_COMMIT } from '../build-info.js';
import { UserError } from '../errors.js';
import { LedgerRefused, type LedgerGateway } from './ledger-gateway.js';

const incompatible = (code: string, message: string, nextStep: string) => new UserError(code, message, { nextStep });

/**
 * The ledger compatibility proof (spec §3 rule 1, §9): the ledger reports exactly the pinned
 * product version, the same contract version and the same source commit as this executor, both
 * release builds unless the development allowance is on; then the protected probe succeeds with
 * the executor's credential. Throws a UserError for an incompatible ledger (it will not become
 * compatible by waiting) and lets LedgerUnavailable through (it may).
 */
export async function proveLedgerCompatible(
  ledger: LedgerGateway,
  options: { pinnedVersion: string; developmentAllowance: boolean; self: BuildInfo },
): Promise<void> {
  const problem = ledgerLineageProblem(await ledger.version(), options);
  if (problem !== null) throw problem;
  try {
    await ledger.probe();
  } catch (error) {
    if (error instanceof LedgerRefused) {
      throw incompatible('ledger_credential_rejected', 'The ledger refused the executor credential on its protected probe.', 'Run `lexec executor credentials bootstrap-managed` again, or fix the explicit ledger credential.');
    }
    throw error;
  }
}

/** What a ledger's `/version` says of its lineage. */
export type ReportedLineage = Pick<BuildInfo, 'product_version' | 'contract_version' | 'commit' | 'build_kind'>;

/**
 * Why a ledger reporting `reported` is not of this binary's lineage, or null when it is: exactly
 * the pinned product version, the same contract, release builds unless the development allowance
 * is on, and the same source commit. Also checked before an executor host enrols (nothing is
 * spent at a ledger of another lineage) and by `stack doctor` on an executor host.
 */
export function ledgerLineageProblem(reported: ReportedLineage, options: { pinnedVersion: string; developmentAllowance: boolean; self: BuildInfo }): UserError | null {
  if (reported.product_version !== options.pinnedVersion) {
    return incompatible(
      'ledger_version_mismatch',
      `The ledger reports product version ${reported.product_version}; the configuration pins ${options.pinnedVersion}.`,
      'Run the ledger binary the configuration pins, or update ledger.product_version after checking the lineage.',
    );
  }
  if (reported.contract_version !== options.self.contract_version) {
    return incompatible(
      'ledger_contract_mismatch',
      `The ledger reports contract ${reported.contract_version}; this executor speaks ${options.self.contract_version}.`,
      'Install ledger and executor from one release.',
    );
  }
  if (!options.developmentAllowance) {
    if (reported.build_kind !== 'release' || options.self.build_kind !== 'release') {
      return incompatible(
        'development_build_refused',
        'A development build is part of this stack and the development allowance is off.',
        'Use release builds (npm run build:release), or set development_allowance: true for a development stack.',
      );
    }
  }
  const unknown = reported.commit === UNKNOWN_COMMIT || options.self.commit === UNKNOWN_COMMIT;
  if ((unknown && !options.developmentAllowance) || (!unknown && reported.commit !== options.self.commit)) {
    return incompatible(
      'ledger_lineage_mismatch',
      `The ledger was built from commit ${reported.commit} and this executor from ${options.self.commit}; they must share one lineage.`,
      'Build ledger and executor from the same source commit.',
    );
  }
  return null;
}
