import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { ArtifactRow, AttemptRow, ExecutionRow } from './read-databases.ts';
import type { Fail } from './report.ts';
import { units } from './values.ts';

/*
 * `artifacts_intact`: every artifact row's file is under the artifact root with its recorded
 * `size_bytes` and `sha256`; a succeeded execution has as many artifacts as images delivered,
 * ordinals 0…n-1.
 */

/** The artifact file a storage key names, if it stays under the root. */
function artifactFile(root: string, storageKey: string): { found: true; size: number; sha256: string } | { found: false; why: string } {
  const path = resolve(root, storageKey);
  const inside = relative(resolve(root), path);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) return { found: false, why: 'outside the artifact root' };
  if (!existsSync(path)) return { found: false, why: 'missing' };
  const bytes = readFileSync(path);
  return { found: true, size: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/**
 * A succeeded execution keeps exactly the images delivered, ordinals 0…n-1. Settled by a human
 * before the delivery finished, no count was recorded: what was stored must still be intact
 * (`checkArtifactFiles`).
 */
export function checkDelivered(execution: ExecutionRow, attempt: AttemptRow | undefined, files: readonly ArtifactRow[], fail: Fail): void {
  const id = execution.execution_id;
  const delivered = units(attempt?.delivered_images ?? null);
  if (delivered === null) {
    if (execution.state_reason !== 'reconciled_settled') fail('artifacts_intact', id, 'succeeded, but no delivered images are recorded');
  } else if (BigInt(files.length) !== delivered) fail('artifacts_intact', id, `${files.length} artifacts recorded, ${delivered} images delivered`);
  const ordinals = files.map((file) => units(file.ordinal));
  if (!ordinals.every((ordinal, index) => ordinal === BigInt(index))) fail('artifacts_intact', id, `artifact ordinals ${ordinals.map(String).join(',')} are not 0…${files.length - 1}`);
}

export function checkArtifactFiles(artifacts: readonly ArtifactRow[], artifactRoot: string, fail: Fail): void {
  // Every artifact row's file is under the root with its recorded size and sha256.
  for (const artifact of artifacts) {
    const file = artifactFile(artifactRoot, artifact.storage_key);
    const id = artifact.execution_id;
    if (!file.found) fail('artifacts_intact', id, `${artifact.storage_key}: ${file.why}`);
    else if (file.sha256 !== artifact.sha256) fail('artifacts_intact', id, `${artifact.storage_key} does not match its sha256`);
    else if (units(artifact.size_bytes) !== BigInt(file.size)) fail('artifacts_intact', id, `${artifact.storage_key}: ${file.size} bytes on disk, ${String(artifact.size_bytes)} recorded`);
  }
}
