// The Approvals view (docs/console.md): requests awaiting a human, approved or denied as the signed-in name.
import { act, dash, facts, getJson, h, leftoverOutcomes, main, outcome, postJson, time } from './console-util.js';

export async function approvals() {
  const data = await getJson('/api/approvals');
  const cards = data.approvals.map((approval) => {
    const out = outcome(approval.token_id);
    const reasonName = `reason-${approval.token_id}`;
    const decide = (decision) => () => {
      const reason = main.querySelector(`[name="${reasonName}"]`)?.value ?? '';
      void act(out, () => postJson(`/api/approvals/${approval.token_id}/${decision}`, reason === '' ? {} : { reason }), (result) => `Authorization ${result.token_id}: ${result.status}${result.decided_by_name ? ` by ${result.decided_by_name}` : ''}.`);
    };
    return h(
      'section',
      { class: 'card', 'data-token-id': approval.token_id },
      h('h2', {}, h('span', { class: 'amount' }, approval.amount.display), ' for ', approval.agent_name ?? approval.agent_id),
      facts([
        ['Purpose', dash(approval.purpose)],
        ['Authorization', h('code', {}, approval.token_id)],
        ['Requested', time(approval.created_at)],
        ['Expires', time(approval.expires_at)],
        [
          // The policy the ledger decided this request under (kept with the authorization).
          'Required by',
          approval.required_by === null
            ? 'not recorded (requested before the ledger kept it)'
            : `approval above ${approval.required_by.approval_threshold.display}; at most ${approval.required_by.per_authorization_cap.display} each, ${approval.required_by.daily_cap.display} a day${approval.required_by.version === null ? '' : ` (policy version ${approval.required_by.version})`}`,
        ],
        [
          'Current policy',
          approval.policy === null
            ? '—'
            : `approval above ${approval.policy.approval_threshold.display}; at most ${approval.policy.per_authorization_cap.display} each, ${approval.policy.daily_cap.display} a day (${approval.policy.source}, version ${approval.policy.version})`,
        ],
      ]),
      h('p', {}, h('label', {}, 'Reason (optional): ', h('input', { type: 'text', name: reasonName, maxlength: 500 }))),
      h('p', { class: 'actions' }, h('button', { type: 'button', class: 'approve', onclick: decide('approve') }, 'Approve'), ' ', h('button', { type: 'button', class: 'deny', onclick: decide('deny') }, 'Deny')),
      out,
    );
  });
  const listed = data.approvals.map((approval) => approval.token_id);
  return [h('h1', {}, 'Approvals'), leftoverOutcomes(listed), cards.length === 0 ? h('p', { class: 'muted' }, 'Nothing awaits a decision.') : cards];
}
