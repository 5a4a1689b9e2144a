import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The kinds of capability lexec issues. Each route accepts only the kinds it names. */
export const CREDENTIAL_KINDS = ['admin', 'agent', 'approver', 'executor', 'reconciliation', 'caller', 'metrics'] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

/** The longest grace a rotation may give the old capability (ledger and executor alike): a day. */
export const MAX_ROTATION_GRACE_SECONDS = 86_400;

const CAPABILITY = /^lexec_([a-z]+)_([A-Za-z0-9_-]{43})$/;

/** A new random 256-bit capability, prefixed by its kind: `lexec_<kind>_<43 base64url chars>`. */
export function generateCapability(kind: CredentialKind): string {
  return `lexec_${kind}_${randomBytes(32).toString('base64url')}`;
}

/** The kind a well-formed capability declares, or null for anything else. */
export function capabilityKind(token: string): CredentialKind | null {
  const match = CAPABILITY.exec(token);
  const kind = match?.[1];
  return kind !== undefined && (CREDENTIAL_KINDS as readonly string[]).includes(kind) ? (kind as CredentialKind) : null;
}

/** SHA-256 of the capability: what servers store instead of the capability itself. */
export function capabilityDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The short, indexable part of a digest used to find the stored row before comparing in full. */
export function digestLookup(digest: Buffer): string {
  return digest.subarray(0, 8).toString('hex');
}

/** Constant-time comparison of two digests. */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
