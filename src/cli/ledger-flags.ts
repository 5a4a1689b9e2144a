import { Flags } from '@oclif/core';

/**
 * The flags of every server-bound ledger command: an explicit base URL and the absolute path of
 * a private capability file ("manual mode"; a later launcher issue adds profile handoff). There
 * is deliberately no flag or environment variable that takes the capability itself.
 */
export const ledgerTargetFlags = {
  url: Flags.string({ required: true, summary: 'Base URL of the ledger, e.g. http://127.0.0.1:7400 (plain http only on loopback).' }),
  'token-file': Flags.string({
    required: true,
    summary: 'Absolute path of a private (0600) file holding the capability to present.',
  }),
};

/** The service-side view of the two flags. */
export function ledgerTarget(flags: { url: string; 'token-file': string }): { url: string; tokenFile: string } {
  return { url: flags.url, tokenFile: flags['token-file'] };
}
