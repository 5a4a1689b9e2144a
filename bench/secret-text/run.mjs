// Benchmark: how long the secret-shape rules (src/domain/secret-text.ts) take on long adversarial
// texts — the inputs a backtracking pattern would take quadratic (or worse) time on. Prints
// figures; asserts nothing about timings (test/unit/secret-text.test.ts proves the answers).
//
//   npm run build && node bench/secret-text/run.mjs [--runs N]      (from the repository root)
//
// For each shape of text, at 10,000, 20,000 and 40,000 characters: the median of N runs (default
// 21) of containsSecretShape and of redactSecretShapes, and how the time grows from one length to
// twice it (about 2× is linear; about 4× would be quadratic).
import { containsSecretShape, redactSecretShapes } from '../../dist/domain/secret-text.js';

const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt === -1 ? 21 : Number(args[runsAt + 1]);
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write('usage: node bench/secret-text/run.mjs [--runs N]\n');
  process.exit(2);
}

const shapes = {
  'Bearer a…': (n) => `Bearer ${'a'.repeat(n)}`,
  'Authorization: 1…': (n) => `Authorization: ${'1'.repeat(n)}`,
  'sk-sk-…': (n) => 'sk-'.repeat(Math.ceil(n / 3)),
  'key ab1.…': (n) => `key ${'ab1.'.repeat(Math.ceil(n / 4))}`,
};
const LENGTHS = [10_000, 20_000, 40_000];

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function time(fn, text) {
  const samples = [];
  for (let i = 0; i < runs; i += 1) {
    const started = process.hrtime.bigint();
    fn(text);
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return median(samples);
}

const result = [];
process.stdout.write(`secret-text: median of ${runs} runs, ms (growth from the length before)\n`);
process.stdout.write(`${'text'.padEnd(28)}${LENGTHS.map((n) => `${n} chars`.padStart(24)).join('')}\n`);
for (const [name, make] of Object.entries(shapes)) {
  for (const [label, fn] of [['contains', containsSecretShape], ['redact', redactSecretShapes]]) {
    let previous = null;
    const cells = LENGTHS.map((n) => {
      const ms = time(fn, make(n));
      result.push({ text: name, rule: label, chars: n, median_ms: Number(ms.toFixed(3)) });
      const cell = `${ms.toFixed(3)}${previous === null ? '' : ` (${(ms / previous).toFixed(1)}×)`}`;
      previous = ms;
      return cell.padStart(24);
    });
    process.stdout.write(`${`${name} ${label}`.padEnd(28)}${cells.join('')}\n`);
  }
}
process.stdout.write(`RESULT ${JSON.stringify({ benchmark: 'secret-text', runs, results: result })}\n`);
