import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../support/cli.js';
import { destroyStackHome, makeStackHome, storedCapabilities, type StackHome } from '../support/stack-home.js';

let stack: StackHome | undefined;
afterEach(async () => {
  if (stack !== undefined) await destroyStackHome(stack);
  stack = undefined;
});

describe('the README main job (scripts/main-job.sh: lexec stack start, then lexec run)', () => {
  it('starts the sandbox stack, runs a real generation end to end, saves the PNGs and reports the exact spend', async () => {
    // The sandbox profile from the shipped example, on free ports so that test files can run side by side.
    stack = await makeStackHome({ prefix: 'lexec-main-job-' });
    const out = join(stack.home, 'out');
    const run = await execa('bash', [join(PACKAGE_ROOT, 'scripts', 'main-job.sh'), 'a red fox in the snow', '--count', '3', '--out', out, '--json'], {
      cwd: stack.home,
      env: { PATH: process.env.PATH ?? '', HOME: stack.home, LEXEC_HOME: stack.home },
      extendEnv: false,
      reject: false,
      timeout: 150_000,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    // stack start prints its progress on stderr; `lexec run --json` is the one document on stdout.
    const document = JSON.parse(run.stdout) as { ok: boolean; result: { spent: { amount_units: string; currency: string }; files: { path: string }[] } };
    expect(document.ok).toBe(true);
    // 3 images x 3/1000 USD, settled exactly.
    expect(document.result.spent.amount_units).toBe('9000');
    expect(document.result.spent.currency).toBe('USD');
    expect(document.result.files).toHaveLength(3);
    for (const file of document.result.files) {
      expect(file.path.startsWith(out)).toBe(true);
      const bytes = await readFile(file.path);
      expect(bytes.subarray(1, 4).toString('latin1')).toBe('PNG');
    }
    expect(run.stderr).toContain('profile sandbox is ready');
    expect(run.stderr).toContain('npx lexec stack stop');
    for (const capability of await storedCapabilities(stack.paths)) expect(run.stdout + run.stderr).not.toContain(capability);
  }, 180_000);
});
