import { reservePorts } from './port-block.mjs';

export { isBindConflict, portBlock, reservePorts } from './port-block.mjs';

/**
 * `count` distinct loopback ports, free right now, for a program that cannot bind port 0 and
 * report the port it got (the Temporal CLI, a stack profile, a server restarted on its port).
 * They come from this test worker's own block outside the kernel's ephemeral range
 * (port-block.mjs, docs/testing.md "Ports"), so no other process can be given one in between.
 * A server that can bind port 0 should: pass 0 and read the port back from it.
 */
export async function freePorts(count: number): Promise<number[]> {
  return reservePorts(count);
}
