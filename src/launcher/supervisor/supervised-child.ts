import { execa } from 'execa';
import { packagePath } from '../../package-root.js';
import { processStartTicks } from '../../process/process-identity.js';
import { createLineSplitter, type RotatingLog } from '../../process/rotating-log.js';
import { childLogLine } from './child-log-line.js';

/*
 * One child process of a stack supervisor: `lexec <args>` started with the same Node.js and the
 * same lexec installation as the supervisor, its stdout and stderr written line by line to the
 * component's rotating log (a line that is not JSON wrapped as one: child-log-line.ts), and descriptor 3 holding the supervisor pipe that makes the child
 * stop when the supervisor dies (exit-with-supervisor.ts). The child stays in the supervisor's
 * process group, so a forced stop of the group reaches it as well.
 */

/** The line a component's log gets once it can be written again after lines were lost (a full disk). */
export const LOG_LINES_LOST_EVENT = 'log_lines_lost';

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
  /** SIGTERM, then SIGKILL after the child's `stopGraceMs`; resolves once it has exited. */
  stop(): Promise<ChildExit>;
}

export interface SpawnChildOptions {
  readonly args: readonly string[];
  readonly log: RotatingLog;
  /** The component, as its log lines name it in `service`: lines it writes outside its logger are wrapped with it. */
  readonly service: string;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** How long `stop()` waits after SIGTERM before SIGKILL. */
  readonly stopGraceMs: number;
}

/**
 * Starts the child with execa: exactly the environment given (`extendEnv: false`), no buffering
 * (the output streams into the log line by line, each line bounded by the splitter), never
 * rejected for a crash (a crash is an exit like any other), and no exit hook of execa's own
 * (`cleanup: false`: the supervisor pipe on descriptor 3 already ends a child whose supervisor
 * dies, even by SIGKILL, which no exit hook survives). A child that cannot even be spawned
 * (this installation's Node.js binary gone) is reported as an immediate exit, like any crash.
 */
export async function spawnSupervisedChild(options: SpawnChildOptions): Promise<SupervisedChild> {
  const child = execa(process.execPath, ['--import', PRELOAD, LEXEC_BIN, ...options.args], {
    cwd: options.cwd,
    env: options.env,
    extendEnv: false,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    buffer: false,
    reject: false,
    cleanup: false,
    // stop() sends SIGTERM; execa sends SIGKILL if the child is still there after its grace.
    killSignal: 'SIGTERM',
    forceKillAfterDelay: options.stopGraceMs,
  });
  // Never written or read: only its closing matters (to the child). Errors on it are irrelevant.
  child.stdio[3].on('error', () => undefined);
  const pid = child.pid ?? 0;
  // Lines the log could not take; said in one line as soon as it can take one again.
  let lost = 0;
  const streams = (['stdout', 'stderr'] as const).map((name) => {
    const stream = child[name];
    const splitter = createLineSplitter((line) => {
      if (line === '') return;
      try {
        if (lost > 0) options.log.writeLine(JSON.stringify({ level: 50, time: new Date().toISOString(), service: options.service, pid, event: LOG_LINES_LOST_EVENT, lines: lost }));
        lost = 0;
        options.log.writeLine(childLogLine(line, { stream: name, service: options.service, pid }));
      } catch {
        // The log cannot be written (disk full, directory removed): the line is lost, but the
        // child and its supervisor keep running — an unwritable log must not stop the stack.
        lost += 1;
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
  // The exit itself, not execa's result: that one also waits for the output pipes, which a
  // grandchild could hold open after the child is gone.
  const node = child.nodeChildProcess;
  const exitedProcess = new Promise<ChildExit>((resolve) => {
    node.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
    node.once('error', () => {
      resolve({ code: null, signal: null });
    });
    // A spawn execa refused before any process existed settles only its own promise.
    void child.then((result) => {
      if (result.failed && result.exitCode === undefined && result.signal === undefined) resolve({ code: null, signal: null });
    });
  });
  const exited = exitedProcess.then(async (exit) => {
    // The output pipes close right after the exit; wait (briefly) so the last lines are logged.
    await Promise.race([Promise.all(streams), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    child.stdio[3].destroy();
    return exit;
  });
  const startTicks = pid > 0 ? await processStartTicks(pid) : null;
  let done = false;
  void exited.then(() => {
    done = true;
  });
  return {
    pid,
    startTicks,
    exited,
    async stop() {
      // Signals go through the child's handle, which never signals a pid once the child is reaped.
      if (!done) child.kill('SIGTERM');
      return exited;
    },
  };
}
