import { constants } from 'node:fs';
import { lstat, open } from 'node:fs/promises';

/*
 * A webhook sink's secret file (docs/ledger.md "Webhooks"): an absolute path to a regular file
 * (not a link) of mode 0600 owned by the user the ledger runs as, holding at least 32 bytes
 * (one trailing newline is not part of the secret). The ledger keeps the path, never the
 * content, and reads the file again at every delivery, so a rotated secret is picked up by the
 * next one (a cache keyed by the file's identity and times saves the reading while nothing changed:
 * `createSecretFileCache`). The CLI runs the same check before it asks the ledger (its user is usually the same).
 * No answer, log or error ever carries the content.
 */

export const MIN_WEBHOOK_SECRET_BYTES = 32;
const MAX_WEBHOOK_SECRET_BYTES = 4096;

/** Why a secret file is refused: the error's reason code. */
export type SecretFileProblem =
  | 'secret_file_missing'
  | 'secret_file_not_regular'
  | 'secret_file_not_private'
  | 'secret_file_wrong_owner'
  | 'secret_file_too_short'
  | 'secret_file_too_large'
  | 'secret_file_unreadable';

export type SecretFileReading = { readonly ok: true; readonly secret: Buffer } | { readonly ok: false; readonly problem: SecretFileProblem };

/** What each problem means, in words for a person (never the content). */
export const SECRET_FILE_PROBLEMS: Readonly<Record<SecretFileProblem, string>> = {
  secret_file_missing: 'does not exist',
  secret_file_not_regular: 'is not a regular file (a directory or a symbolic link)',
  secret_file_not_private: 'is not of mode 0600 (chmod 600 it)',
  secret_file_wrong_owner: "is not owned by the ledger's user",
  secret_file_too_short: `holds fewer than ${MIN_WEBHOOK_SECRET_BYTES} bytes`,
  secret_file_too_large: `holds more than ${MAX_WEBHOOK_SECRET_BYTES} bytes`,
  secret_file_unreadable: 'cannot be read',
};

function withoutTrailingNewline(content: Buffer): Buffer {
  if (content.at(-1) !== 0x0a) return content;
  return content.subarray(0, content.length - (content.at(-2) === 0x0d ? 2 : 1));
}

/** Opens (never following a link), checks and reads the secret file; `uid`: the owner it must have (default: this process's user). */
export async function readWebhookSecretFile(path: string, uid: number | null = typeof process.getuid === 'function' ? process.getuid() : null): Promise<SecretFileReading> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: false, problem: 'secret_file_missing' };
    if (code === 'ELOOP' || code === 'EISDIR') return { ok: false, problem: 'secret_file_not_regular' };
    return { ok: false, problem: 'secret_file_unreadable' };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { ok: false, problem: 'secret_file_not_regular' };
    if ((info.mode & 0o777) !== 0o600) return { ok: false, problem: 'secret_file_not_private' };
    if (uid !== null && info.uid !== uid) return { ok: false, problem: 'secret_file_wrong_owner' };
    if (info.size > MAX_WEBHOOK_SECRET_BYTES + 2) return { ok: false, problem: 'secret_file_too_large' };
    const secret = withoutTrailingNewline(await handle.readFile());
    if (secret.length > MAX_WEBHOOK_SECRET_BYTES) return { ok: false, problem: 'secret_file_too_large' };
    if (secret.length < MIN_WEBHOOK_SECRET_BYTES) return { ok: false, problem: 'secret_file_too_short' };
    return { ok: true, secret };
  } catch {
    return { ok: false, problem: 'secret_file_unreadable' };
  } finally {
    await handle.close();
  }
}

/**
 * `readWebhookSecretFile` for every delivery, without reading the file again while nothing about
 * it changed: each read first looks at the path (lstat) and answers the content read before when
 * the file is the same (device, inode, size, mode, owner, modification and change times); any
 * change — a rewrite, a rename over it, a chmod — reads and checks it again. A rotated secret
 * signs the next delivery, as before.
 */
export function createSecretFileCache(uid: number | null = typeof process.getuid === 'function' ? process.getuid() : null) {
  const known = new Map<string, { readonly identity: string; readonly reading: SecretFileReading }>();
  // The look of the current turn per path, shared by every delivery started in it (also those
  // started before the first look has answered).
  const looks = new Map<string, { readonly turn: number; readonly reading: Promise<SecretFileReading> }>();

  async function look(path: string): Promise<SecretFileReading> {
    let identity: string;
    try {
      const info = await lstat(path, { bigint: true });
      identity = [info.dev, info.ino, info.size, info.mode, info.uid, info.mtimeNs, info.ctimeNs].join(':');
    } catch {
      known.delete(path);
      return readWebhookSecretFile(path, uid);
    }
    const cached = known.get(path);
    if (cached !== undefined && cached.identity === identity && cached.reading.ok) return cached.reading;
    const reading = await readWebhookSecretFile(path, uid);
    known.set(path, { identity, reading });
    return reading;
  }

  return {
    /**
     * The secret at `path`. With `turn` (the delivery worker's turn count), the path is looked at
     * once per turn: deliveries started in the same turn share that look.
     */
    read(path: string, turn?: number): Promise<SecretFileReading> {
      if (turn === undefined) return look(path);
      const current = looks.get(path);
      if (current !== undefined && current.turn === turn) return current.reading;
      const reading = look(path);
      looks.set(path, { turn, reading });
      return reading;
    },
  };
}
