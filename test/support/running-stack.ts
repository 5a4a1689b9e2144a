import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { createLedgerClient } from '../../src/ledger/ledger-client.js';
import { registerPendingCredential, writePendingCredential } from '../../src/services/ledger-credentials.js';
import { generationDir } from '../../src/stack/generation-store.js';
import { writeHandoff, type Handoff } from '../../src/stack/handoff.js';
import { createProfileFromExample } from '../../src/stack/profile-store.js';
import { profilePaths, type ProfilePaths } from '../../src/stack/stack-home.js';
import { acquireSupervisorLock } from '../../src/stack/stack-locks.js';
import { makeTempDir, removeDir, runLexec, type CliOptions, type CliRun } from './cli.js';
import { freePorts } from './free-ports.js';
import { spawnSandbox, type SandboxProcess } from './sandbox-process.js';
import { spawnServerProcess, type ServerProcess } from './server-process.js';

/*
 * A profile's stack running exactly as `lexec stack start` leaves it, built from the foundation
 * while the real start is being written: the shipped sandbox example rendered (with free ports)
 * and activated by the real binary; ledger, sandbox provider and executor started from the
 * generation's files; `bootstrap-managed` run; the profile's local agent and an approver given
 * their capabilities in the profile's credential directory; and the active handoff written with
 * this test process as the supervisor (it holds the supervisor lock, so the handoff is valid).
 */

export type ProfileDocument = Record<string, unknown> & {
  ports: Record<string, number>;
  ledger: { default_policy: Record<string, unknown> };
};

export interface RunningStackOptions {
  /** Profile name (default "sandbox"). */
  readonly profile?: string;
  /** An existing LEXEC_HOME to add the profile to (default: a new temporary one, removed at stop). */
  readonly home?: string;
  /** Edits the parsed profile.toml before it is rendered (ports are already free ones). */
  readonly edit?: (profile: ProfileDocument) => void;
  /** Make the saved selection this profile. */
  readonly select?: boolean;
}

export interface RunningStack {
  readonly home: string;
  readonly paths: ProfilePaths;
  readonly handoff: Handoff;
  readonly ledgerUrl: string;
  readonly executorUrl: string;
  readonly sandbox: SandboxProcess;
  readonly ledger: ServerProcess;
  readonly executor: ServerProcess;
  /** The agent `lexec run` acts as. */
  readonly agentId: string;
  /** `lexec <args>` with LEXEC_HOME set to this stack's home (plus `env`). */
  lexec(args: readonly string[], options?: CliOptions): Promise<CliRun>;
  /** The environment a `lexec` child needs to find this stack. */
  readonly env: Record<string, string>;
  /** The capability of a role, for assertions (never print it). */
  capability(role: keyof Handoff['credentials']): Promise<string>;
  /** Stops the processes (executor, sandbox, ledger), releases the lock, removes a temporary home. */
  stop(): Promise<void>;
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startRunningStack(options: RunningStackOptions = {}): Promise<RunningStack> {
  const ownHome = options.home === undefined;
  const home = options.home ?? (await makeTempDir('lexec-stack-'));
  const name = options.profile ?? 'sandbox';
  const paths = profilePaths(home, name);
  const env = { LEXEC_HOME: home };
  const lexec = (args: readonly string[], cli: CliOptions = {}) => runLexec(args, { ...cli, home, env: { ...env, ...cli.env } });
  const cleanups: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  try {
    await createProfileFromExample(home, name, 'sandbox');
    const [ledgerPort, executorPort, sandboxPort] = await freePorts(3);
    const profile = parse(await readFile(paths.source, 'utf8')) as ProfileDocument;
    profile.ports = { ledger: ledgerPort ?? 0, executor: executorPort ?? 0, sandbox: sandboxPort ?? 0 };
    options.edit?.(profile);
    await writeFile(paths.source, stringify(profile));

    const must = async (args: readonly string[]) => {
      const run = await lexec([...args, '--json'], { timeoutMs: 60_000 });
      if (run.exitCode !== 0) throw new Error(`lexec ${args.join(' ')} failed: ${run.stdout}${run.stderr}`);
      return (JSON.parse(run.stdout) as { result: Record<string, unknown> }).result;
    };
    const rendered = await must(['stack', 'render', '--profile', name]);
    const generation = String(rendered.generation_id);
    await must(['stack', 'activate', '--profile', name, '--generation', generation]);
    if (options.select === true) await must(['stack', 'select', name]);
    const files = generationDir(paths, generation);
    const childEnv = { PATH: process.env.PATH ?? '', HOME: home };

    const ledger = await spawnServerProcess(['ledger', 'serve', '--config', join(files, 'ledger.json')], { startedEvent: 'ledger_started', env: childEnv, startTimeoutMs: 60_000 });
    cleanups.push(() => ledger.stop());
    const ledgerUrl = `http://127.0.0.1:${String(ledgerPort)}`;
    await must(['executor', 'credentials', 'bootstrap-managed', '--config', join(files, 'executor.json'), '--ledger-admin-capability', paths.ledgerAdminCapability]);
    const executor = await spawnServerProcess(['executor', 'serve', '--config', join(files, 'executor.json')], { startedEvent: 'executor_started', env: childEnv, startTimeoutMs: 60_000 });
    cleanups.push(() => executor.stop());
    const completeAfter = String((profile.sandbox as { complete_after_ms?: number } | undefined)?.complete_after_ms ?? 300);
    const sandbox = await spawnSandbox({ args: ['--port', String(sandboxPort), '--complete-after-ms', completeAfter], startTimeoutMs: 60_000 });
    cleanups.push(() => sandbox.stop());
    const executorUrl = `http://127.0.0.1:${String(executorPort)}`;
    await until('the executor to be ready', async () => (await fetch(`${executorUrl}/readyz`)).status === 200);

    // What start does after the ledger is up: the profile's local agent and an approver.
    const admin = (await readFile(paths.ledgerAdminCapability, 'utf8')).trim();
    const client = createLedgerClient({ url: ledgerUrl, token: admin });
    const agentName = (profile.agent as { name: string }).name;
    const agent = await client.addAgent(agentName);
    await registerPendingCredential(client, await writePendingCredential(paths.agentCapability, 'agent'), agent.agent_id);
    await registerPendingCredential(client, await writePendingCredential(paths.approverCapability, 'approver'), null);

    const releaseLock = await acquireSupervisorLock(paths);
    cleanups.push(releaseLock);
    const executorCredentials = managedCredentialPaths(paths.executorCredentialsDir);
    const handoff: Handoff = {
      handoff_version: 1,
      profile: name,
      generation_id: generation,
      supervisor_pid: process.pid,
      written_at: new Date().toISOString(),
      ledger: { endpoint: ledgerUrl },
      executor: { endpoint: executorUrl },
      credentials: {
        admin: paths.ledgerAdminCapability,
        agent: paths.agentCapability,
        approver: paths.approverCapability,
        caller: executorCredentials.caller,
        reconciliation: executorCredentials.reconciliation,
      },
      agent: { name: agentName, agent_id: agent.agent_id },
    };
    await writeHandoff(paths, handoff);

    return {
      home,
      paths,
      handoff,
      ledgerUrl,
      executorUrl,
      sandbox,
      ledger,
      executor,
      agentId: agent.agent_id,
      env,
      lexec,
      capability: async (role) => (await readFile(handoff.credentials[role], 'utf8')).trim(),
      async stop() {
        await stopAll();
        if (ownHome) await removeDir(home);
      },
    };
  } catch (error) {
    await stopAll();
    if (ownHome) await removeDir(home);
    throw error;
  }
}
