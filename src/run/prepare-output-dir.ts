import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { errorCode, UsageError, UserError } from '../errors.js';

/*
 * `lexec run --out DIR` is checked before anything is requested or spent (docs/run.md): an
 * `--out` that names a file, or a directory that cannot be created or written, would otherwise
 * be found only after the ledger settled — images paid for and nowhere to put them.
 */

export async function prepareOutputDir(outDir: string): Promise<void> {
  const existing = await stat(outDir).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') return null;
    throw unusable(outDir, errorCode(error));
  });
  if (existing !== null && !existing.isDirectory()) {
    throw new UsageError('out_not_a_directory', `--out ${outDir} is an existing file, not a directory; nothing was requested or spent.`, {
      nextStep: 'Pass a directory (it is created if missing), or move that file away.',
    });
  }
  try {
    if (existing === null) await mkdir(outDir, { recursive: true });
    await access(outDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw unusable(outDir, errorCode(error));
  }
}

function unusable(outDir: string, code: string | undefined): UserError {
  return new UserError('out_unwritable', `--out ${outDir} cannot be created or written (${code ?? 'error'}); nothing was requested or spent.`, {
    nextStep: 'Choose a directory this user can write, or fix its permissions, then run the command again.',
  });
}
