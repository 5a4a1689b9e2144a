import type { Facts } from './facts.ts';
import type { Fail } from './report.ts';
import { units } from './values.ts';

/*
 * The ledger's authorizations: settle XOR release, once; the status says which (and the amount the
 * caps count as spent is the settlement's); closed by the
 * execution that claimed it; every claim names an execution the executor has, or was released
 * as claim_without_execution because it never had one; a cancelled authorization was never
 * claimed nor run; and a suspended agent holds no authorization anyone could still claim.
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
    // What the caps and budgets count as spent (ledger migration 17) is the settlement's amount, and nothing before it.
    const settlement = settlementsOfToken.get(token)?.[0];
    const counted = units(authorization.settled_units);
    const spent = settlement === undefined ? null : units(settlement.amount_units);
    if (counted !== spent) {
      fail('settled_units_match', token, `counts ${counted?.toString() ?? 'nothing'} as spent, the settlement says ${settlement === undefined ? 'none' : (spent?.toString() ?? 'no amount')}`);
    }
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
  checkCancellations(facts, fail);
}

/**
 * An operator's suspension of an agent: the ledger cancels, in the suspension's own transaction,
 * every requested and approved authorization of the agent that no execution claimed, and refuses
 * its requests from then on. So a cancelled authorization never names an execution, and no
 * execution runs on one; and while an agent is suspended none of its authorizations is requested
 * or approved — otherwise the suspension is half done: requests refused, a hold still claimable.
 */
function checkCancellations(facts: Facts, fail: Fail): void {
  const { agents, authorizations, executions, authorizationOf } = facts;
  for (const authorization of authorizations) {
    if (authorization.status === 'cancelled' && authorization.execution_id !== null) {
      fail('cancelled_never_claimed', authorization.token_id, `cancelled, yet claimed for ${authorization.execution_id}`);
    }
  }
  for (const execution of executions) {
    if (authorizationOf.get(execution.token_id)?.status === 'cancelled') fail('cancelled_never_claimed', execution.execution_id, `runs on cancelled authorization ${execution.token_id}`);
  }
  const suspended = new Set(agents.filter((agent) => agent.status === 'suspended').map((agent) => agent.agent_id));
  for (const authorization of authorizations) {
    if (suspended.has(authorization.agent_id) && (authorization.status === 'requested' || authorization.status === 'approved')) {
      fail('suspension_is_whole', authorization.token_id, `agent ${authorization.agent_id} is suspended, yet this authorization is still ${authorization.status}`);
    }
  }
}
