import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { probeGrpcHealth } from '../../src/executor/engine/temporal/grpc-health-probe.js';
import { tableAt } from '../support/example-profiles.js';
import { BLOCK_SIZE, ephemeralRange, portBlock, reservedRange } from '../support/port-block.mjs';
import { freePorts } from '../support/free-ports.js';
import { startRunningStack } from '../support/running-stack.js';
import { startDevServer, temporalCli } from '../support/temporal.js';

/*
 * The test harness's ports (docs/testing.md "Ports"): programs that cannot bind port 0 get ports
 * reserved for their test worker outside the kernel's ephemeral range, a block no other process
 * can hold at the same time; and the harness starts them again on fresh ports when a port is
 * taken all the same.
 */

const PORT_BLOCK = new URL('../support/port-block.mjs', import.meta.url).href;
const cli = temporalCli();
const held: Server[] = [];

afterEach(async () => {
  await Promise.all(held.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** Listens on `port` like a foreign program would (and hangs up on whoever connects). */
async function hold(port: number): Promise<void> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1' }, resolve);
  });
  held.push(server);
}

/** Another process that claims its block as a worker with `poolId` would, and holds it until stopped. */
async function blockHolder(poolId: string): Promise<{ block: { first: number; last: number }; stop: () => Promise<void> }> {
  const script = `const { portBlock } = await import(${JSON.stringify(PORT_BLOCK)}); process.stdout.write(JSON.stringify(await portBlock()) + '\\n'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH ?? '', VITEST_POOL_ID: poolId }, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const line = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) resolve(text);
    });
    child.once('exit', () => { reject(new Error(`the holder exited: ${text}`)); });
  });
  return {
    block: JSON.parse(line) as { first: number; last: number },
    async stop() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('ports reserved per test worker', () => {
  it('are never in the kernel ephemeral range (where bind(0) and outgoing connections take theirs), and come from this worker block', async () => {
    const { low, high } = ephemeralRange();
    const block = await portBlock();
    const ports = await freePorts(8);
    expect(new Set(ports).size).toBe(8);
    for (const port of ports) {
      expect(port < low || port > high, `${port} is in ${low}-${high}`).toBe(true);
      expect(port).toBeGreaterThan(block.first);
      expect(port).toBeLessThanOrEqual(block.last);
    }
  });

  it('skip a port of the block that something listens on', async () => {
    const block = await portBlock();
    const [last = 0] = await freePorts(1);
    const next = last >= block.last ? block.first + 1 : last + 1;
    await hold(next);
    const [port] = await freePorts(1);
    expect(port).not.toBe(next);
  });

  it('the range is the larger side outside the ephemeral range, from 20000; a machine with no room is told how to make some', () => {
    expect(reservedRange({ low: 32_768, high: 60_999 })).toEqual({ first: 20_000, last: 32_767 });
    expect(reservedRange({ low: 49_152, high: 65_535 })).toEqual({ first: 20_000, last: 49_151 });
    expect(reservedRange({ low: 10_000, high: 40_000 })).toEqual({ first: 40_001, last: 65_535 });
    expect(() => reservedRange({ low: 1_024, high: 65_535 })).toThrow(/sysctl -w net\.ipv4\.ip_local_port_range/);
    expect(ephemeralRange(() => '40000\t50000\n')).toEqual({ low: 40_000, high: 50_000 });
    expect(ephemeralRange(() => 'garbage')).toEqual({ low: 32_768, high: 60_999 });
  });

  it('a block is held by one process at a time (another worker, another test run) and is free again once that process dies', async () => {
    // A worker number no ordinary run reaches, so that only these processes look at its block.
    const first = await blockHolder('90');
    const second = await blockHolder('90');
    try {
      expect(second.block.first).not.toBe(first.block.first);
      expect(first.block.last - first.block.first + 1).toBe(BLOCK_SIZE);
    } finally {
      await second.stop();
    }
    await first.stop();
    const third = await blockHolder('90');
    await third.stop();
    expect(third.block).toEqual(first.block);
  });
});

describe.skipIf(cli === null)('a Temporal dev server whose port is taken', () => {
  it('is started again on fresh ports, and what answers is the server it started', async () => {
    const [taken = 0] = await freePorts(1);
    await hold(taken);
    const server = await startDevServer(cli ?? '', { port: taken });
    try {
      expect(server.output()).toContain('address already in use');
      expect(server.port).not.toBe(taken);
      expect(await probeGrpcHealth(server.port, 5_000)).toEqual({ serving: true });
    } finally {
      await server.stop();
    }
  }, 240_000);
});

describe('a running stack whose profile port is taken', () => {
  it('is started again on fresh ports and a new generation', async () => {
    const [taken = 0] = await freePorts(1);
    await hold(taken);
    let squatted = false;
    const stack = await startRunningStack({
      edit: (table) => {
        // The first profile only: its ledger port is the one held above.
        if (!squatted) tableAt(table, 'ports').ledger = taken;
        squatted = true;
      },
    });
    try {
      expect(squatted).toBe(true);
      expect(new URL(stack.ledgerUrl).port).not.toBe(String(taken));
      expect((await fetch(`${stack.ledgerUrl}/health`)).status).toBe(200);
    } finally {
      await stack.stop();
    }
  }, 300_000);
});
