import { execFileSync, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { execa, type ResultPromise } from 'execa';

/*
 * (The vitest-free core of test/support/netns.ts, which re-exports it unchanged and adds
 * netnsLab() for test files; benchmarks load this file directly — Node runs it with type
 * stripping, so it holds only erasable TypeScript and imports nothing relative.)
 *
 * Hosts on this machine for tests that are about the network between them (issue 29 item 4): a
 * lab of N Linux network namespaces, each a "host" with its own loopback and one address on a
 * private /24, all cabled to a bridge that lives in a namespace of its own (the "switch"). The
 * machine's root namespace gets no interface, address or route: traffic stays between the lab's
 * namespaces, and nothing here touches any other address.
 *
 *   switch namespace  lx-<pid>-<lab>-sw : bridge br0, ports p1..pN (one veth end each)
 *   host namespace    lx-<pid>-<lab>-<n>: lo up, eth0 (the other veth end) = 10.231.<r>.<n+1>/24
 *
 * A link is cut by setting the switch's port down (the host's eth0 loses its carrier, as when a
 * cable is pulled) and restored by setting it up; two hosts are partitioned from each other only
 * by a blackhole route to the other's address in each. Processes are run inside a host with
 * `ip netns exec`; what they start (daemons included) stays in that namespace. Files are shared
 * with the test: namespaces separate the network only.
 *
 * Teardown kills whatever still runs in the lab's namespaces (only processes the test started
 * there: nothing else can enter them) and deletes the namespaces, which removes the veths and the
 * bridge. It is idempotent and synchronous, and runs from afterAll, at process exit and on
 * SIGINT/SIGTERM/SIGHUP — so also when a test fails or the worker is stopped.
 *
 * It needs root (CAP_NET_ADMIN to make links, CAP_SYS_ADMIN for `ip netns`' mounts) and
 * iproute2's `ip`. Without them netnsUnavailable() answers the one line naming them, and the tests
 * skip (scripts/test.sh prints that line once for the suite) — except in CI (CI=true), which runs
 * as root and where a skip would hide the proof.
 */

/** Where iproute2's `ip` is looked for (the environment's PATH is not trusted to have sbin). */
const IP_CANDIDATES = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'];
const IP = IP_CANDIDATES.find((path) => existsSync(path));

/** What a skipped test needs, in one line (scripts/test.sh prints the same once). */
export const NETNS_NEEDS = 'network-namespace tests skipped — they need root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2 `ip`';

/** CAP_NET_ADMIN (12) and CAP_SYS_ADMIN (21) in this process's effective set. */
function hasCapabilities(): boolean {
  try {
    const line = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (line?.[1] === undefined) return false;
    const effective = BigInt(`0x${line[1]}`);
    return (effective & (1n << 12n)) !== 0n && (effective & (1n << 21n)) !== 0n;
  } catch {
    return false;
  }
}

let availability: string | null | undefined;

/**
 * Null when this process can build a lab; otherwise the one line naming what it needs (tests
 * skip on it). In CI an unavailable lab throws: CI runs as root, and the proof must run there.
 * The answer is proven once by making (and deleting) a namespace.
 */
export function netnsUnavailable(): string | null {
  if (availability !== undefined) return availability;
  availability = probe();
  if (availability !== null && process.env.CI === 'true') throw new Error(`CI needs network namespaces (${availability})`);
  return availability;
}

function probe(): string | null {
  if (IP === undefined || !hasCapabilities()) return NETNS_NEEDS;
  const name = `lx-${process.pid}-probe`;
  const made = spawnSync(IP, ['netns', 'add', name], { stdio: 'ignore' });
  spawnSync(IP, ['netns', 'del', name], { stdio: 'ignore' });
  return made.status === 0 ? null : NETNS_NEEDS;
}

/** The `ip` binary (throws when there is none). */
export function ipPath(): string {
  if (IP === undefined) throw new Error(NETNS_NEEDS);
  return IP;
}

/** Runs `ip <args>`; throws with its stderr when it fails. */
function ip(args: readonly string[]): string {
  return execFileSync(ipPath(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs `ip <args>` and ignores a failure (teardown of what may be gone already). */
function ipQuietly(args: readonly string[]): string {
  const run = spawnSync(ipPath(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return run.status === 0 ? run.stdout : '';
}

export interface NetnsHost {
  /** 1-based position in the lab. */
  readonly index: number;
  /** The network namespace's name (`lx-<pid>-<lab>-<n>`). */
  readonly namespace: string;
  /** Its address on the lab's subnet (eth0). */
  readonly address: string;
  /** The host-side interface (inside the namespace). */
  readonly hostInterface: 'eth0';
  /** The switch's port cabled to it (inside the switch namespace). */
  readonly switchPort: string;
}

/** Which end of a host's cable is set down or up. */
export type LinkSide = 'switch' | 'host' | 'both';

export interface ExecInOptions {
  /** The child's whole environment (nothing of the test's is added): PATH and HOME at least. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Kill the child after this long (default: none, for servers). */
  readonly timeoutMs?: number;
  /** Do not reject on a non-zero exit (default true: the caller reads exitCode). */
  readonly reject?: boolean;
}

export interface NetnsLab {
  /** `10.231.<r>.0/24` */
  readonly subnet: string;
  readonly hosts: readonly NetnsHost[];
  /** The switch's namespace (the bridge and its ports). */
  readonly switchNamespace: string;
  /**
   * Runs `command args` inside the host's namespace (`ip netns exec`), with exactly `env`. The
   * result is execa's: await it for a command, or keep it for a server (kill() ends it).
   */
  exec(host: NetnsHost, command: string, args: readonly string[], options: ExecInOptions): ResultPromise;
  /**
   * One HTTP GET made from inside the host (its loopback is its own: the test's cannot reach it),
   * by a Node child; the status and body, or null when nothing answered within `timeoutMs`.
   */
  httpGet(host: NetnsHost, url: string, timeoutMs?: number): Promise<{ readonly status: number; readonly body: string } | null>;
  /** Resolves once something inside `from` connects to `address:port` (bound: `timeoutMs`). */
  untilListening(from: NetnsHost, address: string, port: number, timeoutMs?: number): Promise<void>;
  /** Pulls the host's cable: its switch port (default), its own eth0, or both go down. */
  cut(host: NetnsHost, side?: LinkSide): void;
  /** Plugs it back in. */
  restore(host: NetnsHost, side?: LinkSide): void;
  /**
   * Cuts `a` and `b` off each other only, both ways (a blackhole route to the other's address in
   * each namespace): what they send each other is dropped without an answer, as on a link down,
   * while both keep reaching every other host.
   */
  partition(a: NetnsHost, b: NetnsHost): void;
  /** Undoes partition(a, b). */
  heal(a: NetnsHost, b: NetnsHost): void;
  /** Whether the host's eth0 has a carrier now (its cable is in at both ends). */
  linked(host: NetnsHost): boolean;
  /** Kills what still runs in the lab, deletes its namespaces (with them the veths and bridge). Idempotent. */
  teardown(): void;
}

const labs = new Set<NetnsLab>();
let handlersInstalled = false;

/** Exit and signal handlers, once per process: every lab still standing is torn down. */
function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.once('exit', () => {
    for (const lab of labs) lab.teardown();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      for (const lab of labs) lab.teardown();
      // Then die of the signal as if nobody had listened.
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.once(signal, onSignal);
  }
}

/**
 * A /24 under 10.231.0.0/16 that no address or route of this machine's root namespace names. The
 * lab's namespaces have routing tables of their own, so an overlap could not misroute anything;
 * avoiding it keeps every address the lab uses distinct from the machine's.
 */
function freeSubnet(): string {
  const taken = `${ipQuietly(['-4', 'addr', 'show'])}\n${ipQuietly(['-4', 'route', 'show', 'table', 'all'])}`;
  for (let attempt = 0; attempt < 64; attempt += 1) {
    const third = randomInt(1, 255);
    if (!new RegExp(`\\b10\\.231\\.${String(third)}\\.`).test(taken)) return `10.231.${String(third)}.0/24`;
  }
  throw new Error('no free /24 under 10.231.0.0/16 on this machine');
}

let labCount = 0;

/** Builds a lab of `count` hosts (1 to 200). Tear it down with `teardown()` (netnsLab() does it for a test file). */
export function createNetnsLab(count: number): NetnsLab {
  if (count < 1 || count > 200) throw new Error('a lab has 1 to 200 hosts');
  labCount += 1;
  const prefix = `lx-${process.pid}-${labCount}`;
  const switchNamespace = `${prefix}-sw`;
  const subnet = freeSubnet();
  const base = subnet.slice(0, subnet.lastIndexOf('.') + 1);
  const hosts: NetnsHost[] = Array.from({ length: count }, (_, offset) => ({
    index: offset + 1,
    namespace: `${prefix}-${String(offset + 1)}`,
    address: `${base}${String(offset + 2)}`,
    hostInterface: 'eth0',
    switchPort: `p${String(offset + 1)}`,
  }));
  const namespaces = [switchNamespace, ...hosts.map((host) => host.namespace)];
  let torn = false;

  const sides = (host: NetnsHost, side: LinkSide): string[][] => [
    ...(side === 'host' ? [] : [['-n', switchNamespace, 'link', 'set', host.switchPort]]),
    ...(side === 'switch' ? [] : [['-n', host.namespace, 'link', 'set', host.hostInterface]]),
  ];

  const lab: NetnsLab = {
    subnet,
    hosts,
    switchNamespace,
    exec(host, command, args, options) {
      return execa(ipPath(), ['netns', 'exec', host.namespace, command, ...args], {
        env: { ...options.env },
        extendEnv: false,
        cwd: options.cwd,
        reject: options.reject ?? false,
        stdin: 'ignore',
        ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
      });
    },
    async httpGet(host, url, timeoutMs = 5_000) {
      const script = 'fetch(process.argv[1], { signal: AbortSignal.timeout(Number(process.argv[2])) }).then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() })), () => process.exit(3))';
      const answer = await lab.exec(host, process.execPath, ['-e', script, url, String(timeoutMs)], { env: { PATH: process.env.PATH ?? '' }, timeoutMs: timeoutMs + 5_000 });
      return answer.exitCode === 0 ? (JSON.parse(String(answer.stdout)) as { status: number; body: string }) : null;
    },
    async untilListening(from, address, port, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // bash's /dev/tcp: a connect and nothing else, from inside the namespace.
        const attempt = await lab.exec(from, 'bash', ['-c', `exec 3<>/dev/tcp/${address}/${String(port)}`], { env: { PATH: '/usr/bin:/bin' }, timeoutMs: 5_000 });
        if (attempt.exitCode === 0) return;
        if (Date.now() > deadline) throw new Error(`nothing listens on ${address}:${String(port)} as seen from ${from.namespace} after ${String(timeoutMs)} ms`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    cut(host, side = 'switch') {
      for (const args of sides(host, side)) ip([...args, 'down']);
    },
    restore(host, side = 'switch') {
      for (const args of sides(host, side)) ip([...args, 'up']);
    },
    partition(a, b) {
      ip(['-n', a.namespace, 'route', 'replace', 'blackhole', `${b.address}/32`]);
      ip(['-n', b.namespace, 'route', 'replace', 'blackhole', `${a.address}/32`]);
    },
    heal(a, b) {
      ipQuietly(['-n', a.namespace, 'route', 'del', 'blackhole', `${b.address}/32`]);
      ipQuietly(['-n', b.namespace, 'route', 'del', 'blackhole', `${a.address}/32`]);
    },
    linked(host) {
      return /\bLOWER_UP\b/.test(ip(['-n', host.namespace, 'link', 'show', host.hostInterface]));
    },
    teardown() {
      if (torn) return;
      torn = true;
      labs.delete(lab);
      // Whatever the test left running there (a daemon a failed test did not stop): only the
      // test's own children can be in these namespaces.
      for (const namespace of namespaces) {
        for (const pid of ipQuietly(['netns', 'pids', namespace]).split('\n').map(Number).filter((pid) => Number.isInteger(pid) && pid > 1)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone already
          }
        }
      }
      for (const namespace of namespaces) ipQuietly(['netns', 'del', namespace]);
    },
  };

  labs.add(lab);
  installHandlers();
  try {
    ip(['netns', 'add', switchNamespace]);
    ip(['-n', switchNamespace, 'link', 'add', 'br0', 'type', 'bridge']);
    ip(['-n', switchNamespace, 'link', 'set', 'br0', 'up']);
    for (const host of hosts) {
      ip(['netns', 'add', host.namespace]);
      ip(['-n', host.namespace, 'link', 'set', 'lo', 'up']);
      // Both ends are made where they live: the root namespace never holds either.
      ip(['-n', switchNamespace, 'link', 'add', host.switchPort, 'type', 'veth', 'peer', 'name', host.hostInterface, 'netns', host.namespace]);
      ip(['-n', switchNamespace, 'link', 'set', host.switchPort, 'master', 'br0', 'up']);
      ip(['-n', host.namespace, 'addr', 'add', `${host.address}/24`, 'dev', host.hostInterface]);
      ip(['-n', host.namespace, 'link', 'set', host.hostInterface, 'up']);
    }
  } catch (error) {
    lab.teardown();
    throw error;
  }
  return lab;
}
