import { access } from 'node:fs/promises';
import { capabilityDigest, digestsEqual, generateCapability } from '../credentials/capability.js';
import { readPrivateFile, writePrivateFile } from '../credentials/private-file.js';
import { UserError } from '../errors.js';
import type { LedgerAdmin } from './ledger-admin.js';
import { LEDGER_ACTOR } from './store/audit-store.js';

export type AdminCapabilityOutcome = 'created' | 'reused';

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * On first start the ledger creates its admin capability in a private file (0600 in a 0700
 * directory) and stores only its digest. Later starts read the file descriptor-safely and check
 * it against the stored digest. Any disagreement fails closed: the ledger does not start. The
 * registration is the ledger's own act in the audit trail.
 */
export async function ensureAdminCapability(path: string, admin: LedgerAdmin): Promise<AdminCapabilityOutcome> {
  const stored = admin.adminDigest();
  if (!(await exists(path))) {
    if (stored !== null) {
      throw new UserError('admin_capability_missing', `The ledger's admin capability file ${path} is missing, but the database has an admin credential.`, {
        nextStep: 'Restore the file from the cold backup taken with this database; lexec will not replace an admin credential silently.',
      });
    }
    const token = generateCapability('admin');
    await writePrivateFile(path, `${token}\n`);
    admin.registerCredential('admin', 'admin', null, capabilityDigest(token), LEDGER_ACTOR);
    return 'created';
  }
  const digest = capabilityDigest(await readPrivateFile(path, 'ledger admin capability'));
  if (stored === null) {
    admin.registerCredential('admin', 'admin', null, digest, LEDGER_ACTOR);
    return 'reused';
  }
  if (!digestsEqual(stored, digest)) {
    throw new UserError('admin_capability_mismatch', `The ledger's admin capability file ${path} does not match this database.`, {
      nextStep: 'Use the file and database from the same backup; never mix state of two installations.',
    });
  }
  return 'reused';
}
