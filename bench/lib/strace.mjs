// Counting a server's fsync and fdatasync calls with `strace -f -c` (for `--count-fsyncs`).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchError, fail } from './harness.mjs';

/** Fails the benchmark when strace cannot run here. */
export function requireStrace() {
  const probe = spawnSync('strace', ['-V'], { encoding: 'utf8' });
  if (probe.status !== 0) fail(`--count-fsyncs needs strace (${probe.error?.message ?? `strace -V exited ${probe.status}`}).`);
}

/**
 * Attaches `strace -f -c -e trace=fsync,fdatasync` to `service` (`{ name, entry: { child } }`),
 * tracked in the script's child registry (`registry.track`); resolves once it is attached.
 */
export async function attachStrace({ workDir, service, label, registry }) {
  const output = join(workDir, `strace-${service.name}${label === undefined ? '' : `-${label}`}.txt`);
  const child = spawn('strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync', '-o', output, '-p', String(service.entry.child.pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  const entry = registry.track(`strace:${service.name}`, child);
  let text = '';
  child.stderr.setEncoding('utf8');
  await new Promise((attached, refused) => {
    const timer = setTimeout(() => refused(new BenchError(`strace did not attach to the ${service.name} within 10 s: ${text.trim().slice(0, 500)}`)), 10_000);
    child.stderr.on('data', (chunk) => {
      text += chunk;
      if (/attached/.test(text)) {
        clearTimeout(timer);
        attached();
      }
    });
    void entry.exited.then((exit) => {
      clearTimeout(timer);
      refused(new BenchError(`strace could not attach to the ${service.name} (${exit.error ?? exit.signal ?? `exit ${exit.code}`}): ${text.trim().slice(0, 500)}`));
    });
  });
  // -f attaches every thread; give the remaining threads a moment.
  await sleep(300);
  return { entry, output, registry };
}

/** Detaches strace (SIGINT) and reads its summary: fsync + fdatasync calls and the seconds they took. */
export async function detachStrace(tracer) {
  await tracer.registry.stopChild(tracer.entry, 'SIGINT');
  tracer.registry.forget(tracer.entry);
  const total = { calls: 0, seconds: 0 };
  let text;
  try {
    text = readFileSync(tracer.output, 'utf8');
  } catch {
    return total;
  }
  // Columns: % time, seconds, usecs/call, calls, [errors,] syscall.
  for (const line of text.split('\n')) {
    const parts = line.trim().split(/\s+/);
    const name = parts.at(-1);
    if ((name === 'fsync' || name === 'fdatasync') && /^\d+$/.test(parts[3] ?? '')) {
      total.calls += Number(parts[3]);
      total.seconds += Number(parts[1]);
    }
  }
  return total;
}
