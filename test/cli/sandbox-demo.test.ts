import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-demo-test-');
});
afterEach(async () => {
  await removeDir(dir);
});

describe('the README main job (scripts/sandbox-demo.mjs)', () => {
  it('runs a real sandbox generation end to end, saves the PNGs and reports the exact spend', async () => {
    const out = join(dir, 'out');
    const run = await execa(process.execPath, [join(PACKAGE_ROOT, 'scripts', 'sandbox-demo.mjs'), '--out', out, '--count', '3'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: dir },
      extendEnv: false,
      reject: false,
      timeout: 90_000,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { spent_units: string; files: string[] };
    // 3 images x 3/1000 USD.
    expect(result.spent_units).toBe('9000');
    expect(result.files).toHaveLength(3);
    for (const file of result.files) {
      const bytes = await readFile(file);
      expect(bytes.subarray(1, 4).toString('latin1')).toBe('PNG');
    }
    expect(run.stderr).toContain('spent exactly 0.009000 USD (9000 micro-USD)');
    expect(run.stderr + run.stdout).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{43}/);
  }, 120_000);
});
