import { readFile } from 'node:fs/promises';
import { readHandoff, type Handoff } from '../../src/launcher/handoff/handoff.js';
import type { ProfilePaths } from '../../src/launcher/home/stack-home.js';
import { removeDir, runLexec, type CliOptions, type CliRun } from './cli.js';
import type { TomlTable } from './example-profiles.js';
import { sandboxControl, type SandboxControl } from './sandbox-process.js';
import { isBindConflict } from './free-ports.js';
import { addStackProfile, jsonResult, makeStackHome, renderAndActivate, stopStack, type StackHome } from './stack-home.js';

/*
 * A profile's stack as the operator gets it: the sandbox example on free ports in a LEXEC_HOME,
 * started by the real `lexec stack start` (supervisor, ledger, credential bootstrap, the local
 * agent and approver, executor, sandbox provider, the active handoff) and stopped by the real
 * `lexec stack stop`. What the tests need of it is read back from the handoff start wrote.
 */

export interface RunningStackOptions {
  /** Profile name (default "sandbox"). */
  readonly profile?: string;
  /** An existing LEXEC_HOME to add the profile to (default: a new temporary one, removed at stop). */
  readonly home?: string;
  /** Edits the example's table before it is written (ports are already free ones). */
  readonly edit?: (profile: TomlTable) => void;
  /** The example profile it starts from (default `sandbox`). */
  readonly example?: string;
  /** More environment for `stack start` (the supervisor and its children inherit it). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface RunningStack {
  readonly home: string;
  readonly paths: ProfilePaths;
  /** The active handoff `stack start` wrote. */
  readonly handoff: Handoff;
  /** The handoff's credential files: an all-in-one stack's names every role. */
  readonly credentials: Required<Handoff['credentials']>;
  readonly ledgerUrl: string;
  readonly executorUrl: string;
  /** The control API (faults, submissions) of the sandbox provider the supervisor runs. */
  readonly sandbox: SandboxControl;
  /** The agent `lexec run` acts as. */
  readonly agentId: string;
  /** `lexec <args>` with LEXEC_HOME set to this stack's home (plus `env`). */
  lexec(args: readonly string[], options?: CliOptions): Promise<CliRun>;
  /** The environment a `lexec` child needs to find this stack. */
  readonly env: Record<string, string>;
  /** The capability of a role, for assertions (never print it). */
  capability(role: keyof Handoff['credentials']): Promise<string>;
  /** `lexec stack stop`, then `lexec stack start` again on the same state (a new supervisor). */
  restart(): Promise<void>;
  /** `lexec stack stop`; removes a temporary home. */
  stop(): Promise<void>;
}

/** `lexec stack start` failed; the message carries its output (which names a port it could not bind). */
class StackStartFailed extends Error {
  constructor(run: CliRun) {
    super(`lexec stack start failed (exit ${run.exitCode}): ${run.stdout}${run.stderr}`);
  }
}

/** First starts tried on fresh ports after a bind conflict before giving up. */
const START_ATTEMPTS = 3;

export async function startRunningStack(options: RunningStackOptions = {}): Promise<RunningStack> {
  const ownHome = options.home === undefined;
  const profile = { profile: options.profile, edit: options.edit, example: options.example };
  let stack: StackHome = options.home === undefined ? await makeStackHome({ prefix: 'lexec-stack-', ...profile }) : await addStackProfile(options.home, profile);
  const { home, paths } = stack;
  const stop = async () => {
    await stopStack(stack);
    if (ownHome) await removeDir(home);
  };
  const start = async () => {
    const started = await runLexec(['stack', 'start', '--profile', paths.name, '--json'], { env: { ...options.env, LEXEC_HOME: home }, home, timeoutMs: 120_000 });
    if (started.exitCode !== 0) throw new StackStartFailed(started);
    jsonResult(started);
  };
  /**
   * The profile's ports are this worker's own (free-ports.ts), so nothing else should hold one;
   * should something all the same, the profile gets fresh ports and a new generation, once more.
   */
  const firstStart = async () => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await start();
        return;
      } catch (error) {
        if (!(error instanceof StackStartFailed) || !isBindConflict(error.message) || attempt === START_ATTEMPTS) throw error;
        await stopStack(stack);
        stack = await addStackProfile(home, profile);
        await renderAndActivate(home, paths.name);
      }
    }
  };
  try {
    await firstStart();
    const handoff = await readHandoff(paths);
    if (handoff === null) throw new Error('stack start left no handoff');
    const { admin, agent, approver, caller, reconciliation } = handoff.credentials;
    if (handoff.executor === undefined || handoff.agent === undefined || admin === undefined || agent === undefined || approver === undefined || caller === undefined || reconciliation === undefined) {
      throw new Error('an all-in-one stack wrote a handoff without every role');
    }
    const credentials = { admin, agent, approver, caller, reconciliation };
    const env = { LEXEC_HOME: home };
    return {
      home,
      paths,
      handoff,
      credentials,
      ledgerUrl: handoff.ledger.endpoint,
      executorUrl: handoff.executor.endpoint,
      sandbox: sandboxControl(`http://127.0.0.1:${String(stack.ports.sandbox)}`),
      agentId: handoff.agent.agent_id,
      env,
      lexec: (args, cli = {}) => runLexec(args, { ...cli, home, env: { ...env, ...cli.env } }),
      capability: async (role) => (await readFile(credentials[role], 'utf8')).trim(),
      async restart() {
        await stopStack(stack);
        await start();
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
