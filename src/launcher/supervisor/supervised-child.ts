import { spawn } from 'node:child_process';
import { packagePath } from '../../package-root.js';
import { isSameProcess, processStartTicks, sendSignal, waitUntil } from './process-identity.js';
import { createLineSplitter, type RotatingLog } from '../logs/rotating-log.js';

/*
 * One child process of a stack supervisor: `lexec <args>` started with the same Node.js and the
 * same lexec installation as the supervisor, its stdout and stderr written line by line to the
 * component's rotating log, and descriptor 3 holding the supervisor pipe that makes the child
 * stop when the supervisor dies (exit-with-supervisor.ts). The child stays in the supervisor's
 * process group, so a forced stop of the group reaches it as well.
 */

/** bin/run.js of this installation. */
export const LEXEC_BIN = packagePath('bin', 'run.js');
const PRELOAD = new URL('./exit-with-supervisor.js', import.meta.url).href;

export interface ChildExit {
  readonly code: number | null;
  readonly signal: string | null;
}

export interface SupervisedChild {
  readonly pid: number;
  /** Kernel start time of the child, recorded next to its pid; null without /proc. */
  readonly startTicks: number | null;
  /** Settles once the process has exited and its output has been written to the log. */
  readonly exited: Promise<ChildExit>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs: number): Promise<ChildExit>;
}

export interface SpawnChildOptions {
  readonly args: readonly string[];
  readonly log: RotatingLog;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

/**
 * Starts the child. A child that cannot even be spawned (which would mean this installation's
 * Node.js binary is gone) is reported as an immediate exit, like any other crash.
 */
export async function spawnSupervisedChild(options: SpawnChildOptions): Promise<SupervisedChild> {
  const child = spawn(process.execPath, ['--import', PRELOAD, LEXEC_BIN, ...options.args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  // Never written or read: only its closing matters (to the child). Errors on it are irrelevant.
  child.stdio[3]?.on('error', () => undefined);
  const streams = [child.stdout, child.stderr].flatMap((stream) => (stream === null ? [] : [stream])).map((stream) => {
    const splitter = createLineSplitter((line) => {
      try {
        options.log.writeLine(line);
      } catch {
        // The log cannot be written (disk full, directory removed): the line is lost, but the
        // child and its supervisor keep running — an unwritable log must not stop the stack.
      }
    });
    const ended = new Promise<void>((resolve) => {
      stream.once('close', resolve);
      stream.once('error', () => {
        resolve();
      });
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      splitter.push(chunk);
    });
    return ended.then(() => {
      splitter.flush();
    });
  });
  const exitedProcess = new Promise<ChildExit>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
    child.once('error', () => {
      resolve({ code: null, signal: null });
    });
  });
  const exited = exitedProcess.then(async (exit) => {
    // The output pipes close right after the exit; wait (briefly) so the last lines are logged.
    await Promise.race([Promise.all(streams), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    child.stdio[3]?.destroy();
    return exit;
  });
  const pid = child.pid ?? 0;
  const startTicks = pid > 0 ? await processStartTicks(pid) : null;
  let done = false;
  void exited.then(() => {
    done = true;
  });
  return {
    pid,
    startTicks,
    exited,
    async stop(graceMs) {
      if (!done && pid > 0) {
        sendSignal(pid, 'SIGTERM');
        const stopped = await waitUntil(() => Promise.resolve(done), graceMs);
        if (!stopped && (await isSameProcess(pid, startTicks))) sendSignal(pid, 'SIGKILL');
      }
      return exited;
    },
  };
}
