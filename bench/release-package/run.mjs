// Benchmark: what a release costs a user. Prints figures; asserts nothing about them and exits 0
// whatever they are (a non-zero exit means the benchmark itself could not run).
//
//   node bench/release-package/run.mjs [--tarball PATH] [--runs N] [--warmup N]   (from the repository root)
//   npm run bench:release-package -- --runs 40
//
// Without --tarball it packs one first with scripts/pack-release.mjs (which needs a clean tree).
// It installs the tarball as the README says (`npm install -g --ignore-scripts`, here into a
// temporary prefix, with --prefer-offline) and reports:
//   - the tarball's size, and the installed package's size (lib/node_modules/lexec: apparent
//     bytes and disk usage, files, packages), and the install's wall time (information: it
//     depends on the npm cache and the network);
//   - wall time of `lexec version --json` from the installed package beside the repository's own
//     build (`node bin/run.js version --json`), and `node -e 0`: each a fresh `node` process with
//     only PATH and HOME, started in an empty directory outside the repository, interleaved
//     round-robin after W warm-up rounds (default 3), N measured rounds (default 30).
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/measure.mjs';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const USAGE = 'usage: node bench/release-package/run.mjs [--tarball PATH] [--runs N (default 30)] [--warmup N (default 3)]';

function fail(message) {
  process.stderr.write(`bench/release-package: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const options = { tarball: null, runs: 30, warmup: 3 };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (name === '--tarball') {
      const value = inline ?? argv[++index];
      if (!value) fail(`--tarball needs a path; ${USAGE}`);
      options.tarball = resolve(value);
    } else if (name === '--runs' || name === '--warmup') {
      const value = inline ?? argv[++index];
      const minimum = name === '--runs' ? 1 : 0;
      if (value === undefined || !/^\d+$/.test(value) || Number(value) < minimum) fail(`${name} needs a whole number >= ${minimum}; ${USAGE}`);
      options[name.slice(2)] = Number(value);
    } else if (name === '--help' || name === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      fail(`unknown argument ${JSON.stringify(arg)}; ${USAGE}`);
    }
  }
  return options;
}

/** Apparent bytes, disk bytes (allocated blocks) and regular files under `dir`, links not followed. */
function treeSize(dir) {
  const total = { bytes: 0, disk_bytes: 0, files: 0 };
  for (const entry of readdirSync(dir, { recursive: true })) {
    const stat = lstatSync(join(dir, String(entry)));
    total.disk_bytes += stat.blocks * 512;
    if (stat.isFile()) {
      total.bytes += stat.size;
      total.files += 1;
    }
  }
  return total;
}

/** Installed packages: every package.json directly inside a node_modules/<name> or node_modules/@scope/<name>. */
function packageCount(dir) {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((entry) => /(^|\/)node_modules\/(@[^/]+\/)?[^/@]+\/package\.json$/.test(entry)).length;
}

function median(sorted) {
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const round2 = (value) => Math.round(value * 100) / 100;

// ---------------------------------------------------------------------------------------------

const options = parseArgs(process.argv.slice(2));
if (!existsSync(join(root, 'dist')) || !existsSync(join(root, 'oclif.manifest.json'))) fail('dist/ or oclif.manifest.json missing; run `npm run build` first.');

let tarball = options.tarball;
if (tarball === null) {
  process.stderr.write('bench/release-package: packing a release (scripts/pack-release.mjs)\n');
  const pack = spawnSync(process.execPath, [join(root, 'scripts', 'pack-release.mjs')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (pack.status !== 0) fail('packing the release failed (see above); or give an existing one with --tarball.');
  tarball = pack.stdout.trim();
}
if (!existsSync(tarball)) fail(`no tarball at ${tarball}.`);

const work = mkdtempSync(join(tmpdir(), 'lexec-bench-release-'));
try {
  const prefix = join(work, 'prefix');
  const cwd = join(work, 'empty');
  mkdirSync(cwd, { recursive: true });
  process.stderr.write(`bench/release-package: installing ${tarball} into ${prefix}\n`);
  const installStart = process.hrtime.bigint();
  const install = spawnSync('npm', ['install', '-g', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball], { cwd, encoding: 'utf8' });
  const installMs = Number(process.hrtime.bigint() - installStart) / 1e6;
  if (install.status !== 0) fail(`npm install -g failed:\n${install.stderr}`);
  if (/install-scripts/.test(install.stderr)) process.stderr.write(`bench/release-package: npm warned about install scripts:\n${install.stderr}\n`);

  const installed = join(prefix, 'lib', 'node_modules', 'lexec');
  const installedBin = realpathSync(join(prefix, 'bin', 'lexec'));
  const size = treeSize(installed);
  const packages = packageCount(installed);
  const tarballBytes = statSync(tarball).size;

  const env = {};
  for (const name of ['PATH', 'HOME']) if (process.env[name] !== undefined) env[name] = process.env[name];
  const cases = [
    { id: 'installed_version_json', label: 'installed lexec version --json', args: [installedBin, 'version', '--json'] },
    { id: 'repository_version_json', label: 'repository lexec version --json', args: [join(root, 'bin', 'run.js'), 'version', '--json'] },
    { id: 'node_e0', label: 'node -e 0', args: ['-e', '0'] },
  ].map((kase) => ({ ...kase, samples: [] }));

  const runOnce = (kase) => {
    const start = process.hrtime.bigint();
    const result = spawnSync(process.execPath, kase.args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) fail(`${kase.label} exited ${result.status ?? result.signal}:\n${result.stderr}`);
    if (kase.id !== 'node_e0' && JSON.parse(result.stdout.toString()).ok !== true) fail(`${kase.label} did not print a successful envelope.`);
    return elapsed;
  };
  const rotate = (round) => cases.map((_, index) => cases[(index + round) % cases.length]);
  for (let round = 0; round < options.warmup; round += 1) for (const kase of rotate(round)) runOnce(kase);
  for (let round = 0; round < options.runs; round += 1) for (const kase of rotate(round)) kase.samples.push(runOnce(kase));
  for (const kase of cases) {
    const sorted = [...kase.samples].sort((a, b) => a - b);
    kase.median = median(sorted);
    kase.p90 = percentile(sorted, 90);
  }
  const repository = cases.find((kase) => kase.id === 'repository_version_json');

  const cpuList = cpus();
  const facts = { node: process.version, cpus: cpuList.length, cpu_model: cpuList[0]?.model?.trim() ?? null, platform: `${process.platform}-${process.arch}`, runs: options.runs, warmup: options.warmup };
  const lines = [
    `Release package — ${facts.node}, ${facts.cpus} CPUs (${facts.cpu_model ?? 'unknown CPU'}), ${facts.platform}`,
    `tarball    ${tarball}: ${(tarballBytes / 1000).toFixed(1)} kB (${tarballBytes} bytes)`,
    `installed  lib/node_modules/lexec: ${mib(size.bytes)} apparent, ${mib(size.disk_bytes)} on disk, ${size.files} files, ${packages} packages`,
    `install    npm install -g --ignore-scripts --prefer-offline: ${(installMs / 1000).toFixed(1)} s`,
    '',
    `${facts.runs} measured runs per case after ${facts.warmup} warm-up runs, interleaved round-robin, cwd outside the repository`,
    ...cases.map((kase) => `${kase.label.padEnd(33)} median ${kase.median.toFixed(1).padStart(6)} ms  p90 ${kase.p90.toFixed(1).padStart(6)} ms  x repository ${(kase.median / repository.median).toFixed(2)}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const result = {
    benchmark: 'release-package',
    ...facts,
    tarball_bytes: tarballBytes,
    installed: { ...size, packages },
    install_ms: round2(installMs),
    cases: cases.map((kase) => ({ id: kase.id, median_ms: round2(kase.median), p90_ms: round2(kase.p90), ratio_to_repository: round2(kase.median / repository.median) })),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
