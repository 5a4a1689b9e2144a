import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { errorCode } from '../../../errors.js';
import { mainModuleRelease } from './go-build-info.js';
import { readGoBuildInfo } from './read-go-build-info.js';
import { TEMPORAL_CLI_MODULE, type TemporalCliObservation } from './temporal-cli-observation.js';

/*
 * Which release a Temporal CLI binary is, for the pin check of managed_local (the executor's
 * start and the launcher's doctor). An official release prints it: `temporal version 1.5.1
 * (Server 1.29.1, UI 2.42.1)`. A binary built with `go install` is not stamped and prints
 * `0.0.0-DEV (…)`; its release is then read from the module version the Go toolchain embedded
 * (go-build-info.ts). Nothing here writes, and the binary runs only with `--version`.
 */

/** `temporal version 1.5.1 (Server …)`: the CLI's own version is the one after the word "version". */
const CLI_VERSION = /\bversion\s+v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)/;
const ANY_VERSION = /(\d+\.\d+\.\d+)/;
/** What an unstamped build reports (temporalcli.Version's default); 0.0.0 is never a release. */
const UNSTAMPED = /^0\.0\.0(?:-|$)/;

function runVersion(path: string, timeoutMs: number): Promise<{ ok: true; stdout: string } | { ok: false; reason: string }> {
  return new Promise((resolve) => {
    // No shell, a bounded time and output, and nothing of this process's environment but PATH:
    // the CLI reads TEMPORAL_* variables, which have no say in its version.
    execFile(path, ['--version'], { timeout: timeoutMs, env: { PATH: process.env.PATH ?? '' }, maxBuffer: 64 * 1024 }, (error, stdout) => {
      if (error === null) {
        resolve({ ok: true, stdout });
        return;
      }
      const reason = error.killed ? 'timed out' : typeof error.code === 'number' ? `exit code ${error.code}` : (errorCode(error) ?? 'could not run');
      resolve({ ok: false, reason });
    });
  });
}

/** Runs `<path> --version` (bounded, no shell) and, for an unstamped build, reads its Go build info. */
export async function readTemporalCliVersion(path: string, timeoutMs = 10_000): Promise<TemporalCliObservation> {
  try {
    if (!(await stat(path)).isFile()) return { state: 'not_a_file' };
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return { state: 'missing' };
    throw error;
  }
  try {
    await access(path, constants.X_OK);
  } catch {
    return { state: 'not_executable' };
  }
  const ran = await runVersion(path, timeoutMs);
  if (!ran.ok) return { state: 'failed', reason: ran.reason };
  const reported = (CLI_VERSION.exec(ran.stdout) ?? ANY_VERSION.exec(ran.stdout))?.[1] ?? null;
  if (reported === null || !UNSTAMPED.test(reported)) return { state: 'ran', version: reported, source: 'version_output', reported };
  // An unreadable binary (execute-only) simply has no build info to offer.
  const fromBuildInfo = mainModuleRelease(await readGoBuildInfo(path).catch(() => null), TEMPORAL_CLI_MODULE);
  return fromBuildInfo === null
    ? { state: 'ran', version: null, source: 'version_output', reported }
    : { state: 'ran', version: fromBuildInfo, source: 'go_build_info', reported };
}
