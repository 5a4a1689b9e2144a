import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  managedTemporalStatePath,
  readManagedTemporalState,
  writeManagedTemporalState,
  type ManagedTemporalState,
} from '../../src/executor/engine/temporal/managed-temporal-state.js';
import { makeTempDir, removeDir } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-temporal-state-');
});
afterEach(async () => {
  await removeDir(dir);
});

const running: ManagedTemporalState = {
  state_version: 1,
  executor_pid: 4100,
  executor_pid_start_ticks: 123456,
  pid: 4200,
  pid_start_ticks: 123999,
  state: 'running',
  address: '127.0.0.1:7233',
  ui_url: 'http://127.0.0.1:8233',
  restarts: 2,
  started_at: '2026-01-02T03:04:05.678Z',
  last_exit: { code: null, signal: 'SIGKILL', at: '2026-01-02T03:04:05.000Z' },
};

describe('server.json, the managed Temporal server state (a contract with the launcher)', () => {
  it('is written as exactly the contract document, mode 0600, with no temporary file left', async () => {
    writeManagedTemporalState(dir, { ...running, last_exit: null, state: 'stopped', pid: null, pid_start_ticks: null });
    expect(await readFile(managedTemporalStatePath(dir), 'utf8')).toBe(
      '{"state_version":1,"executor_pid":4100,"executor_pid_start_ticks":123456,"pid":null,"pid_start_ticks":null,"state":"stopped",' +
        '"address":"127.0.0.1:7233","ui_url":"http://127.0.0.1:8233","restarts":2,"started_at":"2026-01-02T03:04:05.678Z","last_exit":null}\n',
    );
    expect((await stat(managedTemporalStatePath(dir))).mode & 0o777).toBe(0o600);
    writeManagedTemporalState(dir, running);
    expect(await readManagedTemporalState(dir)).toEqual(running);
    expect(await readdir(dir)).toEqual(['server.json']);
  });

  it('reads as null when missing, not JSON, or off the schema (unknown field, wrong state, bad time)', async () => {
    expect(await readManagedTemporalState(dir)).toBeNull();
    for (const document of ['{"state_version":1,', JSON.stringify({ ...running, extra: 1 }), JSON.stringify({ ...running, state: 'failed' }), JSON.stringify({ ...running, started_at: 'yesterday' })]) {
      await writeFile(managedTemporalStatePath(dir), document);
      expect(await readManagedTemporalState(dir)).toBeNull();
    }
  });
});
