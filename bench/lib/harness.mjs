// The frame every lexec benchmark script shares: its error type, argument helpers, the text table
// it prints, and the run itself (a fresh temporary directory, services stopped on SIGINT/SIGTERM
// and at the end, the directory removed, exit 0 / 1 / 130). Plain ESM, no dependencies.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** A failure of the benchmark itself (not a timing): printed without a stack, exit 1. */
export class BenchError extends Error {}

export const fail = (message) => {
  throw new BenchError(message);
};

/** A whole-number option value, at least `minimum`. */
export function parseCount(name, value, minimum) {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < minimum) {
    fail(`${name} needs a whole number >= ${minimum} (got ${value === undefined ? 'nothing' : JSON.stringify(value)}).`);
  }
  return Number(value);
}

/** Rows of strings as aligned text lines: the first `leftColumns` columns left-aligned, the rest right. */
export function table(header, rows, leftColumns = 1) {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const format = (row) => row.map((cell, column) => (column < leftColumns ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');
  return [format(header), format(widths.map((width) => '-'.repeat(width))), ...rows.map(format)];
}

/**
 * Runs a benchmark script and exits. `parseArgs()` gives the options (with `dir`, where the
 * temporary directory is made); `main(options, workDir)` measures and returns an outcome;
 * `stop()` stops whatever the script started (called on a signal and at the end, so it must be
 * safe to call twice); `report(options, outcome, workDir)` prints it and returns the exit code
 * (0 unless the outcome itself shows a problem). `what` names what a signal stops.
 */
export async function runBenchmark({ name, what = 'the services', parseArgs, main, stop, report }) {
  let options;
  let workDir = null;
  let exitCode = 0;
  let outcome = null;
  let interrupted = false;
  // One stop, however many ask: the end of main() waits for the stop a signal began, so the
  // directory is removed only once nothing of the services is left to write into it again.
  let stopping = null;
  const stopOnce = () => (stopping ??= Promise.resolve().then(stop));
  try {
    options = parseArgs();
    try {
      workDir = mkdtempSync(join(options.dir, `lexec-${name}-`));
    } catch (error) {
      fail(`cannot create a temporary directory in ${options.dir}: ${error.message}`);
    }
    const stopOnSignal = (signal) => {
      interrupted = true;
      process.stderr.write(`bench/${name}: interrupted by ${signal}; stopping ${what}.\n`);
      void stopOnce().finally(() => {
        if (workDir !== null) rmSync(workDir, { recursive: true, force: true });
        process.exit(130);
      });
    };
    process.once('SIGINT', stopOnSignal);
    process.once('SIGTERM', stopOnSignal);
    outcome = await main(options, workDir);
  } catch (error) {
    exitCode = interrupted ? 130 : 1;
    // After an interruption the requests in flight fail as the services stop; that is not news.
    if (!interrupted) process.stderr.write(`bench/${name}: ${error instanceof BenchError ? error.message : (error?.stack ?? String(error))}\n`);
  }
  await stopOnce();
  if (workDir !== null) rmSync(workDir, { recursive: true, force: true });
  if (outcome !== null) exitCode = Math.max(exitCode, report(options, outcome, workDir) ?? 0);
  // main() may come back while the signal's own stop is still under way (what it was waiting on
  // failed as the services stopped): an interrupted run exits 130 whichever gets here first.
  process.exit(interrupted ? 130 : exitCode);
}
