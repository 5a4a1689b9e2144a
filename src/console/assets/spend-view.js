// The console's Spend view (docs/console.md "Spend"): the ledger's spend report as a stacked bar
// chart of settled spend per period, one colour per agent or per target, drawn here as inline SVG
// (no library, nothing from the network), the table of the same report under it, and its CSV.
// console.js leaves this view's main to this script; it loads only on /spend.
//
// Amounts arrive as exact micro-unit digit strings. They are shown by placing the decimal point
// in the string (no arithmetic, so no rounding); only bar heights use Number, which is a drawing
// approximation, never a figure anyone reads. Every string from the stack (agent names, target
// ids) becomes a text node, never markup.

const SESSION_KEY = 'lexec-console-session';
const SVG = 'http://www.w3.org/2000/svg';
const REFRESH_MS = 15000;
// Distinguishable in light and dark themes; the table and legend name each series anyway.
const COLOURS = ['#1f6feb', '#d97706', '#1a7f37', '#cf222e', '#8250df', '#0891b2', '#9a6700', '#db2777'];
const main = document.getElementById('main');
const updated = document.getElementById('updated');

function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value === true ? '' : String(value));
  }
  node.append(...children.flat().filter((child) => child !== null && child !== undefined));
  return node;
}

function s(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children.flat());
  return node;
}

/** Micro-units (digit string) as exact USD text: "1500000" → "1.500000". */
function usd(units) {
  const digits = String(units).padStart(7, '0');
  return `${digits.slice(0, -6)}.${digits.slice(-6)}`;
}

/** The report's query from the form: by, split, since, until (empty ones left out). */
function queryOf(form) {
  const query = new URLSearchParams();
  for (const name of ['by', 'split', 'since', 'until']) {
    const value = form.elements[name].value;
    if (value !== '') query.set(name, value);
  }
  return query;
}

async function fetchReport(path) {
  const secret = sessionStorage.getItem(SESSION_KEY);
  if (secret === null) throw new Error('Not signed in.');
  const response = await fetch(path, { headers: { 'x-lexec-session': secret, accept: 'application/json' } });
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    const fields = body?.error?.fields ?? [];
    throw new Error(`Refused (${body?.error?.code ?? response.status})${fields.length > 0 ? `: check ${fields.join(', ')}` : ''}.`);
  }
  return response;
}

/**
 * Every period from the first settled one to the last, those without a settlement included (as
 * empty slots), so the time axis is even: periods are civil dates (`2026-11-27`, a week's Monday)
 * or months (`2026-11`), stepped as calendar dates (Date.UTC), never as hours. At most 400 slots.
 */
function timeline(groups, by) {
  if (groups.length === 0 || (by !== 'day' && by !== 'week' && by !== 'month')) return groups;
  const known = new Map(groups.map((group) => [group.group, group]));
  const next = (period) => {
    if (by === 'month') {
      const [year, month] = period.split('-').map(Number);
      return month === 12 ? `${year + 1}-01` : `${year}-${String(month + 1).padStart(2, '0')}`;
    }
    const [year, month, day] = period.split('-').map(Number);
    return new Date(Date.UTC(year, month - 1, day + (by === 'week' ? 7 : 1))).toISOString().slice(0, 10);
  };
  const last = groups[groups.length - 1].group;
  const slots = [];
  for (let period = groups[0].group; period <= last && slots.length < 400; period = next(period)) {
    slots.push(known.get(period) ?? { group: period, label: period, settled_units: '0', parts: [] });
  }
  return slots;
}

/** A stacked bar per group, a segment per part (agent or target), with the axis at the highest total. */
function chart(report, seriesName) {
  const groups = timeline(report.groups.filter((group) => BigInt(group.settled_units) > 0n), report.by);
  const series = [...new Map(groups.flatMap((group) => (group.parts ?? []).filter((part) => BigInt(part.settled_units) > 0n).map((part) => [part.part, part.label]))).entries()];
  const colour = new Map(series.map(([key], index) => [key, COLOURS[index % COLOURS.length]]));
  const width = 760;
  const height = 260;
  const left = 90;
  const bottom = 40;
  const plot = { w: width - left - 10, h: height - bottom - 10 };
  const max = groups.reduce((top, group) => (BigInt(group.settled_units) > top ? BigInt(group.settled_units) : top), 0n);
  const scale = max === 0n ? 0 : plot.h / Number(max);
  const slot = groups.length === 0 ? plot.w : plot.w / groups.length;
  const bar = Math.max(2, Math.min(48, slot * 0.7));
  const title = s('title', { id: 'spend-chart-title' }, `Settled spend per ${report.by}, per ${seriesName}`);
  const desc = s('desc', { id: 'spend-chart-desc' }, groups.length === 0 ? 'Nothing settled in this range.' : `${groups.length} ${report.by}s from ${groups[0].label} to ${groups[groups.length - 1].label}; the highest ${usd(max)} USD. The table below holds every figure.`);
  const svg = s('svg', { id: 'spend-chart', role: 'img', 'aria-labelledby': 'spend-chart-title spend-chart-desc', viewBox: `0 0 ${width} ${height}`, width: '100%', 'font-size': '11', fill: 'currentColor' }, title, desc);
  svg.append(s('line', { x1: left, y1: 10 + plot.h, x2: left + plot.w, y2: 10 + plot.h, stroke: 'currentColor', 'stroke-opacity': '0.4' }));
  svg.append(s('text', { x: left - 6, y: 14, 'text-anchor': 'end' }, usd(max)), s('text', { x: left - 6, y: 10 + plot.h, 'text-anchor': 'end' }, '0'));
  const labelEvery = Math.max(1, Math.ceil(groups.length / 12));
  groups.forEach((group, index) => {
    const x = left + index * slot + (slot - bar) / 2;
    let y = 10 + plot.h;
    for (const part of (group.parts ?? []).filter((candidate) => BigInt(candidate.settled_units) > 0n)) {
      const tall = Number(BigInt(part.settled_units)) * scale;
      y -= tall;
      const rect = s('rect', { x: x.toFixed(1), y: y.toFixed(1), width: bar.toFixed(1), height: Math.max(0.5, tall).toFixed(1), fill: colour.get(part.part) ?? COLOURS[0] });
      rect.append(s('title', {}, `${group.label} · ${part.label}: ${usd(part.settled_units)} USD`));
      svg.append(rect);
    }
    if (index % labelEvery === 0) svg.append(s('text', { x: (x + bar / 2).toFixed(1), y: height - bottom + 24, 'text-anchor': 'middle' }, group.label));
  });
  const legend = h('ul', { class: 'legend' }, series.map(([key, label]) => h('li', {}, svgSwatch(colour.get(key)), ` ${label}`)));
  return [svg, legend];
}

function svgSwatch(fill) {
  return s('svg', { width: '12', height: '12', 'aria-hidden': 'true' }, s('rect', { width: '12', height: '12', fill }));
}

function dataTable(report, seriesName) {
  const head = h('tr', {}, ['period', `per ${seriesName}`, 'settled (USD)', 'settlements', 'held now (USD)', 'holds'].map((text) => h('th', { scope: 'col' }, text)));
  const rows = report.groups.map((group) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, group.label),
      h('td', {}, (group.parts ?? []).filter((part) => BigInt(part.settled_units) > 0n).map((part) => `${part.label} ${usd(part.settled_units)}`).join(' · ') || '—'),
      h('td', { class: 'amount' }, usd(group.settled_units)),
      h('td', {}, String(group.settled_count)),
      h('td', { class: 'amount' }, usd(group.held_units)),
      h('td', {}, String(group.held_count)),
    ),
  );
  const total = report.total;
  const foot = h('tr', { class: 'total' }, h('th', { scope: 'row' }, 'total'), h('td', {}, ''), h('td', { class: 'amount' }, usd(total.settled_units)), h('td', {}, String(total.settled_count)), h('td', { class: 'amount' }, usd(total.held_units)), h('td', {}, String(total.held_count)));
  return h('table', { id: 'spend-table' }, h('caption', {}, `Settled and held spend per ${report.by} (${report.time_zone})`), h('thead', {}, head), h('tbody', {}, rows), h('tfoot', {}, foot));
}

function form() {
  const since = new Date(Date.now() - 29 * 86400000);
  const sinceText = `${since.getFullYear()}-${String(since.getMonth() + 1).padStart(2, '0')}-${String(since.getDate()).padStart(2, '0')}`;
  const select = (name, label, options) => h('label', {}, `${label} `, h('select', { name }, options.map(([value, text]) => h('option', { value }, text))));
  return h(
    'form',
    { id: 'spend-form', class: 'actions' },
    select('by', 'Per', [['day', 'day'], ['week', 'week (from Monday)'], ['month', 'month']]),
    select('split', 'Series', [['agent', 'per agent'], ['target', 'per target']]),
    h('label', {}, 'From ', h('input', { type: 'date', name: 'since', value: sinceText })),
    h('label', {}, 'Before ', h('input', { type: 'date', name: 'until' })),
    h('button', { type: 'submit' }, 'Show'),
    h('button', { type: 'button', id: 'spend-csv' }, 'Download CSV'),
  );
}

const controls = form();
const output = h('section', { id: 'spend-output', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
main.replaceChildren(h('h1', {}, 'Spend'), h('p', { class: 'muted' }, 'Settled amounts per period from the ledger’s settlements (dates in the ledger’s time zone; “before” is exclusive), and apart what is held now by requests made in the range.'), controls, output);

async function show() {
  const seriesName = controls.elements.split.value;
  try {
    const report = await (await fetchReport(`/api/spend?${queryOf(controls).toString()}`)).json();
    output.replaceChildren(...chart(report, seriesName), dataTable(report, seriesName));
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    updated.className = 'muted';
  } catch (error) {
    output.replaceChildren(h('p', { class: 'error' }, error.message));
  }
}

async function download() {
  try {
    const blob = await (await fetchReport(`/api/spend.csv?${queryOf(controls).toString()}`)).blob();
    const url = URL.createObjectURL(blob);
    const anchor = h('a', { href: url, download: `lexec-spend-by-${controls.elements.by.value}.csv` });
    document.body.append(anchor);
    anchor.click();
    anchor.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (error) {
    output.prepend(h('p', { class: 'error' }, error.message));
  }
}

controls.addEventListener('submit', (event) => {
  event.preventDefault();
  void show();
});
controls.addEventListener('change', () => void show());
document.getElementById('spend-csv').addEventListener('click', () => void download());
if (sessionStorage.getItem(SESSION_KEY) !== null) {
  setInterval(() => void show(), REFRESH_MS);
  await show();
}
