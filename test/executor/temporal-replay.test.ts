import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type ReplayResult, type WorkflowBundle } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import type { workflowBundle } from '../../src/executor/engine/temporal/workflow-bundle.js';
import { PACKAGE_ROOT } from '../support/cli.js';

/*
 * Workflow versioning, proven on histories recorded from a real Temporal server with the real
 * executor (test/fixtures/temporal-histories/, recorded by temporal-histories.record.ts): every
 * history replays on the workflow code the build ships (dist/…/workflow.bundle.js). The `-v0`
 * histories were recorded before the submit_provider patch; that they replay is what the
 * patched() guard buys, and replaying them on the same workflow without the guard must fail.
 * No server is needed: replay runs the workflow code against the history alone.
 */

const FIXTURES = join(PACKAGE_ROOT, 'test', 'fixtures', 'temporal-histories');
const SHIPPED_BUNDLE = join(PACKAGE_ROOT, 'dist', 'executor', 'engine', 'temporal', 'workflow.bundle.js');

interface Recorded {
  readonly name: string;
  readonly workflowId: string;
  readonly history: unknown;
}

async function recorded(filter: (name: string) => boolean): Promise<Recorded[]> {
  const names = (await readdir(FIXTURES)).filter((name) => name.endsWith('.json') && filter(name)).sort();
  return Promise.all(
    names.map(async (name) => {
      const document = JSON.parse(await readFile(join(FIXTURES, name), 'utf8')) as { workflow_id: string; history: unknown };
      return { name, workflowId: document.workflow_id, history: document.history };
    }),
  );
}

async function replay(options: Parameters<typeof Worker.runReplayHistories>[0], histories: readonly Recorded[]): Promise<Map<string, ReplayResult>> {
  const byId = new Map(histories.map((history) => [history.workflowId, history.name]));
  const results = new Map<string, ReplayResult>();
  for await (const result of Worker.runReplayHistories(options, histories.map(({ workflowId, history }) => ({ workflowId, history })))) {
    results.set(byId.get(result.workflowId) ?? result.workflowId, result);
  }
  return results;
}

/** The workflow without one of its guards, bundled from test/support/ (set in beforeAll). */
const unguarded = {} as Record<'localPhases' | 'patch', WorkflowBundle>;

beforeAll(async () => {
  // Replay failures are the point of one test; the SDK need not print them.
  const logger = new DefaultLogger('ERROR', () => undefined);
  Runtime.install({ logger, shutdownSignals: [], telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  // Bundling (webpack) takes seconds, more on a loaded machine: done once here, not in a test.
  const bundle = (name: string) => bundleWorkflowCode({ workflowsPath: join(PACKAGE_ROOT, 'test', 'support', name), logger });
  unguarded.localPhases = await bundle('workflow-without-local-phases-guard.ts');
  unguarded.patch = await bundle('workflow-without-patch-guard.ts');
}, 300_000);

describe('replay of recorded histories', () => {
  it('the build ships the bundle the built executor loads', async () => {
    const built = (await import(join(PACKAGE_ROOT, 'dist', 'executor', 'engine', 'temporal', 'workflow-bundle.js'))) as { workflowBundle: typeof workflowBundle };
    expect(await built.workflowBundle()).toEqual({ codePath: SHIPPED_BUNDLE });
    expect((await stat(SHIPPED_BUNDLE)).size).toBeGreaterThan(100_000);
  });

  it('every recorded history, from before and after the submit_provider patch, replays on the shipped workflow', async () => {
    const histories = await recorded(() => true);
    expect(histories.map((history) => history.name).filter((name) => name.endsWith('-v0.json')).length).toBeGreaterThanOrEqual(3);
    for (const version of ['v1', 'v2']) expect(histories.map((history) => history.name).filter((name) => name.endsWith(`-${version}.json`)).length).toBeGreaterThanOrEqual(3);
    const results = await replay({ workflowBundle: { codePath: SHIPPED_BUNDLE } }, histories);
    expect([...results.keys()].sort()).toEqual(histories.map((history) => history.name));
    for (const [name, result] of results) expect(result.error, name).toBeUndefined();
  }, 120_000);

  it('the histories from before the local-activity change do not replay on the workflow without that guard', async () => {
    const histories = await recorded((name) => name.endsWith('-v1.json'));
    const results = await replay({ workflowBundle: unguarded.localPhases }, histories);
    expect(results.size).toBe(histories.length);
    for (const [name, result] of results) expect(result.error?.name, name).toBe('DeterminismViolationError');
  }, 120_000);

  it('the pre-patch histories do not replay on the same workflow without its patched() guard: the guard is what keeps them working', async () => {
    const histories = await recorded((name) => name.endsWith('-v0.json'));
    const results = await replay({ workflowBundle: unguarded.patch }, histories);
    expect(results.size).toBe(histories.length);
    for (const [name, result] of results) {
      expect(result.error?.name, name).toBe('DeterminismViolationError');
    }
  }, 120_000);
});
