import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { executionIdFor } from '../../src/executor/domain/execution-states.js';
import { expectFailure } from '../support/cli.js';
import { until } from '../support/durable-stack.js';
import { executionRequest } from '../support/executor.js';
import { call } from '../support/ledger.js';
import { startAgentSession, toolError } from '../support/mcp-client.js';
import type { TomlTable } from '../support/example-profiles.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { readState } from '../support/stack-home.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';
import { checkStackInvariants } from './crash-scenarios.js';

/*
 * An orphan claim released by the product (issue 24 item 3; docs/reliability.md "Crash points"):
 * on a real stack started by `lexec stack start` with LEXEC_DEV_CRASH_FILE set, one admission is
 * driven by hand — an authorization obtained as the stack's agent, the execution POSTed once —
 * and the executor SIGKILLs itself at `admission.after_claim`, after the ledger claimed but before
 * the pending execution was recorded. The agent never retries. The supervisor restarts the
 * executor, whose sweep must release the claim as `claim_without_execution` once it is older than
 * the profile's bound; nothing reaches the provider; a later identical retry (the raw request,
 * `lexec run --authorization`, the agent's generate_images) is told the hold was released; and
 * the independent checker finds the stack clean.
 */

/** The profile's bound: the shortest the executor accepts, so the sweep comes within seconds. */
const RELEASE_AFTER_SECONDS = 15;

/** Registers the case for one engine: `embedded`, or `temporal` (skipped without the Temporal CLI). */
export function orphanClaimCrash(engine: 'embedded' | 'temporal'): void {
  const cli = engine === 'temporal' ? temporalCli() : null;
  let temporal: DevServer | undefined;
  let stack: RunningStack | undefined;
  let armFile = '';

  describe.skipIf(engine === 'temporal' && cli === null)(`an orphan claim on the ${engine} engine (real stack, SIGKILL at admission.after_claim, no retry)`, () => {
    beforeAll(async () => {
      if (cli !== null) temporal = await startDevServer(cli);
      const edit = (profile: TomlTable) => {
        profile.orphan_claims = { release_after_seconds: RELEASE_AFTER_SECONDS };
        if (temporal !== undefined) {
          profile.workflow_engine = { mode: 'external', address: temporal.url, namespace: 'default', task_queue: `lexec-orphan-${String(process.pid)}`, ui_url: temporal.uiUrl };
        }
      };
      armFile = join(tmpdir(), `lexec-orphan-${engine}-${String(process.pid)}`);
      stack = await startRunningStack({ edit, env: { [CRASH_FILE_ENV]: armFile } });
    }, 180_000);

    afterAll(async () => {
      await stack?.stop();
      await temporal?.stop();
      await rm(armFile, { force: true });
      await rm(`${armFile}.fired`, { force: true });
    }, 120_000);

    it('the executor releases the claim as claim_without_execution; nothing is submitted; a retry is told to request a new authorization; the checker is clean', async () => {
      const s = stack as RunningStack;
      const admin = await s.capability('admin');
      const caller = await s.capability('caller');
      const restartsBefore = (await readState(s.paths)).components.executor?.restarts ?? 0;
      const submittedBefore = (await s.sandbox.submissions()).length;

      const created = await call<{ authorization: { token_id: string; status: string } }>(s.ledgerUrl, 'POST', '/authorizations', {
        token: await s.capability('agent'),
        body: { amount_units: '100000', units_scale: 6, currency: 'USD' },
      });
      expect(created.body.authorization.status).toBe('approved');
      const tokenId = created.body.authorization.token_id;
      const request = executionRequest(tokenId);

      // The one admission: the executor dies after the ledger claimed, before it answers.
      await writeFile(armFile, 'admission.after_claim\n');
      const first = await call(s.executorUrl, 'POST', '/v2/executions', { token: caller, body: request }).catch((error: unknown) => error);
      expect(first, 'the admission was answered: the executor did not die at the point').toBeInstanceOf(Error);
      expect(existsSync(armFile)).toBe(false);
      expect((await readFile(`${armFile}.fired`, 'utf8')).trim()).toBe('admission.after_claim');

      const authorization = () =>
        call<{ authorization: { status: string; execution_id: string | null; release: { reason: string } | null } }>(s.ledgerUrl, 'GET', `/authorizations/${tokenId}`, { token: admin });
      expect((await authorization()).body.authorization).toMatchObject({ status: 'claimed', execution_id: executionIdFor(tokenId) });

      // Restarted by the supervisor, the executor's sweep gives the hold back once it is older than the bound.
      await until('the executor restarted', async () => ((await readState(s.paths)).components.executor?.restarts === restartsBefore + 1 ? true : undefined), 120_000);
      const released = await until(
        'the claim released',
        async () => {
          const now = (await authorization()).body.authorization;
          return now.status === 'released' ? now : undefined;
        },
        180_000,
      );
      expect(released).toMatchObject({ execution_id: executionIdFor(tokenId), release: { reason: 'claim_without_execution' } });
      expect((await s.sandbox.submissions()).length).toBe(submittedBefore);

      // A later identical retry, however it comes: a clear conflict naming the token, nothing created.
      const retried = await call<{ error: unknown }>(s.executorUrl, 'POST', '/v2/executions', { token: caller, body: request });
      expect(retried.status).toBe(409);
      expect(retried.body.error).toEqual({ code: 'conflict', reason_code: 'authorization_released', fields: ['spend_auth_token_id'] });
      expect((await call(s.executorUrl, 'GET', `/v1/executions/${executionIdFor(tokenId)}`, { token: caller })).status).toBe(404);

      const run = await s.lexec(['run', 'a lighthouse at dusk', '--count', '2', '--size', 'square_hd', '--authorization', tokenId, '--out', join(s.home, 'out', 'orphan'), '--json'], { timeoutMs: 60_000 });
      const refused = expectFailure(run, 1, 'authorization_released');
      expect(refused.message).toContain('never created an execution for it (claim_without_execution)');

      const agent = await startAgentSession({ env: s.env });
      try {
        const answer = toolError(await agent.call('generate_images', { prompt: 'a lighthouse at dusk', image_count: 2, image_size: 'square_hd', authorization_id: tokenId }));
        expect(answer.code).toBe('authorization_released');
        expect(answer.next_step).toBe('Call generate_images without authorization_id to request a new authorization.');
      } finally {
        await agent.close();
      }
      expect((await s.sandbox.submissions()).length).toBe(submittedBefore);

      const report = checkStackInvariants(s);
      expect(report.violations).toEqual([]);
    }, 420_000);
  });
}
