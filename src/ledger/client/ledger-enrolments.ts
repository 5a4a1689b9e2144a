import { unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';
import { errorCode, UsageError, UserError } from '../../errors.js';
import { writeNewFile } from '../../storage/write-new-file.js';
import type { LedgerConnector } from './ledger-connector.js';
import type { LedgerEnrolment } from './ledger-enrolments-client.js';

/*
 * `lexec ledger enrolments …` (docs/ledger-cli.md, docs/deployment.md "Enrolment"): the ledger
 * host's operator issues a one-time token for an executor host, lists and revokes them. `issue`
 * writes the token to a NEW 0600 file (never over an existing one) and reports only where it is
 * and when it expires: the token is in no result, message or log.
 */

export interface EnrolmentIssueRequest {
  readonly target: LedgerConnector;
  readonly hostName: string;
  readonly agentName: string | null;
  readonly tokenFile: string;
  readonly ttlMinutes: number;
}

export interface EnrolmentIssueResult {
  readonly enrolment: LedgerEnrolment;
  readonly token_file: string;
}
export interface EnrolmentListResult {
  readonly enrolments: LedgerEnrolment[];
}
export interface EnrolmentRevokeResult {
  readonly enrolment: LedgerEnrolment;
  readonly changed: boolean;
}

export async function issueEnrolment(request: EnrolmentIssueRequest): Promise<EnrolmentIssueResult> {
  if (!isAbsolute(request.tokenFile)) {
    throw new UsageError('invalid_flag_value', '--token-file must be an absolute path.', {
      nextStep: 'Pass the full path of a file that does not exist yet; lexec creates it 0600.',
      issues: [{ path: 'token_file', message: 'must be an absolute path' }],
    });
  }
  // Claimed before the ledger is asked: a path that is taken costs no token.
  const claimed = await writeNewFile(request.tokenFile, '', 0o600).catch((error: unknown) => {
    throw new UserError('token_file_unwritable', `The file ${request.tokenFile} cannot be created (${errorCode(error) ?? 'error'}).`, {
      nextStep: `Check that ${dirname(request.tokenFile)} exists and this user may write there.`,
      issues: [{ path: 'token_file', message: 'cannot be created' }],
    });
  });
  if (claimed === 'exists') {
    throw new UserError('token_file_exists', `The file ${request.tokenFile} already exists; lexec never overwrites a file that may hold a secret.`, {
      nextStep: 'Pass --token-file a path that does not exist yet (or move the old file away after checking what it is).',
      issues: [{ path: 'token_file', message: 'already exists' }],
    });
  }
  try {
    const client = await request.target('admin');
    const issued = await client.issueEnrolment({ hostName: request.hostName, agentName: request.agentName, ttlMinutes: request.ttlMinutes });
    await writeFile(request.tokenFile, `${issued.token}\n`, { mode: 0o600 });
    return { enrolment: issued.enrolment, token_file: request.tokenFile };
  } catch (error) {
    await unlink(request.tokenFile).catch(() => undefined);
    throw error;
  }
}

export async function listEnrolments(request: { target: LedgerConnector }): Promise<EnrolmentListResult> {
  return { enrolments: await (await request.target('admin')).listEnrolments() };
}

export async function revokeEnrolment(request: { target: LedgerConnector; enrolmentId: string }): Promise<EnrolmentRevokeResult> {
  if (!/^enr_[0-9a-f-]{36}$/.test(request.enrolmentId)) {
    throw new UsageError('invalid_argument', 'ENROLMENT_ID must be an enrolment id (enr_ followed by a UUID, as `lexec ledger enrolments list` shows).', {
      nextStep: '`lexec ledger enrolments list` shows the enrolments.',
      issues: [{ path: 'enrolment_id', message: 'must be an enrolment id' }],
    });
  }
  return (await request.target('admin')).revokeEnrolment(request.enrolmentId);
}
