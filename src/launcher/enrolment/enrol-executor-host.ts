import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';
import { readBuildInfo } from '../../build-info.js';
import { capabilityDigest, generateCapability, type CredentialKind } from '../../credentials/capability.js';
import { ensurePrivateDirectory, readPrivateFile } from '../../credentials/private-file.js';
import { errorCode, UsageError, UserError } from '../../errors.js';
import { managedCredentialPaths } from '../../executor/managed-credentials.js';
import { ENROLMENT_TOKEN_PATTERN } from '../../ledger/executor-enrolments.js';
import { writeNewFile } from '../../storage/write-new-file.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../home/stack-home.js';
import { exampleProfilePath, loadProfile, resolveProfileName } from '../profiles/profile-store.js';
import { readEnrolmentState, writeEnrolmentState, type EnrolmentState } from './enrolment-state.js';
import { checkRemoteLineage, remoteLedgerClient, type RemoteLedger } from './remote-ledger.js';

/*
 * `lexec stack enrol` (docs/deployment.md "Enrolment"), run on an executor host: redeems the
 * one-time token the ledger host's operator issued, once. Order: everything that can be checked
 * without spending the token is checked first — the profile is an executor host, the flags agree
 * with it, it is not enrolled yet, the token file is private and well-formed, the remote ledger is
 * of this binary's lineage. Then the host generates its executor→ledger and agent capabilities,
 * writes them 0600, and redeems the token with their digests: no capability crosses the network.
 * A refused redemption removes the files again. Caller, reconciliation and metrics capabilities
 * are the executor's own and are made here too. The ledger's admin capability is never needed.
 */

export interface EnrolRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profileFlag: string | undefined;
  readonly tokenFile: string;
  /** Must agree with the profile's [ledger] url; required to create a profile that does not exist. */
  readonly ledgerUrl: string | undefined;
  readonly caFile: string | undefined;
}

export interface EnrolResult {
  readonly profile: string;
  readonly profile_created: boolean;
  readonly ledger_url: string;
  readonly enrolment_id: string;
  readonly host_name: string;
  readonly agent: { readonly name: string; readonly agent_id: string };
  readonly executor_credential_id: string;
  readonly agent_credential_id: string;
  readonly enrolment_file: string;
}

const absolute = (flag: string, value: string | undefined) => {
  if (value !== undefined && !isAbsolute(value)) {
    throw new UsageError('invalid_flag_value', `${flag} must be an absolute path.`, { nextStep: 'Pass the full path.', issues: [{ path: flag, message: 'must be an absolute path' }] });
  }
};

/** Creates an executor-host profile from the shipped sandbox example: no ledger of its own, [ledger] url, [agent].name = the profile's name. */
async function createExecutorHostProfile(paths: ProfilePaths, ledger: RemoteLedger): Promise<void> {
  const { parse, stringify } = await import('smol-toml');
  const table = parse(await readFile(exampleProfilePath('sandbox'), 'utf8')) as Record<string, Record<string, unknown>>;
  delete table.ports?.ledger;
  table.ledger = { url: ledger.url, ...(ledger.caFile === null ? {} : { ca_file: ledger.caFile }) };
  table.agent = { name: paths.name };
  const text = `# lexec launcher profile — an executor host (docs/deployment.md "Roles"), made by \`lexec stack enrol\`.\n# Its ledger is remote: policies, budgets and approvals are the ledger host's.\n${stringify(table)}\n`;
  await mkdir(paths.dir, { recursive: true, mode: 0o700 });
  await writeFile(paths.source, text, { flag: 'wx', mode: 0o600 });
}

async function remoteLedgerOf(paths: ProfilePaths, home: string, request: EnrolRequest): Promise<{ ledger: RemoteLedger; agentName: string }> {
  const { profile } = await loadProfile(home, paths.name);
  if (profile.kind === 'ledger' || profile.ledger.url === undefined) {
    throw new UserError('not_an_executor_host', `Profile "${paths.name}" is ${profile.kind === 'ledger' ? 'a ledger host' : 'an all-in-one stack with its own ledger'}: only an executor host (a sandbox or live profile with [ledger] url) enrols.`, {
      nextStep: `Set [ledger] url (and ca_file for https) in ${paths.source} and remove its own ledger's settings, or enrol another profile (a new one is created by \`lexec stack enrol --profile <new> --ledger-url <url> …\`).`,
      issues: [{ path: 'ledger.url', message: 'required to enrol' }],
    });
  }
  const ledger = { url: profile.ledger.url, caFile: profile.ledger.ca_file ?? null };
  const mismatch = [
    ...(request.ledgerUrl !== undefined && request.ledgerUrl.replace(/\/+$/, '') !== ledger.url.replace(/\/+$/, '') ? [{ path: '--ledger-url', message: 'differs from the profile\'s [ledger] url' }] : []),
    ...(request.caFile !== undefined && request.caFile !== ledger.caFile ? [{ path: '--ca-file', message: 'differs from the profile\'s [ledger] ca_file' }] : []),
  ];
  if (mismatch.length > 0) {
    throw new UsageError('enrol_profile_mismatch', `The flags name another ledger than profile "${paths.name}" does (${paths.source}); nothing was sent.`, {
      nextStep: 'Leave --ledger-url and --ca-file out (the profile names them), or fix [ledger] in the profile first.',
      issues: mismatch,
    });
  }
  return { ledger, agentName: profile.agent?.name ?? paths.name };
}

async function readToken(path: string): Promise<string> {
  const token = await readPrivateFile(path, 'enrolment token');
  if (!ENROLMENT_TOKEN_PATTERN.test(token)) {
    throw new UserError('enrolment_token_invalid', `The file ${path} does not hold an enrolment token (its content is not shown).`, {
      nextStep: 'Pass --token-file the file `lexec ledger enrolments issue` wrote on the ledger host.',
    });
  }
  return token;
}

/** Writes a new capability file exclusively; an existing one is a conflict (never overwritten). */
async function writeCapability(path: string, kind: CredentialKind): Promise<string> {
  const token = generateCapability(kind);
  await ensurePrivateDirectory(dirname(path));
  if ((await writeNewFile(path, `${token}\n`, 0o600)) === 'exists') {
    throw new UserError('enrol_credential_conflict', `The credential file ${path} exists already; lexec never overwrites a credential file.`, {
      nextStep: 'This profile has credentials of an earlier enrolment or stack: enrol a new profile, or move its state/credentials away after checking what they are.',
    });
  }
  return token;
}

async function absent(path: string): Promise<boolean> {
  try {
    await readFile(path);
    return false;
  } catch (error) {
    return errorCode(error) === 'ENOENT';
  }
}

export async function enrolExecutorHost(request: EnrolRequest): Promise<EnrolResult> {
  absolute('--token-file', request.tokenFile);
  absolute('--ca-file', request.caFile);
  const home = lexecHome(request.env);
  const { name } = await resolveProfileName(home, request.profileFlag);
  const paths = profilePaths(home, name);
  let created = false;
  if (await absent(paths.source)) {
    if (request.ledgerUrl === undefined) {
      throw new UsageError('missing_flag', `There is no profile "${name}" yet; --ledger-url is needed to create it as an executor host.`, {
        nextStep: 'Pass --ledger-url (and --ca-file for https), or write the profile first (docs/deployment.md "Roles").',
        issues: [{ path: '--ledger-url', message: 'required to create the profile' }],
      });
    }
    // Checked with the profile schema before anything is written: the URL must be https, or http on loopback.
    const { profileSchema } = await import('../profiles/profile-schema.js');
    const probe = profileSchema.shape.ledger.safeParse({ url: request.ledgerUrl, ...(request.caFile === undefined ? {} : { ca_file: request.caFile }) });
    if (!probe.success) {
      throw new UsageError('invalid_flag_value', '--ledger-url must be an https:// URL, or http:// on a loopback address (credentials never cross a network in clear).', {
        nextStep: 'Pass the ledger host\'s https URL and --ca-file with the team CA.',
        issues: [{ path: '--ledger-url', message: 'must be https, or http on loopback' }],
      });
    }
    await createExecutorHostProfile(paths, { url: request.ledgerUrl, caFile: request.caFile ?? null });
    created = true;
  }
  const { ledger, agentName } = await remoteLedgerOf(paths, home, request);
  const existing = await readEnrolmentState(paths);
  if (existing !== null) {
    throw new UserError('already_enrolled', `Profile "${name}" is enrolled at ${existing.ledger_url} already (enrolment ${existing.enrolment_id}, agent ${existing.agent.name}); the token was not used.`, {
      nextStep: `Start it: \`lexec stack start --profile ${name}\`. To enrol again, have the old credentials revoked on the ledger host and use a new profile.`,
    });
  }
  const executorFiles = managedCredentialPaths(paths.executorCredentialsDir);
  for (const path of [executorFiles.ledger, paths.agentCapability]) {
    if (!(await absent(path))) {
      throw new UserError('enrol_credential_conflict', `The credential file ${path} exists already; the token was not used.`, {
        nextStep: 'This profile has credentials of an earlier stack: enrol a new profile, or move its state/credentials away after checking what they are.',
      });
    }
  }
  const token = await readToken(request.tokenFile);
  // Another lineage is refused before the token is spent.
  const lineage = await checkRemoteLineage(ledger, readBuildInfo());

  const written: string[] = [];
  let redemption;
  try {
    const executorToken = await writeCapability(executorFiles.ledger, 'executor');
    written.push(executorFiles.ledger);
    const agentToken = await writeCapability(paths.agentCapability, 'agent');
    written.push(paths.agentCapability);
    const redeemer = await remoteLedgerClient(ledger, token);
    redemption = await redeemer.redeemEnrolment({
      agentName,
      executorDigestSha256: capabilityDigest(executorToken).toString('hex'),
      agentDigestSha256: capabilityDigest(agentToken).toString('hex'),
    });
  } catch (error) {
    for (const path of written) await unlink(path).catch(() => undefined);
    throw error;
  }
  // The executor's own capabilities: nobody but this host registers them.
  for (const [path, kind] of [
    [executorFiles.caller, 'caller'],
    [executorFiles.reconciliation, 'reconciliation'],
    [executorFiles.metrics, 'metrics'],
  ] as const) {
    if (await absent(path)) await writeCapability(path, kind);
  }
  const state: EnrolmentState = {
    enrolment_version: 1,
    ledger_url: ledger.url,
    enrolment_id: redemption.enrolment_id,
    host_name: redemption.host_name,
    agent: { name: redemption.agent.name, agent_id: redemption.agent.agent_id },
    executor_credential_id: redemption.executor_credential_id,
    agent_credential_id: redemption.agent_credential_id,
    enrolled_at: new Date().toISOString(),
    ledger_lineage: lineage,
  };
  await writeEnrolmentState(paths, state);
  return {
    profile: name,
    profile_created: created,
    ledger_url: ledger.url,
    enrolment_id: state.enrolment_id,
    host_name: state.host_name,
    agent: state.agent,
    executor_credential_id: state.executor_credential_id,
    agent_credential_id: state.agent_credential_id,
    enrolment_file: paths.enrolmentFile,
  };
}
