import { readFile, rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliRun } from '../../support/cli.js';
import { startRunningStack, type RunningStack } from '../../support/running-stack.js';

/*
 * Issue 26, items 2 and 3, on a real sandbox stack: a handoff deleted under a running stack, then
 * a typo saved in its profile.toml. Every surface must tell the truth and give the one next step:
 * `stack status` (exit 6 when not usable), `stack doctor` (check `stack.handoff`), `lexec run`
 * (the locate code every client shares), and `stack start` (what it did, what it refuses).
 * The tests run in order on one stack: each leaves the state the next one starts from.
 */

const REWRITE_STEP = 'Run `lexec stack start --profile sandbox`: it joins the running stack (waiting for it if it is still starting) and writes the handoff again; nothing is restarted.';

interface StatusJson {
  state: string;
  usable: boolean;
  next_step: string | null;
  supervisor: { pid: number } | null;
  profile_problem: { code: string; message: string; next_step: string; issues: { path: string; message: string }[] } | null;
}

interface DoctorJson {
  overall: string;
  checks: { id: string; status: string; summary: string; fix: string | null }[];
}

interface Envelope<T> {
  ok: boolean;
  result?: T;
  error?: { code: string; message: string; next_step: string; issues: { path: string; message: string }[] };
}

let stack: RunningStack;
let supervisorPid: number;
let profileText: string;

beforeAll(async () => {
  stack = await startRunningStack();
  supervisorPid = stack.handoff.supervisor_pid;
  profileText = await readFile(stack.paths.source, 'utf8');
}, 180_000);

afterAll(async () => {
  await stack.stop();
}, 120_000);

function envelope<T>(run: CliRun): Envelope<T> {
  return JSON.parse(run.stdout) as Envelope<T>;
}

async function statusJson(): Promise<{ run: CliRun; status: StatusJson }> {
  const run = await stack.lexec(['stack', 'status', '--json']);
  const document = envelope<StatusJson>(run);
  expect(document.ok, run.stdout).toBe(true);
  return { run, status: document.result as StatusJson };
}

async function handoffCheck(): Promise<{ run: CliRun; check: DoctorJson['checks'][number] | undefined }> {
  const run = await stack.lexec(['stack', 'doctor', '--json']);
  const report = envelope<DoctorJson>(run).result;
  return { run, check: report?.checks.find((check) => check.id === 'stack.handoff') };
}

describe('a handoff lost under a running stack (issue 26, item 2)', () => {
  it('is usable at first: status exits 0 and doctor passes stack.handoff', async () => {
    const { run, status } = await statusJson();
    expect(run.exitCode).toBe(0);
    expect(status.usable).toBe(true);
    const doctor = await handoffCheck();
    expect(doctor.check).toMatchObject({ status: 'pass' });
    expect(doctor.check?.summary).toContain(`supervisor pid ${supervisorPid}`);
  });

  it('status says "usable: no" and exits 6, with the rewrite step, human and --json alike', async () => {
    await rm(stack.paths.handoffFile);
    const { run, status } = await statusJson();
    expect(run.exitCode).toBe(7);
    expect(status).toMatchObject({ state: 'degraded', usable: false });
    expect(status.next_step).toContain(REWRITE_STEP);
    const human = await stack.lexec(['stack', 'status']);
    expect(human.exitCode).toBe(7);
    expect(human.stdout).toContain('usable: no (no active handoff)');
    expect(human.stdout).toContain(REWRITE_STEP);
  });

  it('doctor fails stack.handoff (exit 3) with the same step', async () => {
    const { run, check } = await handoffCheck();
    expect(run.exitCode).toBe(3);
    expect(check).toMatchObject({ status: 'fail', fix: REWRITE_STEP });
    expect(check?.summary).toContain('handoff.json is missing');
    const human = await stack.lexec(['stack', 'doctor']);
    expect(human.stdout).toMatch(/fail stack\.handoff/);
  });

  it('lexec run gives the same step, not stop + start (which would interrupt work in flight)', async () => {
    const run = await stack.lexec(['run', 'a lighthouse at dusk', '--json']);
    expect(run.exitCode).toBe(1);
    const { error } = envelope<never>(run);
    expect(error).toMatchObject({ code: 'handoff_missing', next_step: REWRITE_STEP });
    expect(error?.next_step).not.toContain('stack stop');
  });

  it('stack start rewrites it and says so; the same supervisor runs on, and status and doctor are clean again', async () => {
    const human = await stack.lexec(['stack', 'start']);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toContain('its handoff was missing and has been written again, so clients can find the stack; nothing was restarted');
    expect(human.stdout).not.toContain('nothing to do');

    await rm(stack.paths.handoffFile);
    const json = await stack.lexec(['stack', 'start', '--json']);
    expect(json.exitCode, json.stderr).toBe(0);
    expect(envelope<{ outcome: string; handoff_rewritten: string | null; supervisor_pid: number }>(json).result).toMatchObject({
      outcome: 'already_running',
      handoff_rewritten: 'missing',
      supervisor_pid: supervisorPid,
    });
    const again = await stack.lexec(['stack', 'start', '--json']);
    expect(envelope<{ handoff_rewritten: string | null }>(again).result?.handoff_rewritten).toBeNull();

    const { run, status } = await statusJson();
    expect(run.exitCode).toBe(0);
    expect(status).toMatchObject({ usable: true, supervisor: { pid: supervisorPid } });
    expect((await handoffCheck()).check).toMatchObject({ status: 'pass' });
  });
});

describe('a typo in profile.toml of a running stack (issue 26, item 3)', () => {
  // In any order: the unknown key and the missing one are found by different checks.
  const KEY_PATHS = ['ports.ledger', 'ports.ledgr'];

  it('status of the running stack warns that a start after a stop will refuse, with every key path (still usable: exit 0)', async () => {
    await writeFile(stack.paths.source, profileText.replace(/^ledger = /m, 'ledgr = '));
    const { run, status } = await statusJson();
    expect(run.exitCode).toBe(0);
    expect(status.usable).toBe(true);
    expect(status.profile_problem?.code).toBe('profile_invalid');
    expect(status.profile_problem?.issues.map((issue) => issue.path).sort()).toEqual(KEY_PATHS);
    const human = await stack.lexec(['stack', 'status']);
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toMatch(/warning: profile\.toml no longer renders \(profile_invalid: (ports\.ledgr, ports\.ledger|ports\.ledger, ports\.ledgr)\); the next `lexec stack start` after a stop will refuse until it is fixed/);
    expect(human.stdout).toContain('  ports.ledgr: unknown field');
    expect(human.stdout).toContain('  ports.ledger: required unless [ledger] url names a remote ledger');
  });

  it('stack start of the running stack joins it and says the running generation is kept, not "started as it is"', async () => {
    const run = await stack.lexec(['stack', 'start']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain('the running stack keeps generation');
    expect(run.stderr).toContain('the next start after a stop will refuse until it is fixed');
    expect(run.stderr).not.toContain('as it is');
  });

  it('once stopped: status exits 6 and says the next start refuses; start refuses up front (exit 1) with every key path, starting nothing', async () => {
    const stop = await stack.lexec(['stack', 'stop', '--json']);
    expect(stop.exitCode, stop.stderr).toBe(0);

    const { run, status } = await statusJson();
    expect(run.exitCode).toBe(7);
    expect(status).toMatchObject({ state: 'stopped', usable: false });
    expect(status.next_step).toContain('first (the start refuses until then)');
    const human = await stack.lexec(['stack', 'status']);
    expect(human.exitCode).toBe(7);
    expect(human.stdout).toContain('the next `lexec stack start` will refuse until it is fixed');

    const start = await stack.lexec(['stack', 'start']);
    expect(start.exitCode).toBe(1);
    expect(start.stderr).not.toContain('as it is');
    expect(start.stderr).not.toMatch(/supervisor: pid/);
    expect(start.stderr).toContain('cannot start');
    expect(start.stderr).toContain('Nothing was started');
    const json = await stack.lexec(['stack', 'start', '--json']);
    expect(json.exitCode).toBe(1);
    const { error } = envelope<never>(json);
    expect(error?.code).toBe('profile_invalid');
    expect(error?.issues.map((issue) => issue.path).sort()).toEqual(KEY_PATHS);
    expect((await statusJson()).status.state).toBe('stopped');
  });

  it('fixed, the profile starts again and status exits 0 without a warning', async () => {
    await writeFile(stack.paths.source, profileText);
    const start = await stack.lexec(['stack', 'start', '--json']);
    expect(start.exitCode, start.stderr).toBe(0);
    const { run, status } = await statusJson();
    expect(run.exitCode).toBe(0);
    expect(status).toMatchObject({ usable: true, profile_problem: null });
  });
});
