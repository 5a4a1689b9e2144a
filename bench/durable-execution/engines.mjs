// The workflow engine of the benchmark's executor (docs/executions.md "The engine"): `embedded`,
// or `managed_local` — a Temporal dev server the executor starts itself from the pinned CLI, on
// two loopback ports free right now, its history under the run's directory. Also the clean-up
// for the Temporal server a SIGKILLed executor leaves behind (its restart reaps it; a benchmark
// that ends early must not leave it running).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fail } from '../lib/harness.mjs';
import { freePorts } from '../lib/sandbox-home.mjs';

export const ENGINES = ['embedded', 'managed_local'];
/** The Temporal CLI release the executor is pinned to (what the CLI reports, or its Go build info). */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/** The Temporal CLI for managed_local: --temporal-cli, else LEXEC_TEMPORAL_CLI; null when neither. */
export function temporalCliPath(option) {
  const path = option ?? process.env.LEXEC_TEMPORAL_CLI ?? '';
  return path === '' ? null : path;
}


/** The executor's `workflow_engine` section for `engine`. */
export async function engineSection(engine, workDir, cliPath) {
  if (engine === 'embedded') return { mode: 'embedded' };
  if (cliPath === null) fail('--engine managed_local needs the Temporal CLI: --temporal-cli PATH or LEXEC_TEMPORAL_CLI.');
  const [port, uiPort] = await freePorts(2);
  return {
    mode: 'managed_local',
    temporal_cli: { path: cliPath, version: TEMPORAL_CLI_VERSION },
    data_dir: join(workDir, 'executor', 'temporal'),
    log_dir: join(workDir, 'executor', 'logs'),
    port,
    ui_port: uiPort,
  };
}

/** SIGKILLs the Temporal server recorded in `<data_dir>/server.json` if that very process (pid and start time) still runs. */
export function killRecordedTemporal(dataDir) {
  let state;
  try {
    state = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8'));
  } catch {
    return;
  }
  if (!Number.isInteger(state.pid)) return;
  try {
    const stat = readFileSync(`/proc/${state.pid}/stat`, 'utf8');
    const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    if (state.pid_start_ticks !== null && startTicks !== state.pid_start_ticks) return;
    process.kill(state.pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}

/** Runs this script once per engine (each on fresh state) and returns each run's RESULT document. */
export function runPerEngine(script, engines, argv) {
  const results = {};
  for (const engine of engines) {
    process.stderr.write(`bench/durable-execution: --engine ${engine}\n`);
    let output;
    try {
      output = execFileSync(process.execPath, [script, ...argv, '--engine', engine], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
    } catch (error) {
      process.stdout.write(error.stdout ?? '');
      fail(`the ${engine} run failed (exit ${error.status ?? error.signal}).`);
    }
    process.stdout.write(`\n== engine ${engine} ==\n${output}`);
    const line = output.split('\n').find((text) => text.startsWith('RESULT '));
    if (line === undefined) fail(`the ${engine} run printed no RESULT line.`);
    results[engine] = JSON.parse(line.slice('RESULT '.length));
  }
  return results;
}
