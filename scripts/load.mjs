// A load generator: keeps the machine busy so that the test suite can be proven on a machine
// that is doing other work (docs/testing.md "A busy machine"; docs/reliability.md "The suite
// under load").
//
//   node scripts/load.mjs [--workers N] [--memory MIB] [--disk MIB] [--seconds S] [-- command …]
//
//   --workers N    CPU-burning threads (default: one per core, os.availableParallelism())
//   --memory MIB   each worker also keeps MIB of memory it rewrites continuously (default 0)
//   --disk MIB     one more thread writes, fsyncs, reads back and deletes a MIB file in a
//                  temporary directory, over and over (default 0: no disk churn)
//   --seconds S    stop after S seconds (default: run until stopped)
//   -- command …   run the command under load; stop when it ends and exit with its exit code
//
// It stops on SIGINT or SIGTERM, when the process that started it exits (its parent pid changes),
// after --seconds, or when the command ends. What it does and why it stopped go to stderr; stdout
// is the command's alone.
import { spawn } from 'node:child_process';
import { closeSync, fsyncSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const USAGE = 'usage: node scripts/load.mjs [--workers N] [--memory MIB] [--disk MIB] [--seconds S] [-- command …]';
const MIB = 1024 * 1024;
const CHUNK = 16 * MIB;

function say(message) {
  process.stderr.write(`load: ${message}\n`);
}

function fail(message) {
  say(`${message}\n${USAGE}`);
  process.exit(2);
}

function parseArgs(argv) {
  const options = { workers: availableParallelism(), memoryMib: 0, diskMib: 0, seconds: null, command: [] };
  const number = (flag, value, min) => {
    const parsed = Number(value);
    if (value === undefined || !Number.isInteger(parsed) || parsed < min) fail(`${flag} needs a whole number >= ${min}`);
    return parsed;
  };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    if (arg === '--') {
      options.command = argv.slice(index + 1);
      if (options.command.length === 0) fail('-- needs a command');
      break;
    }
    if (arg === '--workers') options.workers = number(arg, argv[++index], 0);
    else if (arg === '--memory') options.memoryMib = number(arg, argv[++index], 0);
    else if (arg === '--disk') options.diskMib = number(arg, argv[++index], 0);
    else if (arg === '--seconds') options.seconds = number(arg, argv[++index], 1);
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else fail(`unknown argument ${JSON.stringify(arg)}`);
  }
  return options;
}

/** A worker thread: burns CPU, and rewrites `memoryMib` of memory of its own if asked. */
function cpuWorker({ memoryMib }) {
  const chunks = [];
  let next = 0;
  let x = 1;
  for (;;) {
    // Pure arithmetic keeps one core at 100 %; the thread is terminated from the main thread.
    for (let i = 0; i < 5_000_000; i += 1) x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    if (memoryMib > 0) {
      // A fresh chunk replaces the oldest: allocation, page faults and garbage collection.
      const chunk = Buffer.alloc(Math.min(CHUNK, memoryMib * MIB), x & 0xff);
      if (chunks.length * CHUNK < memoryMib * MIB) chunks.push(chunk);
      else chunks[next++ % chunks.length] = chunk;
    }
  }
}

/** A worker thread: write (with fsync), read back and delete a `diskMib` file, over and over. */
function diskWorker({ diskMib, dir }) {
  const block = Buffer.alloc(MIB, 0x5a);
  for (let round = 0; ; round += 1) {
    const path = join(dir, `churn-${round % 2}`);
    const fd = openSync(path, 'w');
    for (let written = 0; written < diskMib; written += 1) writeSync(fd, block);
    fsyncSync(fd);
    closeSync(fd);
    readFileSync(path);
    unlinkSync(path);
  }
}

if (!isMainThread) {
  const { kind, ...options } = workerData;
  parentPort.postMessage('running');
  if (kind === 'disk') diskWorker(options);
  else cpuWorker(options);
} else {
  await main(parseArgs(process.argv.slice(2)));
}

async function main(options) {
  const started = performance.now();
  const parentPid = process.ppid;
  const diskDir = options.diskMib > 0 ? mkdtempSync(join(tmpdir(), 'lexec-load-')) : null;
  const workers = [];
  const startWorker = (data) =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: data });
      worker.once('message', () => resolve(worker));
      worker.once('error', reject);
      workers.push(worker);
    });
  let stopping = false;
  let child = null;

  const stop = async (reason, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    await Promise.all(workers.map((worker) => worker.terminate()));
    if (diskDir !== null) rmSync(diskDir, { recursive: true, force: true });
    say(`stopped after ${((performance.now() - started) / 1000).toFixed(1)} s (${reason})`);
    process.exit(exitCode);
  };

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      // A command under load gets the signal too (a Ctrl-C reaches it through the terminal anyway).
      if (child !== null && child.exitCode === null) child.kill(signal);
      else void stop(signal, 128 + (signal === 'SIGINT' ? 2 : signal === 'SIGHUP' ? 1 : 15));
    });
  }
  // The parent may die without signalling us (SIGKILL, a crashed shell): then we are reparented.
  setInterval(() => {
    if (process.ppid !== parentPid) void stop(`parent ${parentPid} exited`, 1);
  }, 1_000).unref();
  if (options.seconds !== null) setTimeout(() => void stop(`${options.seconds} s elapsed`), options.seconds * 1_000).unref();

  const what = [`${options.workers} CPU worker(s) at 100 % (${availableParallelism()} core(s) here)`];
  if (options.memoryMib > 0) what.push(`each rewriting ${options.memoryMib} MiB of memory`);
  if (options.diskMib > 0) what.push(`disk churn: ${options.diskMib} MiB written, fsynced, read and deleted in ${diskDir}, over and over`);
  say(`${what.join('; ')}; pid ${process.pid}; stops on SIGINT/SIGTERM, when pid ${parentPid} exits${options.seconds === null ? '' : `, after ${options.seconds} s`}${options.command.length > 0 ? ', when the command ends' : ''}`);
  await Promise.all([
    ...Array.from({ length: options.workers }, () => startWorker({ kind: 'cpu', memoryMib: options.memoryMib })),
    ...(diskDir === null ? [] : [startWorker({ kind: 'disk', diskMib: options.diskMib, dir: diskDir })]),
  ]);
  setInterval(() => {
    say(`running ${((performance.now() - started) / 1000).toFixed(0)} s; load average ${loadavg().map((value) => value.toFixed(2)).join(' ')}`);
  }, 60_000).unref();

  if (options.command.length > 0) {
    const [command, ...args] = options.command;
    say(`running under load: ${options.command.join(' ')}`);
    const commandStarted = performance.now();
    child = spawn(command, args, { stdio: 'inherit' });
    child.once('error', (error) => void stop(`the command could not start: ${error.message}`, 127));
    child.once('exit', (code, signal) => {
      say(`command exited ${signal === null ? `with code ${code}` : `on ${signal}`} after ${((performance.now() - commandStarted) / 1000).toFixed(1)} s`);
      void stop('the command ended', code ?? 1);
    });
  } else {
    // Keep the main thread alive until a stop.
    setInterval(() => undefined, 1 << 30);
  }
}
