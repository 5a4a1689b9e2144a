import { Flags } from '@oclif/core';
import type { LedgerConnector } from '../ledger/client/ledger-connector.js';
import { ledgerConnector, stackAgent, type LedgerTarget } from '../stack-client/connect-ledger.js';
import { chooseLedgerTarget } from '../stack-client/locate-stack.js';
import { approverName, namedApproverClient } from '../stack-client/named-approver.js';
import { AGENT_ID, AGENT_NAME, type AgentChoice } from '../ledger/client/agent-choice.js';
import { BugError, UsageError } from '../errors.js';
import { profileFlags } from './profile-flags.js';

/**
 * The flags of every server-bound ledger command. Without `--url` the command uses the selected
 * profile's running stack (`--profile`, else `lexec stack select`, else "sandbox"): its handoff
 * names the ledger and the credential file to present. `--url` opts into manual mode, which needs
 * `--token-file`. There is deliberately no flag or environment variable that takes the
 * capability itself. Resolution: src/stack-client/locate-stack.ts.
 */
export const ledgerTargetFlags = {
  ...profileFlags,
  url: Flags.string({
    summary: 'Manual mode: base URL of a ledger, e.g. http://127.0.0.1:7400 (plain http only on loopback); needs --token-file. Default: the profile\'s running stack.',
    helpGroup: 'GLOBAL',
  }),
  'token-file': Flags.string({
    summary: 'Manual mode (with --url): absolute path of a private (0600) file holding the capability to present.',
    helpGroup: 'GLOBAL',
  }),
  'ca-file': Flags.string({
    summary: 'Absolute path of the team CA certificate (ca.pem from `lexec stack tls init`) an https:// ledger must prove itself against; verification is never skipped.',
    helpGroup: 'GLOBAL',
  }),
};

type TargetFlags = { profile?: string | undefined; url?: string | undefined; 'token-file'?: string | undefined; 'ca-file'?: string | undefined };

function targetOf(flags: TargetFlags): LedgerTarget {
  return { env: process.env, profile: flags.profile, url: flags.url, tokenFile: flags['token-file'], caFile: flags['ca-file'] };
}

/** The service-side view of the flags: how the verb connects to the ledger they name. */
export function ledgerTarget(flags: TargetFlags): LedgerConnector {
  return ledgerConnector(targetOf(flags));
}

/** `--as` of a decision: the person it is made as (profile mode), their own approver credential. */
export const deciderFlags = {
  as: Flags.string({
    summary: 'Decide as this person (profile mode): their own approver credential, named, made and registered with the stack\'s admin capability on first use — the decision and the audit trail name them, as the console\'s sign-in does.',
  }),
};

/**
 * How a decision reaches the ledger: as the profile's approver, as in `ledgerTarget`; with `--as`,
 * as that person's named approver credential (stack-client/named-approver.ts) — profile mode only,
 * since with `--url` the decision is the holder's of `--token-file`.
 */
export function deciderTarget(flags: TargetFlags & { as?: string | undefined }): LedgerConnector {
  if (flags.as === undefined) return ledgerTarget(flags);
  if (flags.url !== undefined) {
    throw new UsageError('usage_error', '--as and --url cannot be used together: with --url the decision is made as the holder of --token-file.', {
      nextStep: 'Leave out --as (the credential in --token-file decides), or leave out --url and --token-file to decide on the profile\'s stack as the person named.',
    });
  }
  const parsed = approverName.safeParse(flags.as);
  if (!parsed.success) {
    // The reason only: a name refused for its shape is not echoed.
    throw new UsageError('invalid_flag_value', `--as ${parsed.error.issues[0]?.message ?? 'is not a name'}.`, { nextStep: 'Give the name of the person deciding, for example --as "Ada Lovelace".' });
  }
  const name = parsed.data;
  const target = targetOf(flags);
  const asProfile = ledgerConnector(target);
  return async (role) => {
    if (role !== 'approver') return asProfile(role);
    const choice = await chooseLedgerTarget(target);
    if (choice.mode === 'manual') throw new BugError('--as reached manual mode');
    return namedApproverClient(choice.stack, name);
  };
}

/**
 * `--agent-id` of a policy verb: an agent id, or an agent name the ledger resolves; left out, the
 * profile's own agent (profile mode only).
 */
export function agentChoice(flags: TargetFlags & { 'agent-id'?: string | undefined }): AgentChoice {
  const given = flags['agent-id'] ?? null;
  if (given !== null && !AGENT_ID.test(given) && !AGENT_NAME.test(given)) {
    throw new UsageError('invalid_flag_value', '--agent-id must be an agent id (agt_ followed by a UUID) or an agent name, as `lexec ledger agents list` shows.', {
      nextStep: 'Run the command with --help to see its flags.',
    });
  }
  return { given, stackAgent: () => stackAgent(targetOf(flags)) };
}
