// Builds lexec: compiles src/ to dist/ with tsc, stamps the source commit and build kind into
// dist/build-stamp.json, bundles the Temporal workflow code, and generates oclif.manifest.json so the CLI starts without loading
// every command. Runs from `prepare`, so `npm ci` leaves a runnable CLI.
//
//   node scripts/build.mjs            development build (commit stamped when known)
//   node scripts/build.mjs --release  release build: requires a clean git tree at a known commit;
//                                     no source maps (scripts/pack-release.mjs packs it)
import { execFileSync } from 'node:child_process';
import { cpSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const release = process.argv.includes('--release');
const require = createRequire(import.meta.url);

function fail(message) {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** The commit of this package's own git checkout; null when not built from one. */
function sourceCommit() {
  const top = git(['rev-parse', '--show-toplevel']);
  // Only this package's own repository counts: an installed copy inside someone else's
  // repository must not be stamped with their commit.
  if (top === null || realpathSync(top) !== realpathSync(root)) return null;
  const commit = git(['rev-parse', 'HEAD']);
  if (commit === null || !/^[0-9a-f]{40}$/.test(commit)) return null;
  const status = git(['status', '--porcelain']);
  return { commit, clean: status === '' };
}

const source = sourceCommit();
if (release && source === null) fail('a release build needs a git checkout of lexec at a known commit.');
if (release && !source.clean) fail('a release build needs a clean git tree (commit or stash your changes).');

rmSync(join(root, 'dist'), { recursive: true, force: true });
rmSync(join(root, 'oclif.manifest.json'), { force: true });

// A release ships no source maps: they would point at src/, which the package does not ship
// (docs/decisions.md "Release tarball"). Development builds keep them.
const tscArgs = ['-p', join(root, 'tsconfig.build.json'), ...(release ? ['--sourceMap', 'false'] : [])];
try {
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), ...tscArgs], {
    cwd: root,
    stdio: 'inherit',
  });
} catch {
  fail('TypeScript compilation failed.');
}

// The Temporal workflow code, bundled once here and shipped in dist/ (never bundled per execution).
try {
  const { writeWorkflowBundle } = await import(join(root, 'dist', 'executor', 'engine', 'temporal', 'workflow-bundle.js'));
  await writeWorkflowBundle();
} catch (error) {
  fail(`bundling the Temporal workflow failed: ${error instanceof Error ? error.message : String(error)}`);
}

// The operator console's browser files (a script, a stylesheet) are not TypeScript: copied as they are.
cpSync(join(root, 'src', 'console', 'assets'), join(root, 'dist', 'console', 'assets'), { recursive: true });

const stamp = source === null ? null : { commit: source.commit, build_kind: release ? 'release' : 'development' };
if (stamp !== null) writeFileSync(join(root, 'dist', 'build-stamp.json'), `${JSON.stringify(stamp, null, 2)}\n`);

const { Plugin } = await import('@oclif/core');
const plugin = new Plugin({ root, type: 'core', isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
await plugin.load();
writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify(plugin.manifest, null, 2)}\n`);

const commands = Object.keys(plugin.manifest.commands ?? {}).length;
process.stderr.write(
  `build: ${commands} commands; ${stamp === null ? 'unstamped (commit unknown, development)' : `commit ${stamp.commit} (${stamp.build_kind})`}\n`,
);
