import { execa } from 'execa';
import { writeFile, mkdir } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../../src/errors.js';
import { probeHttp, probeTcp } from '../../../src/process/loopback-probe.js';
import { sanitizePayload } from '../../../src/launcher/logs/log-lines.js';
import { isRunning, isSameProcess, processStartTicks, readProcessStat } from '../../../src/process/process-identity.js';
import { nextStreak, restartDelayMs, RESTART_MAX_DELAY_MS, STABLE_AFTER_MS } from '../../../src/process/restart-policy.js';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { readSupervisorState, writeSupervisorState, type SupervisorState } from '../../../src/launcher/supervisor/supervisor-state.js';
import { acquireProcessLock, processAlive } from '../../../src/storage/process-lock.js';
import { makeTempDir, removeDir } from '../../support/cli.js';
import { freePorts } from '../../support/free-ports.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-rt-unit-');
});
afterEach(async () => {
  await removeDir(dir);
});

describe('restart policy', () => {
  it('doubles the delay from 0.5 s per consecutive crash, capped at 30 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 20].map(restartDelayMs)).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, RESTART_MAX_DELAY_MS]);
  });

  it('starts the crash streak over after a child stayed up long enough', () => {
    expect(nextStreak(0, 10)).toBe(1);
    expect(nextStreak(5, 10)).toBe(6);
    expect(nextStreak(5, STABLE_AFTER_MS)).toBe(1);
  });
});

describe('process identity', () => {
  it('tells a process apart from a reused pid by its start time, and a zombie from a live process', async () => {
    expect(await isSameProcess(process.pid, await processStartTicks(process.pid))).toBe(true);
    expect(await isSameProcess(process.pid, ((await processStartTicks(process.pid)) ?? 0) + 1)).toBe(false);
    // `sh` starts a short sleep in the background, then becomes a long sleep that never reaps it:
    // the short one stays a zombie while the long one lives.
    const parent = execa('sh', ['-c', 'sleep 0.1 & echo $!; exec sleep 10'], { reject: false });
    const zombie = await new Promise<number>((resolve) => {
      parent.stdout.once('data', (chunk: Buffer) => {
        resolve(Number(chunk.toString().trim()));
      });
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await readProcessStat(zombie))?.state).toBe('Z');
      expect(processAlive(zombie)).toBe(false);
      expect(await isRunning(zombie)).toBe(false);
      // A lock left by a process that is now a zombie is taken over like any dead owner's.
      await writeFile(join(dir, 'z.lock'), `${zombie}\n`);
      const release = await acquireProcessLock(join(dir, 'z.lock'), () => new UserError('locked', 'locked', { nextStep: 'wait' }));
      await release();
    } finally {
      parent.kill('SIGKILL');
      await parent;
    }
  });
});

describe('loopback probes', () => {
  it('reports ok for a 200, the status and a safe reason for anything else, and a refused connection', async () => {
    const server = createHttpServer((request, response) => {
      if (request.url === '/health') {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      } else {
        response.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"not_ready","reason":"starting"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      expect(await probeHttp(port, '/health', 1000)).toEqual({ ok: true });
      expect(await probeHttp(port, '/readyz', 1000)).toEqual({ ok: false, error: 'HTTP 503 (starting)' });
      expect(await probeTcp(port, 1000)).toEqual({ ok: true });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    const [closed = 0] = await freePorts(1);
    expect(await probeHttp(closed, '/health', 1000)).toEqual({ ok: false, error: 'connection refused (nothing listens on the port yet)' });
    expect((await probeTcp(closed, 1000)).ok).toBe(false);
  });
});

describe('supervisor state file', () => {
  const state: SupervisorState = {
    state_version: 1,
    profile: 'sandbox',
    generation_id: 'g0123456789abcdef',
    supervisor_pid: 42,
    supervisor_pid_start_ticks: 7,
    started_at: '2026-01-01T00:00:00.000Z',
    phase: 'running',
    step: null,
    failure: null,
    agent: { name: 'local', agent_id: 'agt_x' },
    components: {
      ledger: { state: 'running', pid: 43, pid_start_ticks: 8, port: 7400, started_at: '2026-01-01T00:00:00.000Z', ready_at: null, restarts: 0, last_exit: null, probe_error: null },
    },
  };

  it('round-trips through an atomic write (0600) and refuses a damaged or incomplete document', async () => {
    const paths = profilePaths(dir, 'sandbox');
    await mkdir(paths.stateDir, { recursive: true });
    expect(await readSupervisorState(paths)).toBeNull();
    await writeSupervisorState(paths, state);
    expect(await readSupervisorState(paths)).toEqual(state);
    await writeFile(paths.supervisorState, JSON.stringify({ ...state, components: { ledger: { ...state.components.ledger, restarts: '1' } } }));
    await expect(readSupervisorState(paths)).rejects.toMatchObject({ code: 'supervisor_state_invalid' });
    await writeFile(paths.supervisorState, '{"state_version":1');
    await expect(readSupervisorState(paths)).rejects.toMatchObject({ code: 'supervisor_state_invalid' });
  });
});

describe('log lines shown in messages and by stack logs', () => {
  it('strips terminal control sequences and hides anything shaped like a capability', () => {
    const capability = `lexec_agent_${'A'.repeat(43)}`;
    expect(sanitizePayload(`\u001b[31mError:\u001b[0m token ${capability} rejected\u0007`)).toBe('Error: token [capability hidden] rejected');
  });
});
