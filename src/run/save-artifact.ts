import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode, UserError } from '../errors.js';
import type { ArtifactView } from '../executor/client/executor-client.js';
import { writeNewFile } from '../storage/write-new-file.js';

/*
 * Saving one artifact of `lexec run` into the output directory: named by execution id and
 * ordinal, checked against the listing's size and SHA-256 before it is written, written
 * atomically (a reader never sees a partial image), and never over an existing file. A file
 * already there with exactly the listed content is the same image saved by an earlier run of
 * the same command (a continuation with --authorization), so it is kept and reported.
 */

export interface SavedFile {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
  /** `written` now, or `existing`: the identical file was already there. */
  readonly outcome: 'written' | 'existing';
}

const EXTENSIONS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' };

/** `<execution_id>-<ordinal>.<ext>`: unique per image, stable across continuations. */
export function artifactFileName(executionId: string, artifact: Pick<ArtifactView, 'ordinal' | 'media_type'>): string {
  return `${executionId}-${artifact.ordinal}.${EXTENSIONS[artifact.media_type] ?? 'bin'}`;
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The file at `path` if it holds exactly `digest`; null when there is none; an error when it differs. */
async function existingIdentical(path: string, digest: string): Promise<SavedFile | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw new UserError('output_file_unwritable', `The output file ${path} exists and cannot be read (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Choose another --out directory.',
    });
  }
  if (sha256(bytes) !== digest) {
    throw new UserError('output_file_exists', `The output file ${path} already exists with other content; lexec never overwrites a file.`, {
      nextStep: 'Move that file away or choose another --out directory, then run the same command again with --authorization <token_id> to save the images.',
    });
  }
  return { path, bytes: bytes.length, sha256: digest, outcome: 'existing' };
}

export async function saveArtifact(outDir: string, executionId: string, artifact: ArtifactView, download: () => Promise<Buffer>): Promise<SavedFile> {
  const path = join(outDir, artifactFileName(executionId, artifact));
  const already = await existingIdentical(path, artifact.sha256);
  if (already !== null) return already;
  const bytes = await download();
  const digest = sha256(bytes);
  if (BigInt(bytes.length) !== artifact.size_bytes || digest !== artifact.sha256) {
    throw new UserError('artifact_corrupt', `Image ${artifact.ordinal} of execution ${executionId} did not arrive intact (its size or SHA-256 differs from the executor's listing); it was not saved.`, {
      nextStep: 'Run the same command again with --authorization <token_id> to download it again (nothing is spent twice).',
    });
  }
  let outcome;
  try {
    outcome = await writeNewFile(path, bytes, 0o644);
  } catch (error) {
    throw new UserError('output_file_unwritable', `The output file ${path} cannot be written (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check that the --out directory can be written by this user, or choose another one.',
    });
  }
  if (outcome === 'exists') {
    // Someone wrote it between the check and the link: the same rules apply.
    const raced = await existingIdentical(path, digest);
    if (raced !== null) return raced;
  }
  return { path, bytes: bytes.length, sha256: digest, outcome: 'written' };
}
