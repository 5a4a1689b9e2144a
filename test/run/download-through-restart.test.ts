import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { expectResult } from '../support/cli.js';
import { startAgentSession, structured, type AgentSession } from '../support/mcp-client.js';
import { decodePng } from '../support/png.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { readState } from '../support/stack-home.js';

/*
 * Issue 24 item 6: the last step of a paid job, the download of its images, rides out an
 * executor restart as the follow does. A real stack from `lexec stack start` runs with crash
 * points armed through LEXEC_DEV_CRASH_FILE (a development build only): the executor SIGKILLs
 * itself when the first image of a succeeded execution is asked for, its supervisor restarts it,
 * and the client asks again until it answers — `lexec run` and the MCP client alike.
 */

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

let stack: RunningStack;
let agent: AgentSession | undefined;
const armFile = join(tmpdir(), `lexec-download-crash-${String(process.pid)}`);

beforeAll(async () => {
  stack = await startRunningStack({ env: { [CRASH_FILE_ENV]: armFile } });
}, 180_000);

afterAll(async () => {
  await agent?.close();
  await stack.stop();
  await rm(armFile, { force: true });
  await rm(`${armFile}.fired`, { force: true });
}, 120_000);

/** Arms the download's crash point; returns the executor's restart count before it fires. */
async function armDownloadCrash(): Promise<number> {
  await rm(`${armFile}.fired`, { force: true });
  await writeFile(armFile, 'api.before_artifact_content\n');
  return (await readState(stack.paths)).components.executor?.restarts ?? 0;
}

async function expectExecutorRestarted(restartsBefore: number): Promise<void> {
  expect(existsSync(armFile), 'the download never reached the executor').toBe(false);
  expect((await readFile(`${armFile}.fired`, 'utf8')).trim()).toBe('api.before_artifact_content');
  expect((await readState(stack.paths)).components.executor?.restarts).toBe(restartsBefore + 1);
}

describe('the image download rides out an executor restart', () => {
  it('lexec run: the executor dies as the first image is downloaded; every image is still saved, exit 0', async () => {
    const restartsBefore = await armDownloadCrash();
    const out = join(stack.home, 'out-run');
    const run = await stack.lexec(['run', 'a lighthouse, downloaded through a restart', '--count', '2', '--out', out, '--json'], { timeoutMs: 120_000 });
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
    await expectExecutorRestarted(restartsBefore);
    const result = expectResult(run) as { execution: { state: string }; authorization: { status: string }; files: { path: string; bytes: number; sha256: string }[] };
    expect(result.execution.state).toBe('succeeded');
    expect(result.authorization.status).toBe('settled');
    expect(result.files).toHaveLength(2);
    for (const file of result.files) {
      const bytes = await readFile(file.path);
      expect(sha256(bytes)).toBe(file.sha256);
      expect(decodePng(bytes).width).toBeGreaterThan(0);
    }
  }, 180_000);

  it('the MCP client: generate_images still delivers the image inline', async () => {
    agent = await startAgentSession({ env: stack.env });
    const restartsBefore = await armDownloadCrash();
    const result = await agent.call('generate_images', { prompt: 'a lighthouse, delivered through a restart', delivery: 'inline' });
    const generated = structured('generate_images', result);
    expect(generated).toMatchObject({ status: 'succeeded', authorization_status: 'settled' });
    await expectExecutorRestarted(restartsBefore);
    const images = result.content.filter((block) => block.type === 'image');
    expect(images).toHaveLength(1);
    const bytes = Buffer.from(images[0]?.type === 'image' ? images[0].data : '', 'base64');
    expect(sha256(bytes)).toBe(generated.images[0]?.sha256);
  }, 180_000);
});
