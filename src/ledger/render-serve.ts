import type { BuildInfo } from '../build-info.js';
import type { Output } from '../terminal/output.js';
import type { LedgerStopped } from './serve-ledger.js';

/** Human form of `ledger serve`: the version it reports (--version), or how it stopped. */
export function renderLedgerServe(result: LedgerStopped | BuildInfo, output: Output): void {
  if ('product_version' in result) {
    output.line(`lexec ledger ${result.product_version} (contract ${result.contract_version}, commit ${result.commit}, ${result.build_kind} build)`);
  } else {
    output.line(`ledger stopped (${result.signal})`);
  }
}
