// Loopback ports for the test servers that cannot bind port 0 and report the port they got (the
// Temporal CLI's `start-dev`, a stack profile's fixed ports, a server restarted on the port it had).
// docs/testing.md "Ports" explains the scheme; in short:
//
// - The ports come from a range outside the kernel's ephemeral range
//   (/proc/sys/net/ipv4/ip_local_port_range), so no `bind(0)` and no outgoing connection of any
//   process can be given one of them by the kernel.
// - The range is cut into blocks of BLOCK_SIZE ports. A process (a vitest worker, a benchmark)
//   claims one block by listening on its first port, the sentinel, for as long as it lives: the
//   kernel keeps two processes (two workers, two test runs in other checkouts) from holding the
//   same block, and a process that dies frees its block at once. A vitest worker starts looking
//   at the block of its VITEST_POOL_ID, so the workers of one run do not even contend.
// - Ports are handed out round the block, each one checked free by listening on it a moment
//   before it is handed out (a server left running by an earlier test keeps its port).
//
// Plain JavaScript (types in port-block.d.mts) so that bench/ scripts use the same scheme.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Ports per claimed block (the sentinel included). */
export const BLOCK_SIZE = 100;
/** Reserved ports start here when there is room below the ephemeral range (clear of 7233, 7400, 8233 …). */
const FLOOR = 20_000;
/** Linux's default, used where /proc cannot be read; it also leaves macOS's (49152-65535) alone. */
const DEFAULT_EPHEMERAL = { low: 32_768, high: 60_999 };
/** One block per process, kept across module reloads (vitest evaluates modules again per file). */
const STATE = Symbol.for('lexec.test.portBlock');

/** The kernel's ephemeral port range. */
export function ephemeralRange(read = () => readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')) {
  try {
    const [low, high] = read().trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low > 0 && low <= high && high <= 65_535) return { low, high };
  } catch {
    // Not Linux: the default below.
  }
  return DEFAULT_EPHEMERAL;
}

/** The range reserved ports come from: the larger side outside `ephemeral`, at least ten blocks. */
export function reservedRange(ephemeral = ephemeralRange()) {
  const below = { first: FLOOR, last: ephemeral.low - 1 };
  const above = { first: Math.max(FLOOR, ephemeral.high + 1), last: 65_535 };
  const size = (range) => range.last - range.first + 1;
  const range = size(below) >= size(above) ? below : above;
  if (size(range) < 10 * BLOCK_SIZE) {
    throw new Error(
      `no room for test ports outside the ephemeral range ${ephemeral.low}-${ephemeral.high} (needs ${10 * BLOCK_SIZE} ports from ${FLOOR}): ` +
        'narrow it, e.g. sysctl -w net.ipv4.ip_local_port_range="32768 60999"',
    );
  }
  return range;
}

/** Listens on 127.0.0.1:`port`; null when something else has it. */
function listenOn(port) {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', (error) => (error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(null) : reject(error)));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(server));
  });
}

async function isFree(port) {
  const server = await listenOn(port);
  if (server === null) return false;
  await new Promise((resolve) => server.close(resolve));
  return true;
}

/** Where this process starts looking: its vitest worker's block, else one derived from its pid. */
function firstBlockTried(blocks) {
  const id = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID);
  return (Number.isInteger(id) && id > 0 ? id - 1 : process.pid) % blocks;
}

async function claimBlock() {
  const range = reservedRange();
  const blocks = Math.floor((range.last - range.first + 1) / BLOCK_SIZE);
  const start = firstBlockTried(blocks);
  for (let tried = 0; tried < blocks; tried += 1) {
    const first = range.first + ((start + tried) % blocks) * BLOCK_SIZE;
    const sentinel = await listenOn(first);
    if (sentinel !== null) {
      // Held for the life of the process, without keeping it alive.
      sentinel.unref();
      return { first, last: first + BLOCK_SIZE - 1, next: first + 1 };
    }
  }
  throw new Error(`every block of test ports in ${range.first}-${range.last} is claimed by another process`);
}

/** This process's block of ports (claimed on first use). */
export async function portBlock() {
  globalThis[STATE] ??= claimBlock();
  const { first, last } = await globalThis[STATE];
  return { first, last };
}

/** `count` distinct ports of this process's block, each free right now. */
export async function reservePorts(count) {
  await portBlock();
  const block = await globalThis[STATE];
  const ports = [];
  for (let tried = 0; ports.length < count; tried += 1) {
    if (tried >= BLOCK_SIZE - 1) throw new Error(`only ${ports.length} of the ${count} ports asked for are free in ${block.first}-${block.last}`);
    // Advanced before the check, so that concurrent callers never get the same port.
    const port = block.next;
    block.next = port >= block.last ? block.first + 1 : port + 1;
    if (await isFree(port)) ports.push(port);
  }
  return ports;
}

/** Whether a server's output says it could not bind its port (Go, Node.js and the lexec servers' words). */
export function isBindConflict(output) {
  return /address already in use|EADDRINUSE|port_in_use/i.test(output);
}
