import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';

/*
 * bench/lib/harness.mjs runs every benchmark and the proof runner (bench/proof/run.mjs). On SIGINT
 * it stops what the script started and exits 130 — also when the script's main() comes back
 * first (what it waited on failed as the services stopped) and its report says a run failed.
 */

let dir: string | null = null;
afterEach(async () => {
  if (dir !== null) await removeDir(dir);
  dir = null;
});

const SCRIPT = (harness: string, workDir: string) => `
import { spawn } from 'node:child_process';
import { runBenchmark } from ${JSON.stringify(harness)};
let calls = 0;
let work = null;
let wake;
const stopped = new Promise((resolve) => (wake = resolve));
await runBenchmark({
  name: 'interrupt',
  parseArgs: () => ({ dir: ${JSON.stringify(workDir)} }),
  // Ready for the signal: the test sends it once this line is out.
  main: async (_options, workDir) => {
    work = workDir;
    // Something pending, as a benchmark's servers are.
    const alive = setInterval(() => undefined, 1000);
    process.stdout.write('ready\\n');
    await stopped;
    clearInterval(alive);
    return { failed: true };
  },
  // The signal's stop is slow; what main() is waiting on fails at once (as a killed stack's command would).
  // While it stops, a service still writes into the work directory (a stopping stack's logs),
  // as a process of its own: removing the directory before the stop is over leaves it behind.
  stop: async () => {
    calls += 1;
    if (calls === 1) {
      const late = 'const fs = require("node:fs"); setTimeout(() => { fs.mkdirSync(process.argv[1] + "/logs", { recursive: true }); fs.writeFileSync(process.argv[1] + "/logs/late.log", "x"); }, 1000);';
      spawn(process.execPath, ['-e', late, work], { stdio: 'ignore' });
      wake();
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  },
  report: (_options, outcome) => (outcome.failed ? 1 : 0),
});
`;

describe('the benchmark harness', () => {
  it('exits 130 on SIGINT even when main() comes back before the signal\'s stop has finished, and removes its directory only after that stop', async () => {
    dir = await makeTempDir('lexec-bench-harness-');
    const harness = pathToFileURL(join(PACKAGE_ROOT, 'bench', 'lib', 'harness.mjs')).href;
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT(harness, dir)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => {
        resolve(code);
      });
    });
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString('utf8').includes('ready')) resolve();
      });
    });
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('bench/interrupt: interrupted by SIGINT');
    // The directory is removed after the stop the signal began, not before it: nothing of it is left.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await readdir(dir)).filter((name) => name.startsWith('lexec-interrupt-'))).toEqual([]);
  });
});
