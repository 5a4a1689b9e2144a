import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { capabilityDigest, capabilityKind, generateCapability } from '../credentials/capability.js';
import { ensurePrivateDirectory, readPrivateFile, readPrivateFileIfPresent } from '../credentials/private-file.js';
import { UserError } from '../errors.js';
import { createLedgerClient, type LedgerClient } from '../ledger/client/ledger-client.js';
import { connectStackLedger, ledgerBaseUrl, stackLedgerTrust } from './connect-ledger.js';
import type { ActiveStack } from './locate-stack.js';
import { writeNewFile } from '../storage/write-new-file.js';
import { z } from 'zod';
import { freeText } from '../config/schema-parts.js';

/*
 * The console decides as the person who signed in (docs/console.md "Named approvers"), and
 * `lexec ledger authorizations approve|deny --as <name>` as the person named: each name has its own
 * approver credential at the ledger, carrying the name (`holder_name`), so every decision records
 * who made it and a lost race reads "already approved by Ada at 12:01". One name is one credential
 * for the console and the CLI alike. The capability lives in a private file of the profile
 * (`credentials/approvers/<name digest>.capability`, 0600 in 0700), made on the name's first
 * decision and registered again on each one (idempotent: `unchanged`). A credential an operator
 * revoked stays revoked: lexec then refuses to decide as that name instead of making it a new one.
 */

/** A person's name as an approver: 1-100 characters once trimmed, nothing shaped like a secret. */
export const approverName = freeText(z.string().trim().min(1, 'must not be blank').max(100, 'must be at most 100 characters'));

/** The file of a name's approver capability: named by a digest, so no name can reach the path. */
export function namedApproverFile(stack: ActiveStack, name: string): string {
  const key = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 16);
  return join(dirname(stack.paths.approverCapability), 'approvers', `${key}.capability`);
}

async function capabilityOf(file: string): Promise<string> {
  const existing = await readPrivateFileIfPresent(file, 'named approver capability');
  if (existing !== null) {
    if (capabilityKind(existing) !== 'approver') throw new UserError('local_credential_conflict', `The file ${file} does not hold an approver capability; it was left as it is.`, { nextStep: `Move ${file} away after checking what it is.` });
    return existing;
  }
  const token = generateCapability('approver');
  await ensurePrivateDirectory(dirname(file));
  // Two sessions of one name deciding at once: the second reads what the first wrote.
  return (await writeNewFile(file, `${token}\n`, 0o600)) === 'created' ? token : capabilityOf(file);
}

/** A ledger client that decides as `name`, its credential made and registered (with the stack's admin capability) when needed. */
export async function namedApproverClient(stack: ActiveStack, name: string): Promise<LedgerClient> {
  const file = namedApproverFile(stack, name);
  const token = await capabilityOf(file);
  const digest = capabilityDigest(token).toString('hex');
  const admin = await connectStackLedger(stack, 'admin');
  try {
    await admin.registerCredential(`lexec-console-approver-${digest.slice(0, 16)}`, { kind: 'approver', agentId: null, digestSha256: digest, holderName: name });
  } catch (error) {
    if (error instanceof UserError && error.code === 'ledger_conflict') {
      throw new UserError('approver_credential_revoked', `The approver credential of "${name}" was revoked at the ledger, so lexec does not decide as that name.`, {
        nextStep: '`lexec ledger credentials list --kind approver` shows it; an operator who wants this person to decide again issues them a new credential (or rotates the revoked one\'s successor).',
      });
    }
    throw error;
  }
  return createLedgerClient({ url: ledgerBaseUrl(stack.handoff.ledger.endpoint), token, reloadToken: () => readPrivateFile(file, 'named approver capability'), ...(await stackLedgerTrust(stack)) });
}
