import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profilePaths, type ProfilePaths } from '../../src/launcher/home/stack-home.js';
import { BIN, makeTempDir, removeDir, type CliRun } from '../support/cli.js';
import { exampleTable, tableAt, writeProfile, toToml } from '../support/example-profiles.js';
import { createNetnsLab, netnsUnavailable, type NetnsHost, type NetnsLab } from '../support/netns.js';
import { eventually, jsonResult } from '../support/stack-home.js';
import { temporalCli } from '../support/temporal.js';
import { checkInvariants } from './check-invariants.js';

/*
 * Proof across hosts, on this machine (issue 29 item 4; docs/deployment.md "Proof across hosts").
 * Three hosts, each a network namespace of a lab (test/support/netns.ts) with its own address on
 * a private /24 and nothing reachable but the others:
 *
 *   temporal host  `temporal server start-dev`, reached on its address (10.231.<r>.2:7233)
 *   executor hosts two whole lexec stacks (the external-temporal example, each in its own
 *                  LEXEC_HOME), the executor's engine the Temporal host's address; ledger,
 *                  executor and sandbox on the host's own loopback (private to its namespace)
 *
 * `lexec run` on both hosts at once: both settle, and each host's executor ran exactly its own
 * executions (task queues derived from each installation's id). Then the Temporal host's cable is
 * pulled while a run is in flight on each executor host: both executors withdraw readiness, the
 * runs wait; the cable goes back in and the runs finish, settled once. The invariant checker runs
 * over each host's files.
 *
 * Ports: every process binds a fixed port on its own namespace's address or loopback. That is not
 * a port picked before it is bound in the sense the house rule forbids: each namespace is fresh
 * and holds only what this test starts in it, so nothing else can take the port in between.
 */

const cli = temporalCli();
const unavailable = netnsUnavailable();

const TEMPORAL_PORT = 7233;
/** The sandbox completes a job this long after its submission: long enough to pull a cable while it is in flight. */
const COMPLETE_AFTER_MS = 3_000;
const PROFILE = 'team';
const EXECUTOR_PORT = 7710;

interface ExecutorHost {
  readonly host: NetnsHost;
  readonly home: string;
  readonly paths: ProfilePaths;
}

interface RunJson {
  execution: { execution_id: string; state: string };
}

interface StatusJson {
  executions_in_flight: number | null;
}

let lab: NetnsLab | undefined;
let temporalHost: NetnsHost;
let temporal: ReturnType<NetnsLab['exec']> | undefined;
const executors: ExecutorHost[] = [];
const dirs: string[] = [];

/** `lexec <args>` on an executor host: inside its namespace, with only PATH, HOME and its LEXEC_HOME. */
async function lexec(on: ExecutorHost, args: readonly string[], timeoutMs = 120_000): Promise<CliRun> {
  const run = await (lab as NetnsLab).exec(on.host, process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: on.home, LEXEC_HOME: on.home },
    timeoutMs,
  });
  return { exitCode: run.exitCode ?? -1, stdout: String(run.stdout), stderr: String(run.stderr) };
}

function run(on: ExecutorHost, prompt: string): Promise<RunJson> {
  return lexec(on, ['run', prompt, '--profile', PROFILE, '--out', join(on.home, 'out', prompt.replaceAll(' ', '-')), '--json']).then((result) => jsonResult<RunJson>(result));
}

async function status(on: ExecutorHost): Promise<StatusJson> {
  // Exit 7 when not usable: the report is printed either way.
  return (JSON.parse((await lexec(on, ['stack', 'status', '--profile', PROFILE, '--json'])).stdout) as { result: StatusJson }).result;
}

/** The executor's own readiness answer, asked on the host's loopback: 200, or 503 with its reason. */
async function readyz(on: ExecutorHost): Promise<{ status: number; reason: string | null }> {
  const answer = await (lab as NetnsLab).httpGet(on.host, `http://127.0.0.1:${String(EXECUTOR_PORT)}/readyz`);
  if (answer === null) throw new Error(`the executor on ${on.host.namespace} does not answer`);
  return { status: answer.status, reason: (JSON.parse(answer.body) as { reason?: string }).reason ?? null };
}

/** The prompts of the jobs the host's sandbox received (its jobs file: the file system is shared with the test, the network is not). */
async function sandboxPrompts(on: ExecutorHost): Promise<string[]> {
  const text = await readFile(join(on.paths.stateDir, 'sandbox-jobs.jsonl'), 'utf8').catch(() => '');
  const lines = text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as { type?: string; prompt?: string });
  return lines.filter((line) => line.type === 'job').map((line) => line.prompt ?? '').sort();
}

async function startExecutorHost(host: NetnsHost): Promise<ExecutorHost> {
  const home = await makeTempDir(`lexec-host${String(host.index)}-`);
  dirs.push(home);
  const table = exampleTable('external-temporal');
  // Fixed ports on the host's own loopback: its namespace holds nothing else (see the header).
  table.ports = { ledger: 7700, executor: EXECUTOR_PORT, sandbox: 7720 };
  tableAt(table, 'workflow_engine').address = `grpc://${temporalHost.address}:${String(TEMPORAL_PORT)}`;
  tableAt(table, 'sandbox').complete_after_ms = COMPLETE_AFTER_MS;
  await writeProfile(home, PROFILE, toToml(table));
  const on = { host, home, paths: profilePaths(home, PROFILE) };
  executors.push(on);
  const started = await lexec(on, ['stack', 'start', '--profile', PROFILE, '--json']);
  jsonResult(started);
  return on;
}

beforeAll(async () => {
  if (cli === null || unavailable !== null) return;
  lab = createNetnsLab(3);
  [temporalHost] = lab.hosts as [NetnsHost];
  const temporalDir = await makeTempDir('lexec-temporal-host-');
  dirs.push(temporalDir);
  // Fixed ports (a fresh namespace: see the header). `--ip 0.0.0.0`: start-dev binds its inner
  // services on --ip but dials them on 127.0.0.1, so it cannot run on the host's address alone;
  // inside this namespace 0.0.0.0 is the host's loopback and its one lab address, nothing else.
  temporal = lab.exec(
    temporalHost,
    cli,
    ['server', 'start-dev', '--ip', '0.0.0.0', '--port', String(TEMPORAL_PORT), '--ui-port', '8233', '--http-port', '7243', '--metrics-port', '7244', '--headless', '--log-level', 'warn'],
    { env: { PATH: process.env.PATH ?? '', HOME: temporalDir } },
  );
  temporal.catch(() => undefined);
  const [, first, second] = lab.hosts as [NetnsHost, NetnsHost, NetnsHost];
  await lab.untilListening(first, temporalHost.address, TEMPORAL_PORT, 60_000);
  await Promise.all([startExecutorHost(first), startExecutorHost(second)]);
}, 120_000);

afterAll(async () => {
  await Promise.all(executors.map((on) => lexec(on, ['stack', 'stop', '--profile', PROFILE, '--json']).catch(() => undefined)));
  temporal?.kill('SIGKILL');
  // Whatever still runs in the lab is killed with it.
  lab?.teardown();
  for (const dir of dirs.splice(0)) await removeDir(dir);
}, 60_000);

describe.skipIf(cli === null || unavailable !== null)('two executor hosts on a Temporal host', () => {
  it('run on both at once, each its own executions; a cut to the Temporal host withdraws both readiness, loses nothing, and the runs finish once it is back', async () => {
    const [a, b] = executors as [ExecutorHost, ExecutorHost];

    // Both hosts at once.
    const first = await Promise.all([run(a, 'host a first'), run(b, 'host b first')]);
    expect(first.map((result) => result.execution.state)).toEqual(['succeeded', 'succeeded']);
    // Each host's sandbox received its own run and nothing else: no executor ran the other's execution.
    expect([await sandboxPrompts(a), await sandboxPrompts(b)]).toEqual([['host a first'], ['host b first']]);

    // A run in flight on each host, then the Temporal host's cable pulled.
    const inFlight = [run(a, 'host a across the cut'), run(b, 'host b across the cut')];
    await eventually('both submissions reached their sandboxes', async () => ((await sandboxPrompts(a)).length === 2 && (await sandboxPrompts(b)).length === 2 ? true : undefined), 60_000, 100);
    (lab as NetnsLab).cut(temporalHost);
    try {
      await Promise.all(
        [a, b].map(async (on) => {
          // The engine's probe times out (a pulled cable answers nothing): withdrawn within a probe interval and its timeout.
          const withdrawn = await eventually(`the executor on ${on.host.namespace} withdraws readiness`, async () => {
            const answer = await readyz(on);
            return answer.status === 503 ? answer : undefined;
          }, 40_000, 250);
          expect(withdrawn.reason).toBe('workflow_engine_unavailable');
          // Its run waits, not lost: still in flight while the engine is away.
          expect((await status(on)).executions_in_flight).toBe(1);
        }),
      );
    } finally {
      (lab as NetnsLab).restore(temporalHost);
    }
    const across = await Promise.all(inFlight);
    expect(across.map((result) => result.execution.state)).toEqual(['succeeded', 'succeeded']);
    await Promise.all([a, b].map((on) => eventually(`the executor on ${on.host.namespace} is ready again`, async () => ((await readyz(on)).status === 200 ? true : undefined), 30_000, 250)));

    // Stopped, then every host's files judged: each ran exactly its own two executions, settled once.
    await Promise.all([a, b].map((on) => lexec(on, ['stack', 'stop', '--profile', PROFILE, '--json']).then(jsonResult)));
    for (const on of [a, b]) {
      const report = checkInvariants({
        ledgerDatabase: on.paths.ledgerDatabase,
        executorDatabase: on.paths.executorDatabase,
        submissionsLog: null,
        sandboxJobsFile: join(on.paths.stateDir, 'sandbox-jobs.jsonl'),
        artifactRoot: on.paths.artifactRoot,
      });
      expect(report.violations).toEqual([]);
      expect(report.counts).toMatchObject({ executions: 2, attempts: 2, submissions: 2, settlements: 2, releases: 0, reconciliations: 0 });
      const name = on === a ? 'a' : 'b';
      expect(await sandboxPrompts(on)).toEqual([`host ${name} across the cut`, `host ${name} first`]);
    }
  }, 120_000);
});
