// The Reconciliation view (docs/console.md): executions whose billing awaits a human.
import { act, agentName, dash, facts, getJson, h, leftoverOutcomes, link, main, outcome, postJson, table, time } from './console-util.js';

export async function reconciliation() {
  const data = await getJson('/api/reconciliations');
  const cards = data.executions.map((entry) => {
    const id = entry.execution_id;
    const out = outcome(id);
    const field = (name) => main.querySelector(`[name="${name}-${id}"]`);
    const asked = entry.image_count === null ? 'the number asked' : String(entry.image_count);
    const resolve = () => {
      // No default: settling charges the agent, so the operator chooses, and the page says what is missing before anything is sent.
      const resolution = field('resolution')?.value ?? '';
      const note = field('note')?.value ?? '';
      const billed = field('images-billed')?.value ?? '';
      const missing =
        resolution === ''
          ? 'Choose how to resolve it: settle if the provider billed images for this request (the agent is charged), release if it charged nothing (the hold is returned).'
          : resolution === 'settle' && billed === '' && !entry.receipt_kept
            ? `Enter in “Images billed” how many images the provider billed for this request (1 to ${asked}; its dashboard shows it), or choose release if it charged nothing.`
            : note.trim() === ''
              ? 'Write a note (required, 1-500 characters): why you resolve it this way, e.g. what the provider’s dashboard shows.'
              : null;
      if (missing !== null) {
        out.textContent = missing;
        out.className = 'outcome error';
        return;
      }
      const body = resolution === 'settle' ? { resolution: 'settle', note, ...(billed === '' ? {} : { images_billed: Number.parseInt(billed, 10) }) } : { resolution: 'release', note };
      void act(out, () => postJson(`/api/reconciliations/${id}/resolve`, body), (result) => `Execution ${result.execution.execution_id}: ${result.resolution} (${result.execution.state}). Note: ${result.note}`);
    };
    const delivered = entry.evidence.reduce((sum, attempt) => sum + Number(attempt.delivered_images ?? 0), 0);
    const evidence = entry.evidence.map((attempt) =>
      h(
        'tr',
        {},
        h('td', {}, dash(attempt.provider_request_id)),
        h('td', {}, attempt.state),
        h('td', {}, dash(attempt.outcome_code)),
        h('td', {}, dash(attempt.delivered_images)),
        h('td', {}, attempt.submit_window === null ? '—' : `${time(attempt.submit_window.from)} – ${time(attempt.submit_window.until)}`),
        h('td', {}, attempt.correlation === null ? '—' : attempt.correlation.sent === false ? `no ${attempt.correlation.field} sent` : `${attempt.correlation.field} ${attempt.correlation.value}`),
      ),
    );
    return h(
      'section',
      { class: 'card', 'data-execution-id': id, id: `resolve-${id}` },
      h('h2', {}, link(`/executions/${id}`, id)),
      facts([
        ['Reason', dash(entry.state_reason)],
        ['Recommended', entry.recommended_action.description],
        [
          'Evidence',
          delivered === 0
            ? 'No image reached lexec. Settle only if the provider’s dashboard shows this request billed; otherwise release.'
            : `${delivered} image${delivered === 1 ? '' : 's'} reached lexec${entry.receipt_kept ? '; a receipt is kept (settling bills it)' : ''}.`,
        ],
        ['Agent', entry.agent_id === null ? '—' : agentName(entry)],
        ['Target', entry.target_id],
        ['Held', entry.held.display],
        ['Authorization', h('code', {}, entry.spend_auth_token_id)],
      ]),
      table(['Provider request', 'Attempt state', 'Outcome', 'Delivered images', 'Submitted between', 'Correlation'], evidence, 'No provider attempt.'),
      h(
        'p',
        { class: 'actions' },
        h(
          'label',
          {},
          'Resolve as ',
          h(
            'select',
            { name: `resolution-${id}`, required: true },
            h('option', { value: '', selected: true }, 'choose…'),
            h('option', { value: 'settle' }, 'settle: the provider billed images (charges the agent)'),
            h('option', { value: 'release' }, 'release: the provider charged nothing (returns the hold)'),
          ),
        ),
        ' ',
        h(
          'label',
          {},
          entry.receipt_kept ? 'Images billed (a receipt is kept: leave empty): ' : `Images billed (settle: 1 to ${asked}): `,
          h('input', { type: 'number', min: 1, max: entry.image_count ?? 16, name: `images-billed-${id}` }),
        ),
      ),
      h('p', { class: 'actions' }, h('label', {}, 'Note (required): ', h('input', { type: 'text', name: `note-${id}`, maxlength: 500, size: 50 })), ' ', h('button', { type: 'button', class: 'resolve', onclick: resolve }, 'Resolve')),
      out,
    );
  });
  const listed = data.executions.map((entry) => entry.execution_id);
  return [h('h1', {}, 'Reconciliation'), leftoverOutcomes(listed), cards.length === 0 ? h('p', { class: 'muted' }, 'No execution awaits a human.') : cards];
}
