import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_FREE_BYTES } from '../../src/storage/disk-space.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { eventually, jsonResult } from '../support/stack-home.js';

/*
 * Issue 26 item 1: a stack whose LEXEC_HOME is on a full filesystem. The test mounts a small
 * tmpfs of its own (root only), starts the real stack on it, fills it with one file, and looks at
 * what the operator and `lexec run` are told; then frees it and looks at the recovery, and at a
 * start that finds a temporary an artifact write left behind.
 */

// Above the 100 MiB `stack doctor` asks for at start (disk.space).
const TMPFS_BYTES = 160 * 1024 * 1024;

/** Mounts a tmpfs of `bytes` on a new directory; null (with the reason) where that is not allowed. */
async function mountSmallDisk(bytes: number): Promise<{ dir: string } | { skip: string }> {
  if (process.getuid?.() !== 0) return { skip: 'not root: cannot mount a small filesystem' };
  const dir = await makeTempDir('lexec-disk-full-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
    return { dir };
  } catch (error) {
    await removeDir(dir);
    return { skip: `mount -t tmpfs is not allowed here (${error instanceof Error ? error.message.split('\n')[0] : 'failed'})` };
  }
}

const mounted = await mountSmallDisk(TMPFS_BYTES);
const skip = 'skip' in mounted ? mounted.skip : undefined;
if (skip !== undefined) console.warn(`disk-full tests skipped: ${skip}`);

interface StatusJson {
  usable: boolean;
  next_step: string | null;
  components: { name: string; ready: boolean | null; probe_error: string | null }[];
}

let stack: RunningStack;
let home: string;
const filler = () => join(home, 'filler.bin');

async function status(): Promise<StatusJson> {
  return jsonResult<StatusJson>(await stack.lexec(['stack', 'status', '--json']));
}

async function authorizationCount(): Promise<number> {
  const run = await stack.lexec(['ledger', 'authorizations', 'list', '--json']);
  expect(run.exitCode, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { result: { authorizations: unknown[] } }).result.authorizations.length;
}

/** Fills the filesystem until `leave` bytes are available to an unprivileged writer. */
async function fill(leave: number): Promise<void> {
  const space = await statfs(home);
  const available = space.bavail * space.bsize;
  await writeFile(filler(), Buffer.alloc(Math.max(0, available - leave)));
}

async function executorLogLines(): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(stack.paths.logsDir, 'executor.log'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe.skipIf(skip !== undefined)('a stack whose LEXEC_HOME is on a full disk', () => {
  beforeAll(async () => {
    if ('skip' in mounted) return;
    home = mounted.dir;
    stack = await startRunningStack({ home });
  }, 180_000);

  afterAll(async () => {
    if ('skip' in mounted) return;
    try {
      await rm(filler(), { force: true });
      await stack.stop();
    } finally {
      execFileSync('umount', [mounted.dir], { stdio: 'pipe' });
      await removeDir(mounted.dir);
    }
  }, 120_000);

  it('withdraws readiness with disk_full naming the directory; status, the executor log and lexec run say so, and no authorization is requested', async () => {
    expect((await status()).usable).toBe(true);
    const before = await authorizationCount();
    // Below the minimum, with room left for the log lines that say so.
    await fill(MIN_FREE_BYTES / 16);

    const withdrawn = await eventually('status reports the executor not ready: disk_full', async () => {
      const report = await status();
      const executor = report.components.find((component) => component.name === 'executor');
      return executor?.probe_error?.includes('disk_full') === true ? report : undefined;
    });
    expect(withdrawn.usable).toBe(false);
    const executor = withdrawn.components.find((component) => component.name === 'executor');
    expect(executor?.ready).toBe(false);
    expect(executor?.probe_error).toMatch(new RegExp(`^HTTP 503 \\(disk_full: ${home}/`));
    // The ledger writes SQLite too: its health says the same.
    await eventually('the ledger reports disk_full', async () => ((await status()).components.find((component) => component.name === 'ledger')?.probe_error?.includes('disk_full') === true ? true : undefined));
    expect(withdrawn.next_step).toContain('A disk is full');

    const run = await stack.lexec(['run', 'a lighthouse on a full disk', '--count', '2', '--out', join(home, 'out')], { timeoutMs: 120_000 });
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`the disk holding ${home}/\\S+ is full \\(disk_full\\)`));
    expect(run.stderr).toContain('Nothing was requested or spent.');
    const json = await stack.lexec(['run', 'a lighthouse on a full disk', '--out', join(home, 'out'), '--json'], { timeoutMs: 120_000 });
    expect((JSON.parse(json.stdout) as { error: { code: string } }).error.code).toBe('executor_disk_full');
    expect(await authorizationCount()).toBe(before);

    // Said once, at error level, with the condition and the directory.
    const lines = await executorLogLines();
    const errors = lines.filter((line) => line.event === 'executor_disk_full');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ level: 50, reason: 'disk_full' });
    expect(String(errors[0]?.path)).toContain(home);
  });

  it('admits again by itself once there is room', async () => {
    await rm(filler(), { force: true });
    await eventually('the stack is usable again', async () => ((await status()).usable ? true : undefined));
    const lines = await executorLogLines();
    expect(lines.some((line) => line.event === 'executor_disk_space_recovered')).toBe(true);
    const run = await stack.lexec(['run', 'a lighthouse after the disk was freed', '--out', join(home, 'out-2'), '--json'], { timeoutMs: 120_000 });
    expect(run.exitCode, run.stderr).toBe(0);
  });

  it('removes the temporaries an interrupted artifact write left, at executor start', async () => {
    const folder = join(stack.paths.artifactRoot, `exe_${'ab'.repeat(16)}`);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const leftover = join(folder, `00-0123456789abcdef.png.${'c'.repeat(12)}.tmp`);
    const kept = join(folder, 'notes.txt');
    await writeFile(leftover, '');
    await writeFile(kept, 'not a temporary');
    await stack.restart();
    await expect(readFile(leftover)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(kept, 'utf8')).toBe('not a temporary');
    const lines = await executorLogLines();
    expect(lines.some((line) => line.event === 'artifact_temporaries_removed' && line.files === 1)).toBe(true);
  });
});
