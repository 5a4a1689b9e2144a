import { randomBytes, randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir, type CliRun } from '../../support/cli.js';
import { executionRequest } from '../../support/executor.js';
import { startRunningStack, type RunningStack } from '../../support/running-stack.js';
import { jsonResult } from '../../support/stack-home.js';
import { parseLogsJsonLines, type LogsRecords } from './log-fixtures.js';

/*
 * Logs an attacker cannot wash out (docs/stack-logs.md "Repeated rejections"). A real sandbox
 * stack under its supervisor — the real bounded rotating logs — is flooded with tens of thousands
 * of unauthenticated requests on keep-alive connections, plus refused admissions, between two
 * real executions. Afterwards `lexec stack logs` still holds every line an operator needs, the
 * whole flood fits in far fewer lines than `--lines 10000` reads (one line each would push the
 * start line out of that window), and the first lines plus the summaries' counts add up to
 * exactly the requests sent, key by key.
 */

const CONCURRENCY = 50;
const MAX_LINES = 10_000;

interface Flood {
  readonly component: 'executor' | 'ledger' | 'sandbox';
  readonly method: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly count: number;
  /** The answer every request gets, and the key its log lines carry. */
  readonly status: number;
  readonly route: string;
  readonly code?: string;
  readonly reasonCode?: string;
}

/** Sends `count` identical requests, CONCURRENCY at a time on kept-alive connections; every status seen. */
async function flood(base: string, spec: Flood): Promise<Map<number, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const statuses = new Map<number, number>();
  let started = 0;
  const send = () =>
    new Promise<number>((resolve, reject) => {
      const outgoing = request(new URL(spec.path, base), { agent, method: spec.method, headers: spec.headers }, (response) => {
        response.resume();
        response.once('end', () => {
          resolve(response.statusCode ?? 0);
        });
      });
      outgoing.once('error', reject);
      outgoing.end(spec.body);
    });
  const worker = async () => {
    while (started < spec.count) {
      started += 1;
      const status = await send();
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  } finally {
    agent.destroy();
  }
  return statuses;
}

let stack: RunningStack;
let work: string;
let caller: string;
const runs: CliRun[] = [];
/** A capability-shaped token the attacker sends: it must appear in no log. */
const forged = `lexec_caller_${randomBytes(32).toString('base64url')}`;

async function lexecRun(prompt: string, out: string): Promise<string> {
  const run = await stack.lexec(['run', prompt, '--count', '1', '--out', out, '--json'], { cwd: work, timeoutMs: 120_000 });
  runs.push(run);
  expect(run.exitCode, run.stderr).toBe(0);
  const result = jsonResult<{ execution: { execution_id: string; state: string } }>(run);
  expect(result.execution.state).toBe('succeeded');
  return result.execution.execution_id;
}

async function logs(component: string): Promise<LogsRecords> {
  const run = await stack.lexec(['stack', 'logs', '--component', component, '--lines', String(MAX_LINES), '--json'], { timeoutMs: 60_000 });
  runs.push(run);
  expect(run.exitCode, run.stderr).toBe(0);
  return parseLogsJsonLines(run.stdout);
}

beforeAll(async () => {
  work = await makeTempDir('lexec-flood-work-');
  stack = await startRunningStack();
  caller = await stack.capability('caller');
}, 180_000);

afterAll(async () => {
  await stack.stop();
  await removeDir(work);
}, 120_000);

describe('a flood of rejected requests against a running stack', () => {
  it('leaves the start lines, both executions and the admission rejection in stack logs; the summaries count every request', async () => {
    const before = await lexecRun('a lighthouse before the flood', 'before');

    const floods: Flood[] = [
      { component: 'executor', method: 'GET', path: '/v1/provider-catalog', count: 12_000, status: 401, route: '/v1/provider-catalog', code: 'unauthorized' },
      {
        component: 'executor',
        method: 'POST',
        path: '/v2/executions',
        headers: { authorization: `Bearer ${forged}`, 'content-type': 'application/json' },
        body: JSON.stringify(executionRequest(randomUUID())),
        count: 12_000,
        status: 401,
        route: '/v2/executions',
        code: 'unauthorized',
      },
      { component: 'executor', method: 'GET', path: `/wp-admin/${randomUUID()}`, count: 6_000, status: 404, route: 'unmatched', code: 'not_found' },
      // Refused admissions with the real caller capability: a target that is not approved.
      {
        component: 'executor',
        method: 'POST',
        path: '/v2/executions',
        headers: { authorization: `Bearer ${caller}`, 'content-type': 'application/json' },
        body: JSON.stringify(executionRequest(randomUUID(), { target_id: 'lexec:target:v1:not-approved' })),
        count: 300,
        status: 400,
        route: '/v2/executions',
        code: 'invalid_request',
        reasonCode: 'target_not_selectable',
      },
      { component: 'ledger', method: 'GET', path: '/agents', headers: { authorization: `Bearer ${forged}` }, count: 11_000, status: 401, route: '/agents', code: 'unauthorized' },
      { component: 'sandbox', method: 'GET', path: `/No/Such/${randomUUID()}`, count: 11_000, status: 404, route: 'unmatched' },
    ];
    const bases = { executor: stack.executorUrl, ledger: stack.ledgerUrl, sandbox: stack.sandbox.url };
    for (const spec of floods) expect(await flood(bases[spec.component], spec)).toEqual(new Map([[spec.status, spec.count]]));

    const after = await lexecRun('a lighthouse after the flood', 'after');
    // Stopping writes the summaries still pending (the interval has not ended yet).
    const stopped = await stack.lexec(['stack', 'stop', '--profile', stack.paths.name, '--json'], { timeoutMs: 60_000 });
    runs.push(stopped);
    expect(stopped.exitCode, stopped.stdout).toBe(0);

    const executor = await logs('executor');
    const events = executor.lines.map((entry) => entry.parsed ?? {});
    // The whole executor log fits well within one `--lines 10000` read: 30 000 refused requests
    // cost a few lines, not one each (which would have pushed the start line out of it).
    expect(executor.lines.length).toBeLessThan(MAX_LINES / 10);
    expect(events.filter((event) => event.event === 'executor_started')).toHaveLength(1);
    for (const executionId of [before, after]) {
      expect(events.filter((event) => event.execution_id === executionId).map((event) => event.event)).toContain('execution_succeeded');
    }
    expect(executor.admission_rejections).toMatchObject([{ route: 'create_execution', reason_code: 'target_not_selectable', fields: ['target_id'], occurrences: 1 }]);
    expect(events.filter((event) => event.event === 'executor_admission_rejected')).toHaveLength(1);
    // The other 299 identical refusals are counted, not dropped.
    const repeatedAdmissions = events.filter((event) => event.event === 'executor_admission_rejections_repeated');
    expect(repeatedAdmissions.every((event) => event.reason_code === 'target_not_selectable' && event.route_version === 2)).toBe(true);
    expect(repeatedAdmissions.reduce((sum, event) => sum + Number(event.count), 0)).toBe(299);

    const byComponent = { executor, ledger: await logs('ledger'), sandbox: await logs('sandbox') };
    expect(byComponent.ledger.lines.map((entry) => entry.parsed?.event)).toContain('ledger_started');
    expect(byComponent.sandbox.lines.map((entry) => entry.parsed?.event)).toContain('sandbox_started');
    for (const spec of floods) {
      const lines = byComponent[spec.component].lines.map((entry) => entry.parsed ?? {});
      const sameKey = (event: Record<string, unknown>) =>
        event.method === spec.method && event.route === spec.route && event.status === spec.status && event.code === spec.code && event.reason_code === spec.reasonCode;
      const logged = lines.filter((event) => event.event === 'http_request' && sameKey(event));
      const summaries = lines.filter((event) => event.event === 'http_rejections_repeated' && sameKey(event));
      expect(logged.length, `${spec.component} ${spec.method} ${spec.route}`).toBeGreaterThan(0);
      expect(summaries.every((event) => event.level === 40)).toBe(true);
      expect(logged.length + summaries.reduce((sum, event) => sum + Number(event.count), 0), `${spec.component} ${spec.method} ${spec.route}`).toBe(spec.count);
    }

    // Nothing the attacker sent reached a log: not the forged capability, not the paths.
    const everything = Object.values(byComponent)
      .flatMap((records) => records.lines.map((entry) => entry.line))
      .join('\n');
    expect(everything).not.toContain(forged);
    expect(everything).not.toContain(caller);
    expect(everything).not.toMatch(/wp-admin|No\/Such|not-approved/);
  }, 600_000);
});
