import { chmod, copyFile, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profilePaths, type ProfilePaths } from '../../src/launcher/home/stack-home.js';
import { BIN, makeTempDir, removeDir, type CliRun } from '../support/cli.js';
import { exampleTable, tableAt, writeProfile, toToml } from '../support/example-profiles.js';
import { createNetnsLab, netnsUnavailable, type NetnsHost, type NetnsLab } from '../support/netns.js';
import { eventually, jsonError, jsonResult } from '../support/stack-home.js';
import { temporalCli } from '../support/temporal.js';
import { checkInvariantsAcrossHosts } from './check-invariants.js';

/*
 * Proof across hosts with one ledger (issue 29 item 4; docs/deployment.md "Proof across hosts").
 * Four hosts, each a network namespace of a lab (test/support/netns.ts) with its own address:
 *
 *   ledger host    kind = "ledger", its ledger on the host's lab address over TLS ([ledger.http]),
 *                  certificate from the team CA made there (`lexec stack tls init|issue`)
 *   executor A, B  sandbox stacks enrolled at that ledger (`lexec ledger enrolments issue` on the
 *                  ledger host, token and CA moved through the file system, `lexec stack enrol`),
 *                  their engine the Temporal host's; executor and sandbox on their own loopback
 *   temporal host  `temporal server start-dev`, reached on its address
 *
 * One setup for every step: runs on both hosts at once with the spend per agent exact at the one
 * ledger; one approval queue for both; an installation budget both use up together; executor B
 * parted from the ledger mid-run (readiness withdrawn, its execution waits, A goes on; healed, it
 * settles once); the Temporal host's cable pulled with a run in flight on each executor host
 * (both withdraw readiness, the runs wait; back, they settle once); an executor whose CA is
 * another is refused before its token is used; then the invariant checker over the one ledger
 * and both executors, and each host's sandbox received its own runs only (two executors on one
 * Temporal namespace never run each other's executions: task queues of their installations).
 *
 * Ports: fixed, on each namespace's own address or loopback. That is not a port picked before it
 * is bound in the sense the house rule forbids: each namespace is fresh and holds only what this
 * test starts in it, so nothing else can take the port in between.
 */

const cli = temporalCli();
const unavailable = netnsUnavailable();

const TEMPORAL_PORT = 7233;
const LEDGER_PORT = 7400;
const EXECUTOR_PORT = 7710;
/** Long enough to part B from the ledger (or cut the Temporal host) while a job is at the sandbox. */
const COMPLETE_AFTER_MS = 3_000;
/** One square_hd image costs 3000 units (the example's pricing); two (6000) are above this threshold. */
const IMAGE_UNITS = 3_000n;
const APPROVAL_THRESHOLD_UNITS = '5000';
const PROFILE = 'team';
const LEDGER_PROFILE = 'ledger';

interface Host {
  readonly host: NetnsHost;
  readonly home: string;
  readonly profile: string;
  readonly paths: ProfilePaths;
}

interface RunJson {
  authorization: { token_id: string; status: string; amount_units: string };
  execution: { execution_id: string; state: string } | null;
  spent: { amount_units: string } | null;
}

interface SpendGroup {
  group: string;
  label: string;
  settled_units: string;
  settled_count: number;
  held_units: string;
  held_count: number;
}

let lab: NetnsLab | undefined;
let temporal: ReturnType<NetnsLab['exec']> | undefined;
let ledgerHost: Host;
let ledgerUrl: string;
let caFile: string;
const executors: Host[] = [];
const stacks: Host[] = [];
const dirs: string[] = [];

/** `lexec <args>` on a host: inside its namespace, with only PATH, HOME and its LEXEC_HOME. */
async function lexec(on: Host, args: readonly string[], timeoutMs = 120_000): Promise<CliRun> {
  const run = await (lab as NetnsLab).exec(on.host, process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: on.home, LEXEC_HOME: on.home },
    timeoutMs,
  });
  return { exitCode: run.exitCode ?? -1, stdout: String(run.stdout), stderr: String(run.stderr) };
}

/** A ledger verb on the ledger host, through its profile's handoff (https, verified against the team CA). */
async function ledgerVerb<T>(args: readonly string[]): Promise<T> {
  return jsonResult<T>(await lexec(ledgerHost, [...args, '--profile', LEDGER_PROFILE, '--json']));
}

function runArgs(on: Host, prompt: string, count: number): string[] {
  return ['run', prompt, '--profile', on.profile, '--count', String(count), '--out', join(on.home, 'out', prompt.replaceAll(' ', '-')), '--json'];
}

async function run(on: Host, prompt: string, count = 1): Promise<RunJson> {
  return jsonResult<RunJson>(await lexec(on, runArgs(on, prompt, count)));
}

async function spendByAgent(): Promise<{ groups: SpendGroup[]; total: { settled_units: string; settled_count: number; held_units: string; held_count: number } }> {
  return ledgerVerb(['ledger', 'spend', '--by', 'agent']);
}

/** The executor's own readiness answer, on the host's loopback: 200, or 503 with its reason. */
async function readyz(on: Host): Promise<{ status: number; reason: string | null }> {
  const answer = await (lab as NetnsLab).httpGet(on.host, `http://127.0.0.1:${String(EXECUTOR_PORT)}/readyz`);
  if (answer === null) throw new Error(`the executor on ${on.host.namespace} does not answer`);
  return { status: answer.status, reason: (JSON.parse(answer.body) as { reason?: string }).reason ?? null };
}

async function inFlight(on: Host): Promise<number | null> {
  // Exit 7 when not usable: the report is printed either way.
  return (JSON.parse((await lexec(on, ['stack', 'status', '--profile', on.profile, '--json'])).stdout) as { result: { executions_in_flight: number | null } }).result.executions_in_flight;
}

async function sandboxJobs(on: Host): Promise<string[]> {
  const text = await readFile(join(on.paths.stateDir, 'sandbox-jobs.jsonl'), 'utf8').catch(() => '');
  return text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as { type?: string; prompt?: string }).filter((line) => line.type === 'job').map((line) => line.prompt ?? '');
}

/** Copies a file the ledger host's operator hands over (token, CA) into `home`, as the operator would with scp. */
async function handOver(from: string, home: string, name: string, mode: number): Promise<string> {
  const to = join(home, name);
  await copyFile(from, to);
  await chmod(to, mode);
  return to;
}

async function issueToken(name: string): Promise<string> {
  const file = join(ledgerHost.home, `${name}.enrolment`);
  await ledgerVerb(['ledger', 'enrolments', 'issue', '--name', name, '--token-file', file, '--ttl-minutes', '30']);
  return file;
}

async function startLedgerHost(host: NetnsHost): Promise<void> {
  const home = await makeTempDir('lexec-ledger-host-');
  dirs.push(home);
  ledgerHost = { host, home, profile: LEDGER_PROFILE, paths: profilePaths(home, LEDGER_PROFILE) };
  jsonResult(await lexec(ledgerHost, ['stack', 'tls', 'init', '--json']));
  const issued = jsonResult<{ certificate_file: string; key_file: string; ca_certificate_file: string }>(await lexec(ledgerHost, ['stack', 'tls', 'issue', '--host', host.address, '--json']));
  caFile = issued.ca_certificate_file;
  const example = exampleTable('external-temporal');
  const ledger = tableAt(example, 'ledger');
  tableAt(ledger, 'default_policy').approval_threshold_units = APPROVAL_THRESHOLD_UNITS;
  ledger.http = { host: host.address, tls: { certificate_file: issued.certificate_file, key_file: issued.key_file, ca_file: issued.ca_certificate_file } };
  await writeProfile(home, LEDGER_PROFILE, toToml({ schema_version: 1, kind: 'ledger', ports: { ledger: LEDGER_PORT }, ledger }));
  stacks.push(ledgerHost);
  const started = jsonResult<{ components: { name: string; endpoint: string }[] }>(await lexec(ledgerHost, ['stack', 'start', '--profile', LEDGER_PROFILE, '--json']));
  ledgerUrl = `https://${host.address}:${String(LEDGER_PORT)}`;
  expect(started.components).toEqual([expect.objectContaining({ name: 'ledger', endpoint: ledgerUrl })]);
}

async function startExecutorHost(host: NetnsHost, name: string, temporalAddress: string): Promise<Host> {
  const home = await makeTempDir(`lexec-${name}-`);
  dirs.push(home);
  const on: Host = { host, home, profile: PROFILE, paths: profilePaths(home, PROFILE) };
  // What the ledger host's operator hands over: the one-time token (private) and the team CA.
  const token = await handOver(await issueToken(name), home, 'enrolment.token', 0o600);
  const ca = await handOver(caFile, home, 'team-ca.pem', 0o644);
  const table = exampleTable('external-temporal');
  table.ports = { executor: EXECUTOR_PORT, sandbox: 7720 };
  table.ledger = { url: ledgerUrl, ca_file: ca };
  table.agent = { name };
  tableAt(table, 'workflow_engine').address = `grpc://${temporalAddress}:${String(TEMPORAL_PORT)}`;
  tableAt(table, 'sandbox').complete_after_ms = COMPLETE_AFTER_MS;
  await writeProfile(home, PROFILE, toToml(table));
  jsonResult(await lexec(on, ['stack', 'enrol', '--profile', PROFILE, '--token-file', token, '--json']));
  stacks.push(on);
  jsonResult(await lexec(on, ['stack', 'start', '--profile', PROFILE, '--json']));
  return on;
}

beforeAll(async () => {
  if (cli === null || unavailable !== null) return;
  lab = createNetnsLab(4);
  const [ledgerNs, first, second, temporalNs] = lab.hosts as [NetnsHost, NetnsHost, NetnsHost, NetnsHost];
  const temporalDir = await makeTempDir('lexec-temporal-host-');
  dirs.push(temporalDir);
  // start-dev on 0.0.0.0 of its own namespace (its loopback and lab address): with only the lab address it binds its
  // inner services there but dials them on 127.0.0.1, and cannot reach itself.
  temporal = lab.exec(
    temporalNs,
    cli,
    ['server', 'start-dev', '--ip', '0.0.0.0', '--port', String(TEMPORAL_PORT), '--ui-port', '8233', '--http-port', '7243', '--metrics-port', '7244', '--headless', '--log-level', 'warn'],
    { env: { PATH: process.env.PATH ?? '', HOME: temporalDir } },
  );
  temporal.catch(() => undefined);
  await startLedgerHost(ledgerNs);
  await lab.untilListening(first, temporalNs.address, TEMPORAL_PORT, 60_000);
  executors.push(...(await Promise.all([startExecutorHost(first, 'host-a', temporalNs.address), startExecutorHost(second, 'host-b', temporalNs.address)])));
}, 120_000);

afterAll(async () => {
  // Executors first (they settle at the ledger), then the ledger.
  for (const group of [stacks.filter((on) => on !== ledgerHost), stacks.filter((on) => on === ledgerHost)]) {
    await Promise.all(group.map((on) => lexec(on, ['stack', 'stop', '--profile', on.profile, '--json']).catch(() => undefined)));
  }
  temporal?.kill('SIGKILL');
  lab?.teardown();
  for (const dir of dirs.splice(0)) await removeDir(dir);
}, 60_000);

describe.skipIf(cli === null || unavailable !== null)('one ledger host over TLS, two enrolled executor hosts, a Temporal host', () => {
  it('exact spend per agent, one approval queue, shared caps, an executor parted from the ledger mid-run, the Temporal host cut off, a foreign CA refused; each executor ran only its own; invariants hold across hosts', async () => {
    const [a, b] = executors as [Host, Host];
    const ledgerLab = lab as NetnsLab;
    /** What each host's receipts say it spent (units), and how many settlements: the ledger must agree at every step. */
    const expected = new Map<Host, { units: bigint; count: number }>([
      [a, { units: 0n, count: 0 }],
      [b, { units: 0n, count: 0 }],
    ]);
    const settled = (on: Host, result: RunJson) => {
      expect(result.authorization.status).toBe('settled');
      expect(result.execution?.state).toBe('succeeded');
      const entry = expected.get(on) as { units: bigint; count: number };
      entry.units += BigInt(result.spent?.amount_units ?? '0');
      entry.count += 1;
    };
    const agentIds = new Map<Host, string>();
    for (const on of [a, b]) agentIds.set(on, (JSON.parse(await readFile(on.paths.enrolmentFile, 'utf8')) as { agent: { agent_id: string } }).agent.agent_id);
    const ledgerAgrees = async () => {
      const spend = await spendByAgent();
      for (const on of [a, b]) {
        const entry = expected.get(on) as { units: bigint; count: number };
        expect(spend.groups.find((group) => group.group === agentIds.get(on))).toMatchObject({ settled_units: String(entry.units), settled_count: entry.count, held_units: '0', held_count: 0 });
      }
      expect(spend.groups).toHaveLength(2);
      return spend;
    };

    // (a) Both hosts at once; the one ledger's spend per agent is exactly what each receipt says.
    const first = await Promise.all([run(a, 'host a first'), run(b, 'host b first')]);
    settled(a, first[0]);
    settled(b, first[1]);
    expect(first.map((result) => result.spent?.amount_units)).toEqual([String(IMAGE_UNITS), String(IMAGE_UNITS)]);
    await ledgerAgrees();

    // (b) One approval queue: a run above the threshold from each host waits in the same ledger's queue.
    const waiting = Promise.all([run(a, 'host a approved', 2), run(b, 'host b approved', 2)]);
    // Awaited below; a failure meanwhile must not surface as an unhandled rejection.
    waiting.catch(() => undefined);
    const queue = await eventually('both runs wait in the one approval queue', async () => {
      const list = await ledgerVerb<{ authorizations: { token_id: string; agent_id: string; status: string; amount_units: string }[] }>(['ledger', 'approvals', 'list']);
      return list.authorizations.length === 2 ? list.authorizations : undefined;
    }, 60_000, 500);
    expect(queue.map((entry) => entry.agent_id).sort()).toEqual([agentIds.get(a), agentIds.get(b)].sort());
    expect(queue.every((entry) => entry.status === 'requested' && entry.amount_units === String(2n * IMAGE_UNITS))).toBe(true);
    for (const entry of queue) await ledgerVerb(['ledger', 'authorizations', 'approve', entry.token_id, '--reason', 'one queue for both hosts']);
    const [approvedA, approvedB] = await waiting;
    settled(a, approvedA);
    settled(b, approvedB);
    await ledgerAgrees();

    // (d) B parted from the ledger while its job is at the sandbox: B withdraws readiness, its
    // execution waits; A keeps running and settling meanwhile; healed, B's run settles once.
    const bInFlight = run(b, 'host b across the partition');
    bInFlight.catch(() => undefined);
    await eventually("B's submission reached its sandbox", async () => ((await sandboxJobs(b)).includes('host b across the partition') ? true : undefined), 60_000, 100);
    ledgerLab.partition(b.host, ledgerHost.host);
    try {
      const withdrawn = await eventually('B withdraws readiness', async () => {
        const answer = await readyz(b);
        return answer.status === 503 ? answer : undefined;
      }, 40_000, 250);
      expect(withdrawn.reason).toBe('ledger_unavailable');
      // A is untouched: ready, and a run there settles while B is cut off.
      expect((await readyz(a)).status).toBe(200);
      settled(a, await run(a, 'host a during the partition'));
      // B's execution is neither lost nor settled: still in flight, its hold still at the ledger.
      expect(await inFlight(b)).toBe(1);
      const during = await spendByAgent();
      expect(during.groups.find((group) => group.group === agentIds.get(b))).toMatchObject({ held_count: 1, held_units: String(IMAGE_UNITS) });
    } finally {
      ledgerLab.heal(b.host, ledgerHost.host);
    }
    settled(b, await bInFlight);
    await eventually('B is ready again', async () => ((await readyz(b)).status === 200 ? true : undefined), 30_000, 250);
    await ledgerAgrees();

    // (f) The Temporal host cut off while a run is in flight on each executor host: both withdraw
    // readiness, their runs wait, nothing is lost; back, both finish and settle once.
    const temporalHost = ledgerLab.hosts[3] as NetnsHost;
    const acrossCut = Promise.all([run(a, 'host a across the temporal cut'), run(b, 'host b across the temporal cut')]);
    acrossCut.catch(() => undefined);
    await eventually('both submissions reached their sandboxes', async () => ((await sandboxJobs(a)).includes('host a across the temporal cut') && (await sandboxJobs(b)).includes('host b across the temporal cut') ? true : undefined), 60_000, 100);
    ledgerLab.cut(temporalHost);
    try {
      await Promise.all(
        [a, b].map(async (on) => {
          // The engine's probe times out (a pulled cable answers nothing): withdrawn within a probe interval and its timeout.
          const withdrawn = await eventually(`the executor on ${on.host.namespace} withdraws readiness`, async () => {
            const answer = await readyz(on);
            return answer.status === 503 ? answer : undefined;
          }, 40_000, 250);
          expect(withdrawn.reason).toBe('workflow_engine_unavailable');
          expect(await inFlight(on)).toBe(1);
        }),
      );
    } finally {
      ledgerLab.restore(temporalHost);
    }
    const [cutA, cutB] = await acrossCut;
    settled(a, cutA);
    settled(b, cutB);
    await Promise.all([a, b].map((on) => eventually(`the executor on ${on.host.namespace} is ready again`, async () => ((await readyz(on)).status === 200 ? true : undefined), 30_000, 250)));
    await ledgerAgrees();

    // (c) The caps are shared: an installation budget of exactly what is spent plus two images,
    // used up by one run on each host; the next run on either host is refused, nothing spent.
    const before = await ledgerAgrees();
    const limit = BigInt(before.total.settled_units) + 2n * IMAGE_UNITS;
    await ledgerVerb(['ledger', 'budget', 'set', '--day-units', String(limit)]);
    const budgeted = await Promise.all([run(a, 'host a within the budget'), run(b, 'host b within the budget')]);
    settled(a, budgeted[0]);
    settled(b, budgeted[1]);
    const used = await ledgerAgrees();
    expect(BigInt(used.total.settled_units)).toBe(limit);
    for (const on of [a, b]) {
      const refused = await lexec(on, runArgs(on, `${on === a ? 'host a' : 'host b'} over the budget`, 1));
      expect(refused.exitCode).not.toBe(0);
      const error = jsonError(refused);
      expect(error.code).toBe('ledger_policy_refused');
      expect(error.message).toContain('installation.day');
      expect(error.message).toContain('nothing was requested or spent');
    }
    expect((await ledgerAgrees()).total).toEqual(used.total);

    // Bad input: an executor host trusting another CA is refused before its token is used.
    const strangerHome = await makeTempDir('lexec-host-c-');
    dirs.push(strangerHome);
    const stranger: Host = { host: a.host, home: strangerHome, profile: 'host-c', paths: profilePaths(strangerHome, 'host-c') };
    const otherCa = jsonResult<{ ca_certificate_file: string }>(await lexec(stranger, ['stack', 'tls', 'init', '--json'])).ca_certificate_file;
    const strangerToken = await handOver(await issueToken('host-c'), strangerHome, 'enrolment.token', 0o600);
    const untrusted = await lexec(stranger, ['stack', 'enrol', '--profile', 'host-c', '--ledger-url', ledgerUrl, '--ca-file', otherCa, '--token-file', strangerToken, '--json']);
    expect(untrusted.exitCode).not.toBe(0);
    expect(jsonError(untrusted)).toMatchObject({ code: 'ledger_tls_untrusted' });
    expect(jsonError(untrusted).message).toContain('not signed by the configured CA');
    expect(existsSync(stranger.paths.agentCapability)).toBe(false);
    const enrolments = await ledgerVerb<{ enrolments: { host_name: string; status: string }[] }>(['ledger', 'enrolments', 'list']);
    expect(enrolments.enrolments.find((entry) => entry.host_name === 'host-c')?.status).toBe('open');

    // (e) Stacks stopped; the invariant checker over the one ledger and both executors' files.
    await Promise.all([a, b].map((on) => lexec(on, ['stack', 'stop', '--profile', on.profile, '--json']).then(jsonResult)));
    jsonResult(await lexec(ledgerHost, ['stack', 'stop', '--profile', LEDGER_PROFILE, '--json']));
    const report = checkInvariantsAcrossHosts({
      ledgerDatabase: ledgerHost.paths.ledgerDatabase,
      executors: [a, b].map((on) => ({
        executorDatabase: on.paths.executorDatabase,
        submissionsLog: null,
        sandboxJobsFile: join(on.paths.stateDir, 'sandbox-jobs.jsonl'),
        artifactRoot: on.paths.artifactRoot,
      })),
    });
    expect(report.violations).toEqual([]);
    // A: first, approved, during the partition, across the Temporal cut, within the budget; B: first, approved, across the partition, across the cut, within the budget.
    expect(report.counts).toMatchObject({ executions: 10, attempts: 10, submissions: 10, settlements: 10, releases: 0, reconciliations: 0 });
    expect([expected.get(a)?.count, expected.get(b)?.count]).toEqual([5, 5]);
    // Two executors on one Temporal namespace: each host's sandbox received its own runs and nothing else.
    for (const [on, name] of [[a, 'host a'], [b, 'host b']] as const) {
      const prompts = await sandboxJobs(on);
      expect(prompts).toHaveLength(5);
      expect(prompts.every((prompt) => prompt.startsWith(`${name} `))).toBe(true);
    }
  }, 210_000);
});
