import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { runLexec } from '../support/cli.js';

/** A Node.js older than 22 on this machine (the OS package is 20 here), or null. */
function findOldNode(): string | null {
  for (const candidate of ['/usr/bin/node', '/bin/node', '/usr/local/bin/node']) {
    try {
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      if (Number.parseInt(version.slice(1), 10) < 22) return candidate;
    } catch {
      // not installed there
    }
  }
  return null;
}

const oldNode = findOldNode();

describe('started on an older Node.js', () => {
  it.skipIf(oldNode === null)('exits 1 with one clear line naming the required version and no stack trace', async () => {
    const run = await runLexec(['version', '--json'], { node: oldNode ?? '' });
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^lexec requires Node\.js >= 22; this is Node\.js 2\d\.\d+\.\d+\./);
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});
