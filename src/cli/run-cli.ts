import { once } from 'node:events';
import { handle, run } from '@oclif/core';
import { errorCode } from '../errors.js';

/*
 * The CLI's entry, as oclif's `execute` but with a stdout flush that survives a reader that went
 * away. `lexec --help | head -1` closes the pipe after one line; oclif's own flush then waits for
 * a `drain` that never comes and the process ends as "unsettled top-level await" (exit 13).
 */

let stdoutClosed = false;

/**
 * A stream whose reader went away (`| head`): the rest of the output has nowhere to go, so it is
 * dropped, and the command still runs to its end — a `stack start` piped into `head` finishes
 * starting the stack — and exits with its own code instead of dying on an unhandled EPIPE.
 */
function dropWritesAfterClosedPipe(stream: NodeJS.WriteStream, onClosed: () => void): void {
  stream.on('error', (error: unknown) => {
    if (errorCode(error) !== 'EPIPE') throw error;
    onClosed();
    stream.write = ((...args: unknown[]) => {
      const callback = args.find((arg): arg is () => void => typeof arg === 'function');
      callback?.();
      return true;
    });
  });
}

/** Waits until what was written to stdout has left the process, or its reader is gone. */
async function flushStdout(): Promise<void> {
  if (stdoutClosed || process.stdout.destroyed || process.stdout.write('')) return;
  await Promise.race([once(process.stdout, 'drain'), once(process.stdout, 'close'), once(process.stdout, 'error').catch(() => undefined)]);
}

/** Runs the lexec CLI. `entryUrl` is the URL of bin/run.js, from which oclif finds package.json. */
export async function runCli(entryUrl: string): Promise<void> {
  dropWritesAfterClosedPipe(process.stdout, () => {
    stdoutClosed = true;
  });
  dropWritesAfterClosedPipe(process.stderr, () => undefined);
  try {
    await run(process.argv.slice(2), entryUrl);
    await flushStdout();
  } catch (error) {
    // oclif's own writers (help) reject on a closed pipe: the reader has all it wanted.
    if (errorCode(error) === 'EPIPE') return;
    await handle(error instanceof Error ? error : new Error(String(error)));
  }
}
