// Set-up shared by the benchmarks that run a real stack through the launcher: loopback ports free
// right now, and a fresh LEXEC_HOME holding the shipped sandbox profile on those ports.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `count` loopback ports free a moment ago (held together while picked, so they differ). */
export async function freePorts(count) {
  const servers = await Promise.all(
    Array.from({ length: count }, () => new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen({ port: 0, host: '127.0.0.1' }, () => resolve(server));
    })),
  );
  const ports = servers.map((server) => server.address().port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
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
