import { access } from 'node:fs/promises';
import { capabilityDigest, generateCapability } from '../credentials/capability.js';
import { readPrivateFile, writePrivateFile } from '../credentials/private-file.js';
import { UserError } from '../errors.js';
import type { CredentialLifecycle } from './credential-lifecycle.js';

/** `revoked`: the file's capability belongs to this database but was revoked (or rotated away): the ledger starts, and says so. */
export type AdminCapabilityOutcome = 'created' | 'reused' | 'revoked';

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * On first start the ledger creates its admin capability in a private file (0600 in a 0700
 * directory) and stores only its digest. Later starts read the file descriptor-safely and check
 * it against this database's admin credentials: a file that matches none of them (another
 * installation's, or a database without its file) fails closed: the ledger does not start. A
 * file whose credential was revoked or rotated away (`ledger credentials rotate`, whose new
 * capability went elsewhere) is of this installation: the ledger starts and reports `revoked`,
 * so the operator learns why admin commands are refused.
 */
export async function ensureAdminCapability(path: string, credentials: CredentialLifecycle): Promise<AdminCapabilityOutcome> {
  if (!(await exists(path))) {
    if (credentials.adminFileStanding(Buffer.alloc(32)) !== 'no_admin') {
      throw new UserError('admin_capability_missing', `The ledger's admin capability file ${path} is missing, but the database has an admin credential.`, {
        nextStep: 'Restore the file from the cold backup taken with this database; lexec will not replace an admin credential silently.',
      });
    }
    const token = generateCapability('admin');
    await writePrivateFile(path, `${token}\n`);
    credentials.register({ credentialId: 'admin', kind: 'admin', agentId: null, digest: capabilityDigest(token), holderName: null });
    return 'created';
  }
  const digest = capabilityDigest(await readPrivateFile(path, 'ledger admin capability'));
  const standing = credentials.adminFileStanding(digest);
  if (standing === 'no_admin') {
    credentials.register({ credentialId: 'admin', kind: 'admin', agentId: null, digest, holderName: null });
    return 'reused';
  }
  if (standing === 'foreign') {
    throw new UserError('admin_capability_mismatch', `The ledger's admin capability file ${path} does not match this database.`, {
      nextStep: 'Use the file and database from the same backup; never mix state of two installations.',
    });
  }
  return standing === 'accepted' ? 'reused' : 'revoked';
}
