import { z } from 'zod';
import { writePrivateFile } from '../../credentials/private-file.js';
import { UserError } from '../../errors.js';
import { readJsonFile } from '../../storage/read-json-file.js';
import { toFieldIssues } from '../../config/zod-issues.js';
import type { ProfilePaths } from '../home/stack-home.js';

/*
 * An executor host's enrolment, as `stack enrol` records it in the profile's state
 * (`state/enrolment.json`, 0600 in the 0700 state directory): which ledger, which agent and which
 * credential ids it was given. Ids only: the capabilities are in their own private files.
 */

export const ENROLMENT_STATE_VERSION = 1;

export const enrolmentStateSchema = z.strictObject({
  enrolment_version: z.literal(ENROLMENT_STATE_VERSION),
  ledger_url: z.string(),
  enrolment_id: z.string(),
  host_name: z.string(),
  agent: z.strictObject({ name: z.string(), agent_id: z.string() }),
  executor_credential_id: z.string(),
  agent_credential_id: z.string(),
  enrolled_at: z.iso.datetime(),
  ledger_lineage: z.strictObject({ product_version: z.string(), contract_version: z.string(), commit: z.string(), build_kind: z.string() }),
});
export type EnrolmentState = z.output<typeof enrolmentStateSchema>;

export async function writeEnrolmentState(paths: ProfilePaths, state: EnrolmentState): Promise<void> {
  await writePrivateFile(paths.enrolmentFile, `${JSON.stringify(enrolmentStateSchema.parse(state), null, 2)}\n`);
}

/** The host's enrolment, or null when it has not enrolled; a damaged record is a user error. */
export async function readEnrolmentState(paths: ProfilePaths): Promise<EnrolmentState | null> {
  const file = await readJsonFile(paths.enrolmentFile);
  if (file.kind === 'missing') return null;
  const parsed = enrolmentStateSchema.safeParse(file.kind === 'json' ? file.document : null);
  if (!parsed.success) {
    throw new UserError('enrolment_state_invalid', `The enrolment record ${paths.enrolmentFile} of profile "${paths.name}" is damaged.`, {
      nextStep: `Move it away and enrol again with a new token (\`lexec stack enrol --profile ${paths.name} …\`).`,
      issues: toFieldIssues(parsed.error.issues),
    });
  }
  return parsed.data;
}
