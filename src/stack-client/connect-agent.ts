import { readCaFile } from '../http/tls-trust.js';
import { capabilityKind } from '../credentials/capability.js';
import { UsageError, UserError } from '../errors.js';
import { createExecutorClient, type ExecutorClient } from '../executor/client/executor-client.js';
import type { LedgerClient } from '../ledger/client/ledger-client.js';
import { connectStackLedger, ledgerBaseUrl, readLedgerToken } from './connect-ledger.js';
import { activeStack } from './locate-stack.js';
import { connectStackExecutor } from './connect-executor.js';
import { createLedgerClient } from '../ledger/client/ledger-client.js';
import { resolveProfileName } from '../launcher/profiles/profile-store.js';
import { lexecHome } from '../launcher/home/stack-home.js';

/*
 * How `lexec agent mcp` reaches a stack (spec §5.6, docs/agent.md "Connecting"). Two modes:
 *
 * - profile mode: the profile is fixed when the process starts (`--profile`, else the saved
 *   selection, else `sandbox`), and every tool call reads that profile's active handoff again, so a
 *   stack restarted on new ports is found and a stopped one fails the call, never redirects it.
 * - manual mode (`--url`): the ledger URL and the agent capability file, plus the executor URL and
 *   the caller capability file, given by hand.
 *
 * Either way the process reads exactly two capabilities — the agent's and the executor caller's —
 * never the admin, approver or reconciliation capability, so an agent can request spend but can
 * never approve, administer or reconcile it.
 */

export interface AgentTarget {
  readonly ledger: LedgerClient;
  readonly executor: ExecutorClient;
  /** The profile, in profile mode (for the approve command a human runs); null in manual mode. */
  readonly profile: string | null;
}

export interface AgentConnectionRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profile: string | undefined;
  readonly url: string | undefined;
  readonly tokenFile: string | undefined;
  readonly executorUrl: string | undefined;
  readonly executorTokenFile: string | undefined;
  /** `--ca-file` (manual mode): the team CA both https:// servers must prove themselves against. */
  readonly caFile?: string | undefined;
}

/** Connects once per tool call; what it returns is used for that call only. */
export type ConnectAgent = () => Promise<AgentTarget>;

const MANUAL_FLAGS = ['--url', '--token-file', '--executor-url', '--executor-token-file'] as const;

/**
 * Decides the mode from the flags and proves it works once (the profile's handoff is active, or
 * the manual files hold capabilities of the right kinds); returns the per-call connector.
 */
export async function prepareAgentConnection(request: AgentConnectionRequest): Promise<{ connect: ConnectAgent; profile: string | null }> {
  const manual = [request.url, request.tokenFile, request.executorUrl, request.executorTokenFile];
  if (manual.some((value) => value !== undefined)) {
    if (request.profile !== undefined) {
      throw new UsageError('usage_error', '--profile and --url cannot be used together: --url selects manual mode, --profile a profile\'s running stack.', {
        nextStep: 'Drop the manual flags to use the profile, or drop --profile.',
      });
    }
    const missing = MANUAL_FLAGS.filter((_, index) => manual[index] === undefined);
    if (missing.length > 0) {
      throw new UsageError('usage_error', `Manual mode needs all of ${MANUAL_FLAGS.join(', ')}; missing ${missing.join(', ')}.`, {
        nextStep: 'Pass the ledger and executor URLs and the absolute paths of the agent and caller capability files, or drop them all to use a profile.',
      });
    }
    const ledgerUrl = ledgerBaseUrl(request.url ?? '');
    const executorUrl = executorBaseUrl(request.executorUrl ?? '');
    const caCertificate = request.caFile === undefined ? undefined : await readCaFile(request.caFile, '--ca-file');
    const trust = caCertificate === undefined ? {} : { caCertificate };
    const connect = async (): Promise<AgentTarget> => {
      const agentToken = await readLedgerToken(request.tokenFile ?? '');
      const callerToken = await readLedgerToken(request.executorTokenFile ?? '');
      if (capabilityKind(agentToken) !== 'agent') throw wrongKind('--token-file', 'an agent');
      if (capabilityKind(callerToken) !== 'caller') throw wrongKind('--executor-token-file', 'an executor caller');
      return {
        ledger: createLedgerClient({ url: ledgerUrl, token: agentToken, reloadToken: () => readLedgerToken(request.tokenFile ?? ''), ...trust }),
        executor: createExecutorClient({ url: executorUrl, token: callerToken, reloadToken: () => readLedgerToken(request.executorTokenFile ?? ''), ...trust }),
        profile: null,
      };
    };
    await connect();
    return { connect, profile: null };
  }
  const { name } = await resolveProfileName(lexecHome(request.env), request.profile);
  const connect = async (): Promise<AgentTarget> => {
    const stack = await activeStack(request.env, name);
    return {
      ledger: await connectStackLedger(stack, 'agent'),
      executor: await connectStackExecutor(stack, 'caller'),
      profile: name,
    };
  };
  await connect();
  return { connect, profile: name };
}

function wrongKind(flag: string, kind: string): UserError {
  return new UserError('token_file_invalid', `${flag} must name a file holding ${kind} capability.`, {
    nextStep: 'Point it at the capability file lexec wrote for that role (`lexec ledger credentials create`).',
  });
}

/** The executor base URL: the same rules as a ledger URL (http only on loopback), its own flag in errors. */
function executorBaseUrl(raw: string): string {
  try {
    return ledgerBaseUrl(raw);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    throw new UsageError('executor_url_invalid', error.message.replace('--url', '--executor-url'), { nextStep: 'Pass the executor base URL, for example --executor-url http://127.0.0.1:7410.' });
  }
}
