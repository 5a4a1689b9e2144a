// Measurement helpers shared by the benchmarks under bench/ (plain ESM, no dependencies).
import { closeSync, fdatasyncSync, openSync, readFileSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Context figure: latency of `writes` × (4 KiB write + fdatasync) in `dir`. */
export function fsyncProbe(dir, writes = 200) {
  const path = join(dir, 'fsync-probe.bin');
  const fd = openSync(path, 'w');
  try {
    const block = Buffer.alloc(4096, 7);
    for (let offset = 0; offset < 1024 * 1024; offset += block.length) writeSync(fd, block, 0, block.length, offset);
    fdatasyncSync(fd);
    const samples = [];
    for (let index = 0; index < writes; index += 1) {
      const start = performance.now();
      writeSync(fd, block, 0, block.length, (index * block.length) % (1024 * 1024));
      fdatasyncSync(fd);
      samples.push(performance.now() - start);
    }
    samples.sort((a, b) => a - b);
    return { writes: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99) };
  } finally {
    closeSync(fd);
  }
}

const FILESYSTEMS = { ef53: 'ext4', '1021994': 'tmpfs', '794c7630': 'overlayfs', '9123683e': 'btrfs', '58465342': 'xfs', '2fc12fc1': 'zfs', '6969': 'nfs' };

/** The filesystem type of `dir` (e.g. ext4), or its magic number, or null. */
export function filesystemOf(dir) {
  try {
    const magic = statfsSync(dir).type.toString(16);
    return FILESYSTEMS[magic] ?? `0x${magic}`;
  } catch {
    return null;
  }
}

/** CPU time (user + system, ms) a process has used so far, from /proc; null once it is gone. */
export function processCpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system, ms) one thread of a process has used so far, from /proc (Linux);
 * null elsewhere. The thread whose id is the process's own is its main thread — in a lexec
 * server, the one that handles every request (a worker thread, such as the ledger's webhook
 * delivery, has a thread id of its own).
 */
export function threadCpuMs(pid, tid = pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** CPU time (user + system, ms) this process has used so far. */
export function clientCpuMs() {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}
