import { stat } from 'node:fs/promises';
import { capabilityKind } from '../credentials/capability.js';
import { readPrivateFile } from '../credentials/private-file.js';
import { UsageError, UserError } from '../errors.js';
import { readHandoff, type Handoff } from '../launcher/handoff/handoff.js';
import { rewriteHandoffStep } from '../launcher/handoff/handoff-step.js';
import { profileMissing, resolveProfileName } from '../launcher/profiles/profile-store.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../launcher/home/stack-home.js';
import { runningSupervisorPid } from '../launcher/home/stack-locks.js';

/*
 * How a server-bound command finds its server (spec §5.6, §7 rule 6; docs/run.md "Handoff").
 * Two modes, decided here and nowhere else:
 *
 * - profile mode (no --url): the selected profile's active handoff gives the endpoint AND the
 *   credential path as one bundle. The handoff counts only while the supervisor that wrote it is
 *   the one running; otherwise the command fails — it never falls back to another server.
 * - manual mode (--url): the URL and --token-file given, exactly as before the launcher.
 *
 * Neither mode reads a URL or a token from the environment (only LEXEC_HOME, to find profiles),
 * so an ambient variable can never redirect a command or its capability.
 */

/** The credential roles a handoff names (the executor's caller capability included). */
export type HandoffRole = keyof Handoff['credentials'];

/** What the command line said about the server; services know nothing of flags beyond this. */
export interface ServerTargetRequest {
  readonly env: NodeJS.ProcessEnv;
  /** `--profile`, when given. */
  readonly profile: string | undefined;
  /** `--url`, when given: manual mode. */
  readonly url: string | undefined;
  /** `--token-file`, when given (manual mode only). */
  readonly tokenFile: string | undefined;
  /** `--ca-file`, when given: the CA an https:// ledger's certificate must be signed by. */
  readonly caFile?: string | undefined;
}

/** The ledger a command talks to: given by hand, or a profile's running stack. */
export type LedgerTargetChoice =
  | { readonly mode: 'manual'; readonly url: string; readonly tokenFile: string }
  | { readonly mode: 'profile'; readonly stack: ActiveStack };

export interface ActiveStack {
  readonly paths: ProfilePaths;
  readonly handoff: Handoff;
}

/** How to go on without a running stack; `manual` only for commands that take --url (manual mode). */
function startStep(name: string, manual: boolean): string {
  const start = `Start it with \`lexec stack start --profile ${name}\``;
  return manual ? `${start} (or pass --url and --token-file to use another ledger by hand).` : `${start}.`;
}

/**
 * The running stack of the selected profile (`--profile`, else the saved selection, else
 * `sandbox`) and its active handoff. A handoff counts only if it parses, names this profile and
 * names the supervisor that runs now (its lock holder, alive); anything else fails.
 */
export async function activeStack(env: NodeJS.ProcessEnv, profileFlag: string | undefined, options: { readonly manualMode?: boolean } = {}): Promise<ActiveStack> {
  const home = lexecHome(env);
  const { name } = await resolveProfileName(home, profileFlag);
  const paths = profilePaths(home, name);
  const supervisor = await runningSupervisorPid(paths);
  if (supervisor === null) {
    const exists = await stat(paths.source).then(
      (info) => info.isFile(),
      () => false,
    );
    if (!exists) throw profileMissing(paths);
    throw new UserError('stack_not_running', `The stack of profile "${name}" is not running, so there is no ledger or executor to talk to.`, {
      nextStep: startStep(name, options.manualMode === true),
    });
  }
  const handoff = await readHandoff(paths);
  if (handoff === null) {
    throw new UserError('handoff_missing', `The stack of profile "${name}" (supervisor pid ${supervisor}) has no active handoff, so its endpoints and credentials cannot be found: it is still starting, or its handoff was removed.`, {
      nextStep: rewriteHandoffStep(name),
    });
  }
  if (handoff.profile !== name) {
    throw new UserError('handoff_invalid', `The active handoff in ${paths.handoffFile} names profile "${handoff.profile}", not "${name}".`, { nextStep: rewriteHandoffStep(name) });
  }
  if (handoff.supervisor_pid !== supervisor) {
    // Left by an earlier supervisor: its endpoints may now belong to anything.
    throw new UserError('handoff_missing', `The handoff of profile "${name}" was written by supervisor pid ${handoff.supervisor_pid}, but pid ${supervisor} runs the stack now; it is not the active handoff.`, {
      nextStep: rewriteHandoffStep(name),
    });
  }
  return { paths, handoff };
}

/** Whether the profile's stack is stopped now (no supervisor runs it): a failure of its servers is then no outage to wait out. */
export async function stackStopped(env: NodeJS.ProcessEnv, profile: string): Promise<boolean> {
  const paths = profilePaths(lexecHome(env), profile);
  return (await runningSupervisorPid(paths)) === null;
}

/**
 * Reads the capability of `role` from the path the handoff names. It must be a private file
 * holding a capability of exactly that kind; errors name the path, never the content.
 */
export async function readHandoffCredential(stack: ActiveStack, role: HandoffRole): Promise<string> {
  const { name } = stack.paths;
  const path = stack.handoff.credentials[role];
  if (path === undefined) {
    const host = stack.handoff.executor === undefined ? 'a ledger host (it runs no executor and no agent)' : 'an executor host (the ledger and its admin and approver capabilities are on the ledger host)';
    throw new UserError('role_not_on_host', `Profile "${name}" is ${host}: it holds no ${role} capability.`, {
      nextStep: stack.handoff.executor === undefined ? 'Run executions on an executor host (docs/deployment.md "Roles").' : 'Run ledger admin verbs and approvals on the ledger host (docs/deployment.md "Roles").',
    });
  }
  const restart = `The stack of profile "${name}" names this file in its handoff; restart the stack (\`lexec stack stop --profile ${name}\`, then \`lexec stack start --profile ${name}\`) to recreate it.`;
  let token: string;
  try {
    token = await readPrivateFile(path, `${role} credential`);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    throw new UserError(error.code, error.message, { nextStep: restart, issues: error.issues, exitCode: error.exitCode });
  }
  if (capabilityKind(token) !== role) {
    throw new UserError('handoff_credential_invalid', `The ${role} credential file ${path} of profile "${name}" does not hold ${/^[aeiou]/.test(role) ? 'an' : 'a'} ${role} capability.`, {
      nextStep: restart,
    });
  }
  return token;
}

/**
 * Which ledger a server-bound ledger command talks to. `--url` selects manual mode (it then
 * needs `--token-file`; `--profile` contradicts it); otherwise the selected profile's active
 * handoff decides endpoint and credential together.
 */
export async function chooseLedgerTarget(request: ServerTargetRequest): Promise<LedgerTargetChoice> {
  if (request.url !== undefined) {
    if (request.profile !== undefined) {
      throw new UsageError('usage_error', '--profile and --url cannot be used together: --url selects manual mode, --profile a profile\'s running stack.', {
        nextStep: 'Drop --url and --token-file to use the profile, or drop --profile to use the ledger at --url.',
      });
    }
    if (request.tokenFile === undefined) {
      throw new UsageError('usage_error', '--url (manual mode) needs --token-file: the absolute path of the capability to present.', {
        nextStep: 'Add --token-file <absolute path>, or drop --url to use the selected profile\'s running stack.',
      });
    }
    return { mode: 'manual', url: request.url, tokenFile: request.tokenFile };
  }
  if (request.tokenFile !== undefined) {
    throw new UsageError('usage_error', '--token-file needs --url: a profile\'s stack supplies its endpoint and credentials together.', {
      nextStep: 'Add --url <ledger base URL> for manual mode, or drop --token-file to use the selected profile.',
    });
  }
  return { mode: 'profile', stack: await activeStack(request.env, request.profile, { manualMode: true }) };
}
