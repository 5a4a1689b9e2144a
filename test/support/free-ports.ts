import { createServer, type Server } from 'node:net';

/**
 * `count` distinct loopback ports that were free a moment ago: the kernel picks them (never
 * fixed numbers, so test files can run side by side), and they are held together while picked,
 * so they differ.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen({ port: 0, host: '127.0.0.1' }, () => {
            resolve(server);
          });
        }),
    ),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return address.port;
  });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}
