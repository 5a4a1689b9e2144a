import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { runLexec, type CliRun } from '../../support/cli.js';

/*
 * Shared by the launcher foundation and doctor tests: the CLI with a home, processes that hold
 * locks and ports, tree snapshots. Example profiles and free ports: test/support/example-profiles.ts.
 */

/** Runs the built binary with `LEXEC_HOME=home`; `json` parses stdout when it holds the envelope. */
export async function lexec(home: string, args: readonly string[], env: Record<string, string> = {}): Promise<CliRun & { json: JsonEnvelope | null }> {
  const run = await runLexec(args, { env: { LEXEC_HOME: home, ...env }, home });
  let json: JsonEnvelope | null = null;
  if (args.includes('--json')) json = JSON.parse(run.stdout) as JsonEnvelope;
  return { ...run, json };
}

export interface JsonEnvelope {
  json_version: number;
  command: string;
  ok: boolean;
  result?: Record<string, unknown>;
  error?: { kind: string; code: string; message: string; next_step: string; issues: { path: string; message: string }[] };
}

/**
 * A real child process that stays alive until stopped: used as the owner of a lock file (a
 * running supervisor, a launcher command) or as a port holder. `script` runs with `node -e`.
 */
export async function startChild(
  script = 'setInterval(() => {}, 1000);',
  args: readonly string[] = [],
): Promise<{ child: ChildProcess; pid: number; firstOutput: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['-e', script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      resolve(code);
    });
  });
  // A script that prints READY is ready when it says so; any other once it was spawned.
  const ready = new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    if (script.includes('READY')) {
      child.stdout.setEncoding('utf8');
      child.stdout.once('data', (chunk: string) => {
        resolve(chunk);
      });
    } else {
      child.once('spawn', () => {
        resolve('');
      });
    }
  });
  const firstOutput = await Promise.race([
    ready,
    exited.then((code) => {
      throw new Error(`child exited early (${code})`);
    }),
  ]);
  if (child.pid === undefined) throw new Error('child has no pid');
  return {
    child,
    pid: child.pid,
    firstOutput,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** A child process listening on the given loopback ports; prints READY once all listen. */
export function listenScript(ports: readonly number[]): string {
  return `const net = require('node:net'); let n = 0; const ports = ${JSON.stringify(ports)};
for (const port of ports) net.createServer().listen({ port, host: '127.0.0.1' }, () => { if (++n === ports.length) process.stdout.write('READY\\n'); });
setInterval(() => {}, 1000);`;
}

/** Every entry under `dir` with its type, size, modification time and mode: equal snapshots mean nothing changed. */
export async function snapshotTree(dir: string): Promise<Record<string, string>> {
  const { lstat, readdir } = await import('node:fs/promises');
  const snapshot: Record<string, string> = {};
  const visit = async (path: string, relative: string): Promise<void> => {
    const info = await lstat(path);
    const type = info.isDirectory() ? 'dir' : info.isFile() ? 'file' : info.isSymbolicLink() ? 'link' : 'other';
    // A directory's size and mtime change when an entry is added or removed, so they are kept too.
    snapshot[relative || '.'] = `${type} ${(info.mode & 0o7777).toString(8)} ${info.size} ${info.mtimeMs}`;
    if (info.isDirectory()) for (const entry of (await readdir(path)).sort()) await visit(join(path, entry), relative ? `${relative}/${entry}` : entry);
  };
  await visit(dir, '');
  return snapshot;
}

/**
 * A stand-in supervisor: a process that starts one child per port, each listening on it like a
 * stack component, prints the children's pids as one JSON line, and stops them on SIGTERM.
 */
export function fakeSupervisorScript(ports: readonly number[]): string {
  return `const { spawn } = require('node:child_process');
const ports = ${JSON.stringify(ports)}; const kids = []; let ready = 0;
for (const port of ports) {
  const kid = spawn(process.execPath, ['-e', "require('node:net').createServer().listen({ port: " + port + ", host: '127.0.0.1' }, () => process.stdout.write('up')); setInterval(() => {}, 1000);"], { stdio: ['ignore', 'pipe', 'inherit'] });
  kids.push(kid);
  kid.stdout.once('data', () => { if (++ready === ports.length) process.stdout.write(JSON.stringify(kids.map((k) => k.pid)) + '\\n'); });
}
process.on('SIGTERM', () => { let left = kids.length; for (const kid of kids) { kid.once('exit', () => { if (--left === 0) process.exit(0); }); kid.kill('SIGTERM'); } });
setInterval(() => {}, 1000); // READY is the pid line`;
}
