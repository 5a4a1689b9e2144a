import { describe, expect, it } from 'vitest';
import { canListen, describeBusyPort, probePort } from '../../../src/process/port-probe.js';
import { freePorts } from '../../support/free-ports.js';
import { spawnSandbox } from '../../support/sandbox-process.js';
import { listenScript, startChild } from '../profiles/profile-fixtures.js';

/* src/process/port-probe.ts against real sockets held by real child processes. */

describe('probePort', () => {
  it('reports a free port as free', async () => {
    const [port] = await freePorts(1);
    expect(await probePort(port ?? 0)).toEqual({ port, free: true });
  });

  it("names the holder of a busy port by its pid, never by its command line", async () => {
    const [port = 0] = await freePorts(1);
    const secret = 'Bearer do-not-show-this-argument';
    const holder = await startChild(listenScript([port]), [secret]);
    try {
      const probe = await probePort(port);
      expect(probe).toEqual({ port, free: false, holder: { pid: holder.pid, name: 'node' } });
      if (probe.free) throw new Error('unreachable');
      expect(describeBusyPort(probe)).toBe(`port ${port} is in use by pid ${holder.pid} (node)`);
      expect(JSON.stringify(probe)).not.toContain('do-not-show');
    } finally {
      await holder.stop();
    }
    expect(await canListen(port)).toBe(true);
  });

  it('names a lexec process by its subcommand', async () => {
    const sandbox = await spawnSandbox();
    try {
      const probe = await probePort(sandbox.port);
      expect(probe.free).toBe(false);
      if (probe.free) throw new Error('unreachable');
      expect(probe.holder?.name).toBe('lexec provider sandbox serve');
    } finally {
      await sandbox.stop();
    }
  });

  it('describes a holder it cannot see without inventing one', () => {
    expect(describeBusyPort({ port: 7400, free: false, holder: null })).toBe('port 7400 is in use by a process this user cannot see');
  });
});
