// Benchmark: wall time of CLI startup. Prints figures; asserts nothing about timings and exits 0
// whatever they are (a non-zero exit means the benchmark itself could not run).
//
//   node bench/cli-startup/run.mjs [--runs N] [--warmup N]     (from the repository root)
//   npm run bench:cli-startup -- --runs 40
//
// Cases, each a fresh `node` process spawned with a minimal environment (PATH, HOME):
//   lexec version --json   node bin/run.js version --json
//   lexec --help           node bin/run.js --help
//   minimal oclif command  node bench/cli-startup/minimal-cli/bin/run.js hello
//                          (a one-command oclif CLI using the same @oclif/core: the floor any oclif CLI pays)
//   node -e 0              bare Node.js start
//
// After W warm-up rounds (default 3), N measured rounds (default 30) run the cases interleaved
// round-robin, rotating which case goes first each round, so machine noise hits them equally.
// Reported per case: median and p90 wall time, and the median's ratio to the minimal oclif command
// and to `node -e 0`. Target (information only): `lexec version --json` within 1.3x of the
// minimal oclif command's median.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/measure.mjs';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(dirname(benchDir));
const fixtureRoot = join(benchDir, 'minimal-cli');
const TARGET_RATIO = 1.3;

function fail(message) {
  process.stderr.write(`bench/cli-startup: ${message}\n`);
  process.exit(1);
}

function parseCount(name, value, minimum) {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < minimum) {
    fail(`${name} needs a whole number >= ${minimum} (got ${value === undefined ? 'nothing' : JSON.stringify(value)}).`);
  }
  return Number(value);
}

function parseArgs(argv) {
  const options = { runs: 30, warmup: 3 };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (name === '--runs' || name === '--warmup') {
      const value = inline ?? argv[++index];
      options[name.slice(2)] = parseCount(name, value, name === '--runs' ? 1 : 0);
    } else if (name === '--help' || name === '-h') {
      process.stdout.write('usage: node bench/cli-startup/run.mjs [--runs N (default 30)] [--warmup N (default 3)]\n');
      process.exit(0);
    } else {
      fail(`unknown argument ${JSON.stringify(arg)}; usage: node bench/cli-startup/run.mjs [--runs N] [--warmup N]`);
    }
  }
  return options;
}

/** Generates the fixture's oclif.manifest.json the way scripts/build.mjs does for lexec. */
async function writeFixtureManifest() {
  let Plugin;
  try {
    ({ Plugin } = await import('@oclif/core'));
  } catch (error) {
    fail(`cannot load @oclif/core from the repository's node_modules (${error.message}); run \`npm ci\` first.`);
  }
  const plugin = new Plugin({ root: fixtureRoot, type: 'core', isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
  await plugin.load();
  if (!plugin.manifest.commands?.hello) fail('the minimal fixture CLI manifest has no `hello` command.');
  writeFileSync(join(fixtureRoot, 'oclif.manifest.json'), `${JSON.stringify(plugin.manifest, null, 2)}\n`);
}

function minimalEnv() {
  const env = {};
  for (const name of ['PATH', 'HOME']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

const env = minimalEnv();

/** Spawns one case once; returns wall milliseconds. Aborts unless the process exited 0. */
function runOnce(kase, check) {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, kase.args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 * 1024 * 1024 });
  const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.error) fail(`${kase.label}: could not spawn \`${kase.display}\`: ${result.error.message}`);
  if (result.status !== 0) {
    const why = result.signal ? `was killed by ${result.signal}` : `exited ${result.status}`;
    const stderr = result.stderr.toString().trim();
    fail(`${kase.label}: \`${kase.display}\` ${why}; the benchmark needs every run to succeed.${stderr ? `\nstderr:\n${stderr}` : ''}`);
  }
  if (check) {
    const problem = kase.check?.(result.stdout.toString());
    if (problem) fail(`${kase.label}: \`${kase.display}\` ran but ${problem}`);
  }
  return elapsed;
}

function jsonLine(predicate, what) {
  return (stdout) => {
    let doc;
    try {
      doc = JSON.parse(stdout);
    } catch {
      return `did not print one JSON document on stdout (got ${JSON.stringify(stdout.slice(0, 200))}).`;
    }
    return predicate(doc) ? null : `printed JSON that is not ${what}.`;
  };
}

function median(sorted) {
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}


const round2 = (value) => Math.round(value * 100) / 100;
const round3 = (value) => Math.round(value * 1000) / 1000;

// ---------------------------------------------------------------------------------------------

const options = parseArgs(process.argv.slice(2));

const missing = ['dist', 'oclif.manifest.json'].filter((name) => !existsSync(join(root, name)));
if (missing.length > 0) fail(`${missing.join(' and ')} missing in ${root}; run \`npm run build\` first.`);

await writeFixtureManifest();

const fixtureBin = relative(root, join(fixtureRoot, 'bin', 'run.js'));
const cases = [
  {
    id: 'lexec_version_json',
    label: 'lexec version --json',
    args: ['bin/run.js', 'version', '--json'],
    check: jsonLine((doc) => doc.ok === true && doc.command === 'version', 'a successful `version` envelope'),
  },
  { id: 'lexec_help', label: 'lexec --help', args: ['bin/run.js', '--help'], check: (out) => (out.includes('USAGE') ? null : 'printed no USAGE section.') },
  { id: 'minimal_oclif', label: 'minimal oclif command', args: [fixtureBin, 'hello'], check: jsonLine((doc) => doc.hello === 'world', '{"hello":"world"}') },
  { id: 'node_e0', label: 'node -e 0', args: ['-e', '0'] },
];
for (const kase of cases) {
  kase.display = `node ${kase.args.join(' ')}`;
  kase.samples = [];
}

// Every case once with its output checked, so a broken case fails fast and clearly.
for (const kase of cases) runOnce(kase, true);

const rotate = (round) => cases.map((_, index) => cases[(index + round) % cases.length]);
for (let round = 0; round < options.warmup; round += 1) for (const kase of rotate(round)) runOnce(kase, false);
for (let round = 0; round < options.runs; round += 1) {
  for (const kase of rotate(round)) kase.samples.push(runOnce(kase, false));
}

for (const kase of cases) {
  const sorted = [...kase.samples].sort((a, b) => a - b);
  kase.median = median(sorted);
  kase.p90 = percentile(sorted, 90);
}
const baseline = cases.find((kase) => kase.id === 'minimal_oclif');
const bare = cases.find((kase) => kase.id === 'node_e0');
const target = cases.find((kase) => kase.id === 'lexec_version_json');
for (const kase of cases) {
  kase.ratioMinimal = kase.median / baseline.median;
  kase.ratioNode = kase.median / bare.median;
}
const targetRatio = target.ratioMinimal;
const status = targetRatio <= TARGET_RATIO ? 'PASS' : 'OVER';

const cpuList = cpus();
const facts = {
  node: process.version,
  cpus: cpuList.length,
  cpu_model: cpuList[0]?.model?.trim() ?? null,
  platform: `${process.platform}-${process.arch}`,
  runs: options.runs,
  warmup: options.warmup,
};

const header = ['case', 'median ms', 'p90 ms', 'x minimal oclif', 'x node -e 0'];
const rows = cases.map((kase) => [kase.label, kase.median.toFixed(1), kase.p90.toFixed(1), kase.ratioMinimal.toFixed(2), kase.ratioNode.toFixed(2)]);
const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
const format = (row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');

const lines = [
  `CLI startup wall time — ${facts.node}, ${facts.cpus} CPUs (${facts.cpu_model ?? 'unknown CPU'}), ${facts.platform}`,
  `${facts.runs} measured run${facts.runs === 1 ? '' : 's'} per case after ${facts.warmup} warm-up run${facts.warmup === 1 ? '' : 's'}, interleaved round-robin`,
  '',
  format(header),
  format(widths.map((width) => '-'.repeat(width))),
  ...rows.map(format),
  '',
  `target: lexec version --json within ${TARGET_RATIO}x of the minimal oclif command's median: ${targetRatio.toFixed(2)}x ${status} (information only)`,
];
process.stdout.write(`${lines.join('\n')}\n`);

const result = {
  benchmark: 'cli-startup',
  ...facts,
  cases: cases.map((kase) => ({
    id: kase.id,
    command: kase.display,
    median_ms: round2(kase.median),
    p90_ms: round2(kase.p90),
    ratio_to_minimal_oclif: round3(kase.ratioMinimal),
    ratio_to_node: round3(kase.ratioNode),
  })),
  target: { case: target.id, baseline: baseline.id, max_ratio: TARGET_RATIO, ratio: round3(targetRatio), status },
};
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
