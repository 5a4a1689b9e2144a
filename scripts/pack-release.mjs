// Packs a release tarball of lexec from the committed HEAD, and checks the tarball itself.
//
//   npm run pack:release                     (or: node scripts/pack-release.mjs [--out DIR])
//
// Refuses a tree with uncommitted changes (and names them), and a node_modules that is not what
// the lock file locks (the build compiles and bundles with it). Builds in a temporary checkout of
// HEAD, never in this tree, so the working tree's dist/ (which tests and a running stack use) is
// left alone: `scripts/build.mjs --release` there, then `npm pack --ignore-scripts` (so `prepare`
// cannot rebuild it as a development build). The tarball goes to release/ (ignored by git, so the
// tree stays clean for the next release); its path is the one line on stdout, progress goes to
// stderr. The tarball is then opened and checked: release stamp with the full HEAD commit, a
// manifest without lifecycle scripts, LICENSE, no source maps, and every relative link of the
// shipped Markdown pointing at a shipped file. A tarball that fails a check is deleted.
import { execFileSync } from 'node:child_process';
import { constants, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const USAGE = 'usage: node scripts/pack-release.mjs [--out DIR (default: release/)]';

/** Manifest fields that act only in a development checkout; the packed package.json drops them. */
const DEVELOPMENT_ONLY_FIELDS = ['scripts', 'devDependencies', 'allowScripts', 'overrides'];

function fail(message) {
  process.stderr.write(`pack-release: ${message}\n`);
  process.exit(1);
}

/** A check the release failed: reported as it is, without a stack. */
class ReleaseRefusal extends Error {}

function progress(message) {
  process.stderr.write(`pack-release: ${message}\n`);
}

function parseArgs(argv) {
  let out = join(root, 'release');
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    if (arg === '--out' || arg.startsWith('--out=')) {
      const value = arg === '--out' ? argv[++index] : arg.slice('--out='.length);
      if (!value) fail(`--out needs a directory; ${USAGE}`);
      out = resolve(value);
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else {
      fail(`unknown argument ${JSON.stringify(arg)}; ${USAGE}`);
    }
  }
  return { out };
}

function run(command, args, cwd) {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 }).trim();
}

/** The HEAD commit of this repository; refuses a tree with changes, naming them. */
function cleanHead() {
  let status;
  let head;
  try {
    status = run('git', ['status', '--porcelain', '--untracked-files=all'], root);
    head = run('git', ['rev-parse', 'HEAD'], root);
  } catch {
    fail('a release is packed from a git checkout of lexec with at least one commit.');
  }
  if (status !== '') {
    const lines = status.split('\n');
    const shown = lines.slice(0, 20).map((line) => `  ${line}`);
    if (lines.length > 20) shown.push(`  … and ${lines.length - 20} more`);
    fail(`the tree has changes that are not committed, so a release of HEAD would not be what is here:\n${shown.join('\n')}\nCommit or stash them, then run this again.`);
  }
  return head;
}

/**
 * What in node_modules differs from the committed package-lock.json (the build bundles the
 * Temporal workflow code from node_modules, so a release is built only from the locked versions).
 */
function nodeModulesDrift(commit) {
  const locked = JSON.parse(run('git', ['show', `${commit}:package-lock.json`], root)).packages;
  let installed;
  try {
    installed = JSON.parse(readFileSync(join(root, 'node_modules', '.package-lock.json'), 'utf8')).packages;
  } catch {
    return ['node_modules/.package-lock.json is missing or unreadable'];
  }
  const drift = [];
  for (const [path, entry] of Object.entries(locked)) {
    if (path === '') continue;
    const there = installed[path];
    if (there === undefined && !entry.optional) drift.push(`${path}: locked ${entry.version}, not installed`);
    if (there !== undefined && there.version !== entry.version) drift.push(`${path}: locked ${entry.version}, installed ${there.version}`);
  }
  for (const path of Object.keys(installed)) if (!(path in locked)) drift.push(`${path}: installed, not in the lock file`);
  return drift;
}

/** A checkout of exactly `commit` in `dir`, sharing this tree's node_modules (read only). */
function checkout(commit, dir) {
  run('git', ['init', '-q', dir]);
  run('git', ['fetch', '-q', '--depth', '1', pathToFileURL(root).href, commit], dir);
  run('git', ['-c', 'advice.detachedHead=false', 'checkout', '-q', '--detach', 'FETCH_HEAD'], dir);
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
}

/**
 * The manifest that is packed: what acts only in a development checkout dropped, and each direct
 * dependency pinned to the exact version the commit's lock file tested. A global install of a
 * tarball reads no lock file, so ranges would install whatever is newest on the day; pinned, the
 * packages lexec calls are the ones its tests ran (their own dependencies still resolve by range).
 */
function writePackedManifest(dir) {
  const path = join(dir, 'package.json');
  const manifest = JSON.parse(readFileSync(path, 'utf8'));
  const locked = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')).packages ?? {};
  for (const field of DEVELOPMENT_ONLY_FIELDS) delete manifest[field];
  for (const name of Object.keys(manifest.dependencies ?? {})) {
    const version = locked[`node_modules/${name}`]?.version;
    if (typeof version !== 'string') throw new ReleaseRefusal(`dependency ${name} is not in package-lock.json; run \`npm install\` and commit the lock file.`);
    manifest.dependencies[name] = version;
  }
  writeFileSync(path, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** Relative Markdown link targets of `text` (a file's own anchors and absolute URLs left out). */
function relativeLinks(text) {
  const targets = [];
  for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1].split('#')[0];
    if (target !== '' && !/^[a-z][a-z0-9+.-]*:/i.test(target)) targets.push(target);
  }
  return targets;
}

/** Everything wrong with the packed tarball; empty when it is a good release of `commit`. */
function tarballProblems(tarball, commit) {
  const problems = [];
  const entries = new Set(run('tar', ['-tzf', tarball]).split('\n').map((entry) => entry.replace(/^package\//, '')));
  const read = (name) => (entries.has(name) ? run('tar', ['-xzOf', tarball, `package/${name}`]) : null);

  const stamp = read('dist/build-stamp.json');
  const parsedStamp = stamp === null ? null : JSON.parse(stamp);
  if (parsedStamp?.build_kind !== 'release') problems.push(`dist/build-stamp.json says build_kind ${JSON.stringify(parsedStamp?.build_kind ?? null)}, not "release"`);
  if (parsedStamp?.commit !== commit) problems.push(`dist/build-stamp.json says commit ${JSON.stringify(parsedStamp?.commit ?? null)}, not ${commit}`);

  const manifest = JSON.parse(read('package.json') ?? '{}');
  for (const field of DEVELOPMENT_ONLY_FIELDS) if (field in manifest) problems.push(`package.json still has "${field}"`);
  for (const required of ['LICENSE', 'README.md', 'oclif.manifest.json', 'bin/run.js']) if (!entries.has(required)) problems.push(`${required} is missing`);

  const maps = [...entries].filter((entry) => entry.endsWith('.map'));
  if (maps.length > 0) problems.push(`${maps.length} source maps ship without their sources (e.g. ${maps[0]})`);

  for (const document of [...entries].filter((entry) => entry.endsWith('.md'))) {
    for (const target of relativeLinks(read(document))) {
      const linked = posix.normalize(posix.join(posix.dirname(document), target));
      if (!entries.has(linked) && ![...entries].some((entry) => entry.startsWith(`${linked.replace(/\/$/, '')}/`))) {
        problems.push(`${document} links to ${target}, which is not in the package`);
      }
    }
  }
  return problems;
}

const { out } = parseArgs(process.argv.slice(2));
if (!existsSync(join(root, 'node_modules'))) fail('node_modules is missing; run `npm ci` first.');
const commit = cleanHead();
const drift = nodeModulesDrift(commit);
if (drift.length > 0) {
  const shown = drift.slice(0, 10).map((line) => `  ${line}`);
  if (drift.length > 10) shown.push(`  … and ${drift.length - 10} more`);
  fail(`node_modules is not what package-lock.json locks, and a release is built only from the locked versions:\n${shown.join('\n')}\nRun \`npm ci\`, then this again.`);
}
const work = mkdtempSync(join(tmpdir(), 'lexec-release-'));
try {
  progress(`building ${commit} (release) in ${work}`);
  const source = join(work, 'lexec');
  checkout(commit, source);
  execFileSync(process.execPath, [join(source, 'scripts', 'build.mjs'), '--release'], { cwd: source, stdio: ['ignore', 2, 2] });
  writePackedManifest(source);
  // Packed and checked beside the build; only a good tarball reaches `out`, named by its commit
  // too, and never over another: a release already packed is kept as it is.
  const packedDir = join(work, 'packed');
  mkdirSync(packedDir);
  const packed = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packedDir], source));
  const problems = tarballProblems(join(packedDir, packed[0].filename), commit);
  if (problems.length > 0) {
    throw new ReleaseRefusal(`the packed tarball is not a good release, so it was deleted:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
  }
  mkdirSync(out, { recursive: true });
  const tarball = join(out, packed[0].filename.replace(/\.tgz$/, `-${commit.slice(0, 12)}.tgz`));
  try {
    copyFileSync(join(packedDir, packed[0].filename), tarball, constants.COPYFILE_EXCL);
  } catch (error) {
    if (error?.code === 'EEXIST') throw new ReleaseRefusal(`${tarball} already exists (this commit was packed before); it is kept as it is: remove it to pack again.`);
    throw error;
  }
  progress(`${packed[0].entryCount} files, ${packed[0].size} bytes packed (${packed[0].unpackedSize} unpacked); release ${commit}`);
  progress(`install it with: npm install -g --ignore-scripts ${tarball}`);
  process.stdout.write(`${tarball}\n`);
} catch (error) {
  // A failed step's own stderr says why (tsc's errors, npm's, git's).
  const stderr = error instanceof ReleaseRefusal ? '' : (error?.stderr?.toString().trim() ?? '');
  process.stderr.write(`pack-release: ${error instanceof Error ? error.message : String(error)}${stderr ? `\n${stderr}` : ''}\n`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
