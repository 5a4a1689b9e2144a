// Set-up shared by the benchmarks that run a real stack through the launcher: loopback ports free
// right now (reserved for this process), and a fresh LEXEC_HOME holding the shipped sandbox profile on those ports.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reservePorts } from '../../test/support/port-block.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * `count` loopback ports free right now, from this process's own block outside the kernel's
 * ephemeral range (test/support/port-block.mjs; docs/testing.md "Ports"): the launcher's
 * profiles and the Temporal CLI take fixed ports, and a port picked by binding 0 and closing it
 * could be taken by another process before the child binds it.
 */
export function freePorts(count) {
  return reservePorts(count);
}

/**
 * A new LEXEC_HOME under `dir` (named `prefix…`) with profiles/sandbox/profile.toml written from
 * profiles.example/sandbox.toml, its three ports replaced by free ones. Returns the home, the
 * minimal environment a `lexec` child needs there, the profile directory and the ports.
 */
export async function sandboxStackHome(dir, prefix) {
  mkdirSync(dir, { recursive: true });
  const home = mkdtempSync(join(dir, prefix));
  const [ledger, executor, sandbox] = await freePorts(3);
  const profileDir = join(home, 'profiles', 'sandbox');
  mkdirSync(profileDir, { recursive: true, mode: 0o700 });
  writeFileSync(
    join(profileDir, 'profile.toml'),
    readFileSync(join(root, 'profiles.example', 'sandbox.toml'), 'utf8')
      .replace(/^ledger = 7400$/m, `ledger = ${ledger}`)
      .replace(/^executor = 7410$/m, `executor = ${executor}`)
      .replace(/^sandbox = 7420$/m, `sandbox = ${sandbox}`),
  );
  return { home, env: { PATH: process.env.PATH ?? '', HOME: home, LEXEC_HOME: home }, profileDir, ports: { ledger, executor, sandbox } };
}
