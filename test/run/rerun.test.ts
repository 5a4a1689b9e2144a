import { describe, expect, it } from 'vitest';
import { expectResult } from '../support/cli.js';
import { tableAt } from '../support/example-profiles.js';
import type { BackgroundRun } from '../support/background-run.js';
import { runSessionPerFile, type RunSession } from '../support/run-session.js';
import type { RunningStack } from '../support/running-stack.js';

/*
 * Issue 27 item 5: one hold per intent. `lexec run` sends its spend request with an idempotency
 * key derived from the job (docs/run.md "Running the same command again"), so the same command run
 * again while its request is open — the up-arrow after a closed terminal or Ctrl-C, or a second
 * terminal — continues that request instead of opening a second approval. On a real sandbox stack
 * whose policy sends every run to an approver; the test approves with the printed command, as a
 * person in another terminal would.
 */

interface RunJson {
  authorization: { token_id: string; status: string; amount_units: string };
  execution: { execution_id: string; state: string } | null;
  spent: { amount_units: string } | null;
  files: { path: string }[];
}
interface Authorization {
  token_id: string;
  status: string;
  created_at: string;
  execution_id: string | null;
  settlement: { amount_units: string } | null;
}

let stack: RunningStack;
let lexec: RunSession['lexec'];
let startRun: RunSession['startRun'];

runSessionPerFile(
  (session) => {
    ({ stack, lexec, startRun } = session);
  },
  {
    edit: (profile) => {
      tableAt(profile, 'ledger.default_policy').approval_threshold_units = '1000';
      tableAt(profile, 'sandbox').complete_after_ms = 300;
    },
  },
);

/** The approve command a waiting run prints, for an authorization other than `not` when given. */
const approveLine = (not?: string) => new RegExp(`approve it with:\\s+lexec ledger authorizations approve (${not === undefined ? '' : `(?!${not})`}[0-9a-f-]{36}) --profile sandbox\\n`);
/** What a rerun says on stderr when it continues the request opened at `createdAt`, as a pattern. */
const continuing = (createdAt: string) =>
  new RegExp(`continuing the request this command opened at ${createdAt} \\(awaiting approval\\) instead of opening a new one`.replaceAll('.', '\\.'));

async function authorizations(): Promise<Authorization[]> {
  return (expectResult(await lexec(['ledger', 'authorizations', 'list', '--json'])) as { authorizations: Authorization[] }).authorizations;
}

/** The authorizations the ledger holds now that it did not hold in `before`. */
async function since(before: readonly Authorization[]): Promise<Authorization[]> {
  const known = new Set(before.map((authorization) => authorization.token_id));
  return (await authorizations()).filter((authorization) => !known.has(authorization.token_id));
}

async function approve(tokenId: string): Promise<void> {
  const run = await lexec(['ledger', 'authorizations', 'approve', tokenId, '--profile', 'sandbox', '--json']);
  expect(run.exitCode, run.stderr).toBe(0);
}

const result = async (run: BackgroundRun) => expectResult(await run.done) as RunJson;

describe('lexec run again while its request awaits approval', () => {
  it.each([['SIGKILL (the terminal closed)', 'SIGKILL'], ['SIGINT (Ctrl-C)', 'SIGINT']] as const)(
    'after %s, the same command continues the pending request: still one request, one approval, the rerun succeeds with one settlement',
    async (_what, signal) => {
      const before = await authorizations();
      const args = ['a harbour at dusk, rerun after ' + signal, '--out', `rerun-${signal}`, '--json'];
      const first = startRun(args);
      const [, tokenId = ''] = await first.waitFor(approveLine());
      await first.waitFor(/waiting for the decision/);
      first.signal(signal);
      await first.done;
      const [pending] = await since(before);
      expect(await since(before)).toEqual([expect.objectContaining({ token_id: tokenId, status: 'requested' })]);

      const again = startRun(args);
      await again.waitFor(continuing(pending?.created_at ?? 'missing'));
      const [, sameId] = await again.waitFor(approveLine());
      expect(sameId).toBe(tokenId);
      await again.waitFor(/waiting for the decision/);
      // The ledger still holds exactly the one request.
      expect(await since(before)).toEqual([expect.objectContaining({ token_id: tokenId, status: 'requested' })]);

      await approve(tokenId);
      const finished = await result(again);
      expect(finished.authorization).toEqual({ token_id: tokenId, status: 'settled', amount_units: '3000' });
      expect(finished.execution?.state).toBe('succeeded');
      expect(finished.files).toHaveLength(1);
      expect(await since(before)).toEqual([expect.objectContaining({ token_id: tokenId, status: 'settled', settlement: expect.objectContaining({ amount_units: '3000' }) as unknown })]);
    },
    120_000,
  );

  it('once that request was used, the same command is a new job: a new request for a new approval', async () => {
    const args = ['a paper lantern, repeated later', '--out', 'later', '--no-wait', '--json'];
    const first = expectResult(await lexec(['run', ...args])) as RunJson;
    const again = await lexec(['run', ...args]);
    expect((expectResult(again) as RunJson).authorization.token_id).toBe(first.authorization.token_id);
    expect(again.stderr).toContain('instead of opening a new one');
    await approve(first.authorization.token_id);
    const done = expectResult(await lexec(['run', ...args.filter((arg) => arg !== '--no-wait')])) as RunJson;
    expect(done.authorization).toEqual({ token_id: first.authorization.token_id, status: 'settled', amount_units: '3000' });
    const later = expectResult(await lexec(['run', ...args])) as RunJson;
    expect(later.authorization.token_id).not.toBe(first.authorization.token_id);
    expect(later.authorization.status).toBe('requested');
  }, 120_000);

  it('two identical runs at once share the one request, the one approval and the one execution; one settlement', async () => {
    const before = await authorizations();
    const submittedBefore = (await stack.sandbox.submissions()).length;
    const args = ['two terminals, one job', '--out', 'together', '--json'];
    const first = startRun(args);
    const [, tokenId = ''] = await first.waitFor(approveLine());
    const second = startRun(args);
    await second.waitFor(/instead of opening a new one/);
    expect((await second.waitFor(approveLine()))[1]).toBe(tokenId);
    await approve(tokenId);
    const [one, two] = [await result(first), await result(second)];
    expect(one.execution?.state).toBe('succeeded');
    expect(two.execution).toEqual(one.execution);
    expect(two.authorization).toEqual(one.authorization);
    expect(await since(before)).toEqual([expect.objectContaining({ token_id: tokenId, status: 'settled', settlement: expect.objectContaining({ amount_units: '3000' }) as unknown })]);
    expect((await stack.sandbox.submissions()).length - submittedBefore).toBe(1);
  }, 120_000);

  it('when another job takes the request a rerun continued, the rerun requests once more and goes on with the new authorization', async () => {
    const before = await authorizations();
    const args = ['a kite over the dunes', '--out', 'taken', '--json'];
    const opened = expectResult(await lexec(['run', ...args, '--no-wait'])) as RunJson;
    const tokenId = opened.authorization.token_id;

    const rerun = startRun(args);
    await rerun.waitFor(/instead of opening a new one/);
    await rerun.waitFor(/waiting for the decision/);
    // Held still while the approval lands and another job — a different prompt, given the id — uses it.
    rerun.signal('SIGSTOP');
    let other: RunJson;
    try {
      await approve(tokenId);
      other = expectResult(await lexec(['run', 'a different job on that authorization', '--out', 'other', '--authorization', tokenId, '--json'])) as RunJson;
    } finally {
      rerun.signal('SIGCONT');
    }
    expect(other.authorization).toEqual({ token_id: tokenId, status: 'settled', amount_units: '3000' });

    await rerun.waitFor(new RegExp(`authorization ${tokenId} was taken meanwhile by another job's execution; requesting a new authorization`));
    const [, newId = ''] = await rerun.waitFor(approveLine(tokenId));
    await approve(newId);
    const finished = await result(rerun);
    expect(finished.authorization).toEqual({ token_id: newId, status: 'settled', amount_units: '3000' });
    expect(finished.execution?.execution_id).not.toBe(other.execution?.execution_id);
    const created = await since(before);
    expect(created.map((authorization) => [authorization.token_id, authorization.status, authorization.settlement?.amount_units]).sort()).toEqual(
      [
        [tokenId, 'settled', '3000'],
        [newId, 'settled', '3000'],
      ].sort(),
    );
  }, 120_000);
});
