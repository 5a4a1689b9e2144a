import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { basename } from 'node:path';

/** Who listens on a port: a pid and a process name safe to show (never the full command line). */
export interface PortHolder {
  readonly pid: number;
  readonly name: string;
}

export type PortProbe = { readonly port: number; readonly free: true } | { readonly port: number; readonly free: false; readonly holder: PortHolder | null };

/** Whether this process could listen on 127.0.0.1:<port> right now. */
export function canListen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => {
      resolve(false);
    });
    server.listen({ port, host, exclusive: true }, () => {
      server.close(() => {
        resolve(true);
      });
    });
  });
}

/** Inodes of listening TCP sockets on `port`, from /proc/net/tcp and tcp6 (Linux). */
async function listeningInodes(port: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const [, local, , state, , , , , , inode] = fields;
      if (local?.endsWith(`:${hexPort}`) === true && state === '0A' && inode !== undefined && inode !== '0') inodes.add(inode);
    }
  }
  return inodes;
}

/**
 * A name for a process that is safe to print: for a lexec process its subcommand words
 * (`lexec ledger serve`), otherwise the executable's file name. Full command lines are never shown:
 * another program's arguments may hold a secret.
 */
async function processName(pid: number): Promise<string> {
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0').filter(Boolean);
  const runIndex = argv.findIndex((arg) => /(?:^|\/)(?:bin\/run\.js|lexec)$/.test(arg));
  if (runIndex !== -1) {
    const words: string[] = [];
    for (const arg of argv.slice(runIndex + 1)) {
      if (arg.startsWith('-') || !/^[a-z][a-z-]*$/.test(arg) || words.length === 3) break;
      words.push(arg);
    }
    return ['lexec', ...words].join(' ');
  }
  // The executable's file name (`node`, `nginx`): the kernel's short name is the main thread's
  // name, which Node.js 24 sets to "MainThread". Another user's exe link cannot be read: then comm.
  const executable = await readlink(`/proc/${pid}/exe`).catch(() => null);
  if (executable !== null) return basename(executable.replace(/ \(deleted\)$/, ''));
  return (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => 'unknown process')).trim();
}

/** The process listening on `port`, when this user may see it (Linux /proc); null otherwise. */
export async function findPortHolder(port: number): Promise<PortHolder | null> {
  const inodes = await listeningInodes(port);
  if (inodes.size === 0) return null;
  const pids = (await readdir('/proc').catch(() => [])).filter((entry) => /^\d+$/.test(entry));
  for (const pid of pids) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => []);
    for (const fd of fds) {
      const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const match = /^socket:\[(\d+)\]$/.exec(link);
      if (match?.[1] !== undefined && inodes.has(match[1])) return { pid: Number(pid), name: await processName(Number(pid)) };
    }
  }
  return null;
}

/** A process's working directory, when this user may read it (Linux /proc); null otherwise. */
export async function workingDirectory(pid: number): Promise<string | null> {
  return readlink(`/proc/${pid}/cwd`).catch(() => null);
}

/** Whether a port is free on loopback (or `host`: a ledger listening on its own address), and if not, who holds it (when that can be seen). */
export async function probePort(port: number, host = '127.0.0.1'): Promise<PortProbe> {
  if (await canListen(port, host)) return { port, free: true };
  return { port, free: false, holder: await findPortHolder(port) };
}

/** Which lexec stack a holder belongs to, when it is one: its profile and LEXEC_HOME. */
export interface HolderStack {
  readonly profile: string;
  readonly home: string;
}

/**
 * "port 7400 is in use by pid 1234 (lexec ledger serve)", and "… of profile "sandbox" in
 * LEXEC_HOME /home/me/.lexec" when the holder is a lexec stack's — for messages and hints.
 */
export function describeBusyPort(probe: Extract<PortProbe, { free: false }>, stack: HolderStack | null = null): string {
  if (probe.holder === null) return `port ${probe.port} is in use by a process this user cannot see`;
  const of = stack === null ? '' : ` of profile "${stack.profile}" in LEXEC_HOME ${stack.home}`;
  return `port ${probe.port} is in use by pid ${probe.holder.pid} (${probe.holder.name})${of}`;
}
