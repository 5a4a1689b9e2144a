import { readFileSync } from 'node:fs';
import { CONTRACT_VERSION, PRODUCT_NAME } from './product.js';

export type BuildKind = 'release' | 'development';

/** What a lexec binary says about itself. Every `/version` route and `lexec version` use this. */
export interface BuildInfo {
  readonly product: string;
  /** Exact product version with a leading `v` and any prerelease suffix, e.g. `v0.3.0`. */
  readonly product_version: string;
  readonly contract_version: string;
  /** Full 40-hex source commit, or `unknown` for an unstamped build. */
  readonly commit: string;
  readonly build_kind: BuildKind;
}

export const UNKNOWN_COMMIT = 'unknown';

const COMMIT_PATTERN = /^[0-9a-f]{40}$/;

/**
 * Interprets the build stamp written by `scripts/build.mjs`. Anything but a well-formed stamp
 * means an unstamped build: commit `unknown`, kind `development` — a build never claims to be a
 * release by accident. Checked by hand rather than with zod so that `lexec version` stays fast.
 */
export function interpretBuildStamp(stamp: unknown): Pick<BuildInfo, 'commit' | 'build_kind'> {
  const unstamped = { commit: UNKNOWN_COMMIT, build_kind: 'development' } as const;
  if (typeof stamp !== 'object' || stamp === null) return unstamped;
  const { commit, build_kind: kind } = stamp as Record<string, unknown>;
  if (typeof commit !== 'string' || !COMMIT_PATTERN.test(commit)) return unstamped;
  if (kind !== 'release' && kind !== 'development') return unstamped;
  return { commit, build_kind: kind };
}

/** Reads `package.json` and the build stamp beside the compiled code. */
export function readBuildInfo(): BuildInfo {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  let stamp: unknown = null;
  try {
    stamp = JSON.parse(readFileSync(new URL('./build-stamp.json', import.meta.url), 'utf8'));
  } catch {
    // No stamp (or an unreadable one): an unstamped development build.
  }
  return {
    product: PRODUCT_NAME,
    product_version: `v${pkg.version}`,
    contract_version: CONTRACT_VERSION,
    ...interpretBuildStamp(stamp),
  };
}
