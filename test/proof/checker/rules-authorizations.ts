import type { Facts } from './facts.ts';
import type { Fail } from './report.ts';

/*
 * The ledger's authorizations: settle XOR release, once; the status says which; closed by the
 * execution that claimed it; and every claim names an execution the executor has, or was released
 * as claim_without_execution because it never had one.
 */

export function checkAuthorizations(facts: Facts, fail: Fail): void {
  const { authorizations, settlements, releases, settlementsOfToken, releasesOfToken, authorizationOf, executions } = facts;

  // Settle XOR release, once; the status says which; closed by the execution that claimed it.
  for (const [token, list] of settlementsOfToken) {
    if (list.length > 1) fail('settle_xor_release', token, `${list.length} settlements`);
    if (releasesOfToken.has(token)) fail('settle_xor_release', token, 'settled and released');
  }
  for (const [token, list] of releasesOfToken) if (list.length > 1) fail('settle_xor_release', token, `${list.length} releases`);
  for (const authorization of authorizations) {
    const token = authorization.token_id;
    const settled = settlementsOfToken.get(token)?.length ?? 0;
    const released = releasesOfToken.get(token)?.length ?? 0;
    if ((authorization.status === 'settled') !== settled > 0) fail('authorization_status_matches', token, `status ${authorization.status} with ${settled} settlements`);
    if ((authorization.status === 'released') !== released > 0) fail('authorization_status_matches', token, `status ${authorization.status} with ${released} releases`);
  }
  for (const row of [...settlements, ...releases]) {
    const authorization = authorizationOf.get(row.token_id);
    if (authorization === undefined) fail('closed_by_claiming_execution', row.token_id, 'closes an authorization the ledger does not have');
    else if (row.execution_id !== null && row.execution_id !== authorization.execution_id) {
      fail('closed_by_claiming_execution', row.token_id, `closed by execution ${row.execution_id}, claimed by ${authorization.execution_id ?? 'none'}`);
    }
  }

  // A claim at the ledger names an execution the executor has: otherwise the hold is stuck, with
  // nothing to run it, settle it or release it (a lost money record) — unless the executor released
  // it as `claim_without_execution`, which is right exactly when it never had that execution (an
  // admission that died between the claim and the pending row). A claim still `claimed` with no
  // execution at rest is a hold the executor's sweep should have given back.
  const executionIds = new Set(executions.map((execution) => execution.execution_id));
  for (const authorization of authorizations) {
    const executionId = authorization.execution_id;
    if (executionId === null) continue;
    const orphanRelease = (releasesOfToken.get(authorization.token_id) ?? []).some((row) => row.reason === 'claim_without_execution');
    if (orphanRelease && executionIds.has(executionId)) {
      fail('claim_has_execution', authorization.token_id, `released as claim_without_execution, but the executor has execution ${executionId}`);
    } else if (!executionIds.has(executionId) && !(orphanRelease && authorization.status === 'released')) {
      fail('claim_has_execution', authorization.token_id, `claimed for ${executionId}, which the executor does not have`);
    }
  }
}
