import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createNetnsLab, ipPath, netnsUnavailable, type NetnsHost, type NetnsLab } from '../support/netns.js';

/*
 * The network-namespace lab the cross-host proofs stand on (test/support/netns.ts): its hosts
 * reach each other on their own addresses, the machine's root namespace gains nothing, a cut
 * link stops traffic and a restored one carries it again, a partition parts two hosts only, and
 * teardown leaves no namespace.
 */

const unavailable = netnsUnavailable();

const rootView = () => ({
  links: execFileSync(ipPath(), ['-o', 'link', 'show'], { encoding: 'utf8' }).split('\n').map((line) => line.split(':')[1]?.trim()).filter(Boolean).sort(),
  addresses: execFileSync(ipPath(), ['-4', '-o', 'addr', 'show'], { encoding: 'utf8' }),
  routes: execFileSync(ipPath(), ['-4', 'route', 'show', 'table', 'all'], { encoding: 'utf8' }),
});
const namespaces = () => execFileSync(ipPath(), ['netns', 'list'], { encoding: 'utf8' });

/** One TCP connect from `from` to `to`'s address (a listener started there first); true when it was accepted. */
async function connects(lab: NetnsLab, from: NetnsHost, to: NetnsHost, port: number): Promise<boolean> {
  const attempt = await lab.exec(from, 'bash', ['-c', `exec 3<>/dev/tcp/${to.address}/${String(port)}`], { env: { PATH: '/usr/bin:/bin' }, timeoutMs: 2_000 });
  return attempt.exitCode === 0;
}

describe.skipIf(unavailable !== null)('a network-namespace lab', () => {
  it('cables its hosts to a switch of their own, cuts and restores a link, parts two hosts, and leaves nothing behind', async () => {
    const before = rootView();
    const lab = createNetnsLab(3);
    try {
      const [a, b, c] = lab.hosts as [NetnsHost, NetnsHost, NetnsHost];
      expect(lab.subnet).toMatch(/^10\.231\.\d{1,3}\.0\/24$/);
      expect(a.address).not.toBe(b.address);
      expect(namespaces()).toContain(a.namespace);
      // The root namespace has no new interface, address or route.
      expect(rootView()).toEqual(before);

      // A listener on b's address (a fixed port is safe: nothing else lives in b's namespace).
      const server = lab.exec(b, process.execPath, ['-e', `require('node:net').createServer((s) => s.end()).listen(7000, '${b.address}')`], { env: { PATH: process.env.PATH ?? '' } });
      try {
        await lab.untilListening(a, b.address, 7000, 20_000);
        expect(await connects(lab, a, b, 7000)).toBe(true);
        // Loopback is each host's own: b's listener is not on a's 127.0.0.1.
        expect((await lab.exec(a, 'bash', ['-c', 'exec 3<>/dev/tcp/127.0.0.1/7000'], { env: { PATH: '/usr/bin:/bin' } })).exitCode).not.toBe(0);

        lab.cut(b);
        expect(lab.linked(b)).toBe(false);
        expect(await connects(lab, a, b, 7000)).toBe(false);
        lab.restore(b);
        expect(lab.linked(b)).toBe(true);
        await lab.untilListening(a, b.address, 7000, 20_000);

        // a and b apart, c still reaching b.
        lab.partition(a, b);
        expect(await connects(lab, a, b, 7000)).toBe(false);
        expect(await connects(lab, c, b, 7000)).toBe(true);
        lab.heal(a, b);
        expect(await connects(lab, a, b, 7000)).toBe(true);
      } finally {
        server.kill('SIGKILL');
      }
    } finally {
      lab.teardown();
      lab.teardown();
    }
    expect(namespaces()).not.toContain(lab.switchNamespace);
    for (const host of lab.hosts) expect(namespaces()).not.toContain(host.namespace);
    expect(rootView()).toEqual(before);
  }, 60_000);
});
