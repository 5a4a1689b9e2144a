import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { correlationOf } from '../../src/executor/domain/correlation.js';
import type { JsonObject } from '../support/config-fixtures.js';
import { durableHarness, openRecords, setFaults, until, type Stack } from '../support/durable-stack.js';
import { executionRequest } from '../support/executor.js';
import { call } from '../support/ledger.js';

/*
 * Issue 24 item 5: lexec's correlation `seed` goes only where the model takes it. A real ledger,
 * a real sandbox provider told that one model takes no seed (`--seedless-model`: it refuses a
 * submission carrying one, as a fal endpoint that forbids unknown inputs does) and a real
 * executor whose configuration has a target for that model with `send_seed = false`.
 */

const harness = durableHarness('lexec-seedless-');
const SEEDLESS_MODEL = 'fal-ai/test-seedless';
const SEEDLESS = 'lexec:target:v1:seedless';
/** The same model with the default (`send_seed` true): what every such target was before the setting. */
const MISCONFIGURED = 'lexec:target:v1:seedless-misconfigured';

/** Adds the two targets for the seedless model to the executor configuration. */
function withSeedlessTargets(sendSeed: boolean) {
  return (config: JsonObject) => {
    const [base] = config.execution_targets as JsonObject[];
    const seedless = { ...structuredClone(base), target_id: SEEDLESS, label: 'no seed', model: SEEDLESS_MODEL, send_seed: sendSeed } as JsonObject;
    const misconfigured = { ...structuredClone(base), target_id: MISCONFIGURED, label: 'seed sent', model: SEEDLESS_MODEL } as JsonObject;
    config.execution_targets = [base as JsonObject, seedless, misconfigured];
  };
}

async function submitOn(s: Stack, targetId: string, tokenId: string): Promise<string> {
  const answer = await call<{ execution: { execution_id: string } }>(s.executor.url(), 'POST', '/v2/executions', {
    token: s.caller,
    body: executionRequest(tokenId, { target_id: targetId, input: { prompt: 'a lighthouse at dusk', image_count: 1, image_size: 'square_hd' } }),
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.execution.execution_id;
}

const sandboxArgs = ['--complete-after-ms', '200', '--seedless-model', SEEDLESS_MODEL];

describe('the correlation seed goes only where the model takes it', () => {
  it('a target with send_seed = false runs end to end on a model that refuses a seed; the sandbox target still gets its seed; the same model sent a seed parks', async () => {
    const s = await harness.stack({ sandboxArgs, configure: withSeedlessTargets(false) });

    const seedlessToken = await s.approvedToken();
    const seedless = await submitOn(s, SEEDLESS, seedlessToken);
    expect((await s.waitFor(seedless, 'seedless success', (e) => e.state === 'succeeded')).artifact_count).toBe(1);
    expect(await s.authorization(seedlessToken)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });

    const seededToken = await s.approvedToken();
    const seeded = await s.submit(seededToken, 1);
    await s.waitFor(seeded, 'seeded success', (e) => e.state === 'succeeded');

    // Without the setting every target sent the seed: this model refuses it, and each execution parks.
    const refusedToken = await s.approvedToken();
    const refused = await submitOn(s, MISCONFIGURED, refusedToken);
    expect((await s.waitFor(refused, 'parked', (e) => e.state === 'reconciliation')).state_reason).toBe('submission_unconfirmed');
    expect((await s.authorization(refusedToken)).status).toBe('claimed');

    const submissions = await s.sandbox.submissions();
    expect(submissions.map((record) => [record.model, record.outcome, record.seed])).toEqual([
      [SEEDLESS_MODEL, 'accepted', null],
      ['fal-ai/flux/schnell', 'accepted', correlationOf(seeded, true).value],
      [SEEDLESS_MODEL, 'invalid', null],
    ]);
    // The parked one's evidence says its seed was sent (and which).
    const [record] = await until('ledger record', async () => {
      const open = await openRecords(s);
      return open.length === 1 ? open : undefined;
    });
    expect(record?.evidence.correlation).toEqual({ field: 'seed', value: correlationOf(refused, true).value, sent: true });
  }, 120_000);

  it('the evidence of an execution whose target sends no seed keeps the value and says it was not sent', async () => {
    const s = await harness.stack({ sandboxArgs, configure: withSeedlessTargets(false) });
    await setFaults(s, [{ kind: 'unprocessable', times: 1 }]);
    const tokenId = await s.approvedToken();
    const executionId = await submitOn(s, SEEDLESS, tokenId);
    await s.waitFor(executionId, 'parked', (e) => e.state === 'reconciliation');
    const expected = { field: 'seed', value: correlationOf(executionId, false).value, sent: false };
    const records = await until('ledger record', async () => {
      const open = await openRecords(s);
      return open.length === 1 ? open : undefined;
    });
    expect(records[0]?.evidence.correlation).toEqual(expected);
    const listed = await call<{ executions: { evidence: { correlation: unknown }[] }[] }>(s.executor.url(), 'GET', '/v1/reconciliation/executions', { token: s.resolver });
    expect(listed.body.executions[0]?.evidence[0]?.correlation).toEqual(expected);
    expect((await s.sandbox.submissions()).map((submission) => submission.seed)).toEqual([null]);
  }, 120_000);

  it('the decision is frozen at admission: a configuration changed before the submission does not change what it sends', async () => {
    const armFile = join(harness.dir(), 'crash-point');
    const s = await harness.stack({ sandboxArgs, configure: withSeedlessTargets(false), executorEnv: { [CRASH_FILE_ENV]: armFile } });
    await writeFile(armFile, 'run.before_attempt\n');
    const tokenId = await s.approvedToken();
    const executionId = await submitOn(s, SEEDLESS, tokenId);
    await until('the executor killed before the submission', () => Promise.resolve(existsSync(`${armFile}.fired`) ? true : undefined));
    await s.executor.kill();
    expect(await s.sandbox.submissions()).toEqual([]);

    // The operator now (wrongly) says the target sends the seed: its model would refuse it.
    const config = JSON.parse(await readFile(s.configPath, 'utf8')) as { execution_targets: JsonObject[] };
    for (const target of config.execution_targets) if (target.target_id === SEEDLESS) target.send_seed = true;
    await writeFile(s.configPath, JSON.stringify(config));
    await s.restart();

    await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect((await s.sandbox.submissions()).map((record) => [record.outcome, record.seed])).toEqual([['accepted', null]]);
    // A new admission takes the new setting (and this model refuses it).
    const later = await submitOn(s, SEEDLESS, await s.approvedToken());
    await s.waitFor(later, 'parked', (e) => e.state === 'reconciliation');
    expect((await s.sandbox.submissions()).map((record) => record.outcome)).toEqual(['accepted', 'invalid']);
  }, 120_000);
});
