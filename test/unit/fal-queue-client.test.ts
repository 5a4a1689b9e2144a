import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFalQueueClient, TransmissionAmbiguous } from '../../src/executor/provider/fal-queue-client.js';
import { spawnSandbox, type SandboxProcess } from '../support/sandbox-process.js';

/*
 * The executor's provider client over kept-alive sockets, against the real sandbox provider:
 * a long poll carries many requests on one socket, and none of them may leave a listener behind
 * (before the fix every request added `connect`/`secureConnect` listeners that never fired:
 * MaxListenersExceededWarning after a few executions, unbounded on a long poll).
 */

let sandbox: SandboxProcess;

beforeAll(async () => {
  sandbox = await spawnSandbox({ args: ['--complete-after-ms', '60000'] });
}, 120_000);

afterAll(async () => {
  await sandbox.stop();
});

describe('the fal queue client on a kept-alive socket', () => {
  it('polls many times over one socket without piling up listeners', async () => {
    const client = createFalQueueClient({ submitBase: sandbox.url, apiKey: 'sandbox-key', pollingOrigins: [sandbox.url], mediaOrigins: [sandbox.url] });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const operation = await client.submit('fal-ai/flux/schnell', { prompt: 'a long poll', image_size: 'square', num_images: 1, seed: 7 });
      for (let poll = 0; poll < 40; poll += 1) expect((await client.status(operation)).status).not.toBe('COMPLETED');
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});

describe('a refused acceptance', () => {
  it('keeps the request id the provider answered with, so the job can be found at the provider', async () => {
    const client = createFalQueueClient({ submitBase: sandbox.url, apiKey: 'sandbox-key', pollingOrigins: [sandbox.url], mediaOrigins: [sandbox.url] });
    await sandbox.setFaults([{ kind: 'foreign_host', field: 'status_url' }]);
    try {
      const refused = await client.submit('fal-ai/flux/schnell', { prompt: 'refused', image_size: 'square', num_images: 1, seed: 7 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TransmissionAmbiguous);
      const submissions = await sandbox.submissions();
      expect((refused as TransmissionAmbiguous).receivedRequestId).toBe(submissions.at(-1)?.request_id);
      expect((refused as TransmissionAmbiguous).detail).toBe('polling host not allowed');
    } finally {
      await sandbox.setFaults([]);
    }
  });
});
