import { isAbsolute } from 'node:path';
import { UserError } from '../../../errors.js';
import { probeTcp } from '../../../process/loopback-probe.js';
import { describeBusyPort, findPortHolder } from '../../../process/port-probe.js';
import { isSameProcess, processStartTicks, terminateProcess, waitUntil } from '../../../process/process-identity.js';
import type { EngineLogger } from './temporal-engine.js';
import { readManagedTemporalState, type ManagedTemporalState } from './managed-temporal-state.js';
import { describeMissingVersion, pinWaysOut, versionSourceNote } from './temporal-cli-observation.js';
import { readTemporalCliVersion } from './temporal-cli-version.js';

/*
 * What the executor checks before it spawns its managed Temporal dev server: the pinned CLI,
 * a server its dead predecessor left running (an orphan: it holds the database and the ports),
 * and the two ports. Each refusal is a UserError naming the configuration field at fault.
 */

const CLI_PATH_FIELD = 'workflow_engine.temporal_cli.path';
const CLI_VERSION_FIELD = 'workflow_engine.temporal_cli.version';
/** How long a recorded server's ports may take to close after it is gone. */
const PORT_RELEASE_MS = 5_000;

function cliUnusable(path: string, problem: string, pinned: string): UserError {
  const message = `The Temporal CLI ${path} ${problem}.`;
  return new UserError('temporal_cli_unusable', message, {
    nextStep: `Install Temporal CLI ${pinned} at an absolute path and set workflow_engine.temporal_cli.path to it (\`lexec stack doctor\` checks it), then start again.`,
    issues: [{ path: CLI_PATH_FIELD, message }],
  });
}

/** The CLI at `path` exists, runs, and is the pinned release; otherwise the error says which. */
export async function checkTemporalCli(path: string, pinned: string): Promise<void> {
  if (!isAbsolute(path)) throw cliUnusable(path, 'is not an absolute path', pinned);
  const observed = await readTemporalCliVersion(path);
  switch (observed.state) {
    case 'missing':
      throw cliUnusable(path, 'does not exist', pinned);
    case 'not_a_file':
      throw cliUnusable(path, 'is not a regular file', pinned);
    case 'not_executable':
      throw cliUnusable(path, 'is not executable by this user', pinned);
    case 'failed':
      throw cliUnusable(path, `could not report its version (\`--version\`: ${observed.reason})`, pinned);
    case 'ran': {
      if (observed.version === pinned) return;
      const message =
        observed.version === null
          ? `${describeMissingVersion(path, observed)}; the configuration pins ${pinned}.`
          : `The Temporal CLI ${path} reports version ${observed.version}${versionSourceNote(observed)}; the configuration pins ${pinned}.`;
      throw new UserError('temporal_cli_version_mismatch', message, {
        nextStep: pinWaysOut({ path, pinned, reported: observed.version, where: '', then: 'start again (for a stack the pin is in profile.toml: render and activate after changing it)' }),
        issues: [{ path: CLI_VERSION_FIELD, message }],
      });
    }
  }
}

/**
 * Stops the server a previous executor recorded in `<dataDir>/server.json` if it still runs
 * (same pid and start time) and its executor is gone — or is this very process, whose earlier
 * start was never stopped. A server whose executor is another live process is that executor's:
 * it is refused, never touched. Only the recorded, identified process is ever signalled.
 */
export async function reapOrphanTemporalServer(dataDir: string, logger: EngineLogger, graceMs: number, ports: readonly number[]): Promise<void> {
  const recorded = await readManagedTemporalState(dataDir);
  if (recorded === null || recorded.pid === null) return;
  if (await isSameProcess(recorded.pid, recorded.pid_start_ticks)) await stopOrphan(recorded.pid, recorded, dataDir, logger, graceMs);
  // Stopped here, or died just now (an orphan dies of SIGPIPE at its first log line): its main
  // thread shows as exited while its other threads still close its sockets, and nobody may reap
  // it soon (its parent is gone). The ports are the signal that it is really gone.
  const released = async () => (await Promise.all(ports.map((port) => probeTcp(port, 500)))).every((probe) => !probe.ok);
  await waitUntil(released, PORT_RELEASE_MS);
}

async function stopOrphan(pid: number, recorded: ManagedTemporalState, dataDir: string, logger: EngineLogger, graceMs: number): Promise<void> {
  const ownTicks = await processStartTicks(process.pid);
  const isThisProcess =
    recorded.executor_pid === process.pid && (recorded.executor_pid_start_ticks === null || ownTicks === null || recorded.executor_pid_start_ticks === ownTicks);
  if (!isThisProcess && (await isSameProcess(recorded.executor_pid, recorded.executor_pid_start_ticks))) {
    throw new UserError(
      'temporal_data_in_use',
      `The Temporal data directory ${dataDir} is in use by the dev server (pid ${pid}) of another running executor (pid ${recorded.executor_pid}).`,
      { nextStep: 'Stop that executor first, or give this one its own workflow_engine.data_dir.', issues: [{ path: 'workflow_engine.data_dir', message: 'is in use by another running executor' }] },
    );
  }
  const outcome = await terminateProcess(pid, recorded.pid_start_ticks, graceMs);
  logger.warn({ event: 'temporal_orphan_stopped', pid, executor_pid: recorded.executor_pid, outcome });
  if (outcome === 'stuck') {
    throw new UserError('temporal_orphan_unstoppable', `The Temporal dev server (pid ${pid}) left by an earlier executor survived SIGKILL.`, {
      nextStep: `Find out why pid ${pid} cannot exit (uninterruptible I/O?), stop it, then start again.`,
    });
  }
}

/** Refuses a port that something already accepts connections on (checked by connecting). */
export async function ensurePortFree(port: number, field: 'workflow_engine.port' | 'workflow_engine.ui_port'): Promise<void> {
  if (!(await probeTcp(port, 1_000)).ok) return;
  const busy = describeBusyPort({ port, free: false, holder: await findPortHolder(port) });
  const message = `${field}: ${busy}`;
  throw new UserError('temporal_port_in_use', `The managed Temporal dev server cannot listen on 127.0.0.1: ${message}.`, {
    nextStep: `Stop what listens on port ${port}, or choose another ${field}, then start again.`,
    issues: [{ path: field, message: busy }],
  });
}
