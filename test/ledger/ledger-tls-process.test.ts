import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import { readCaFile } from '../../src/http/tls-trust.js';
import { initTeamCa, issueServerCertificate } from '../../src/launcher/tls/team-ca.js';
import { createLedgerClient } from '../../src/ledger/client/ledger-client.js';
import { makeTempDir, removeDir, runLexec } from '../support/cli.js';
import { ledgerConfig } from '../support/ledger-process.js';
import { spawnServerProcess, type ServerProcess } from '../support/server-process.js';

/*
 * `lexec ledger serve` as a real process over HTTPS: a real SIGHUP makes it serve a renewed
 * certificate to new connections; a non-loopback host without http.tls does not start
 * (tls_required at http.tls); `stack tls init|issue --json` print paths, never keys.
 */

let dir: string;
let ledger: ServerProcess | undefined;

beforeAll(async () => {
  dir = await makeTempDir('lexec-tls-process-');
});

afterAll(async () => {
  await ledger?.stop();
  await removeDir(dir);
});

function servedSerial(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(serial);
    });
    socket.on('error', reject);
  });
}

describe('lexec ledger serve over HTTPS', () => {
  it('prints where the CA and the pair are, never key material (--json)', async () => {
    const env = { LEXEC_HOME: join(dir, 'cli-home') };
    const init = await runLexec(['stack', 'tls', 'init', '--json'], { env });
    expect(init.exitCode).toBe(0);
    expect(JSON.parse(init.stdout)).toMatchObject({ ok: true, result: { ca_certificate_file: join(dir, 'cli-home', 'tls', 'ca', 'ca.pem') } });
    const again = await runLexec(['stack', 'tls', 'init', '--json'], { env });
    expect(again.exitCode).not.toBe(0);
    expect(again.stdout + again.stderr).toContain('tls_ca_exists');
    const issue = await runLexec(['stack', 'tls', 'issue', '--host', '127.0.0.1', '--json'], { env });
    expect(issue.exitCode).toBe(0);
    const bad = await runLexec(['stack', 'tls', 'issue', '--host', 'not a host', '--json'], { env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stdout + bad.stderr).toContain('tls_host_invalid');
    const key = await readPrivateFile(join(dir, 'cli-home', 'tls', 'servers', '127.0.0.1', 'server.key'), 'key');
    for (const run of [init, again, issue, bad]) {
      expect(run.stdout + run.stderr).not.toContain('PRIVATE KEY');
      expect(run.stdout + run.stderr).not.toContain(key.split('\n')[1]);
    }
  });

  it('refuses a non-loopback host without http.tls (tls_required at http.tls)', async () => {
    const configPath = join(dir, 'open.json');
    await writeFile(configPath, JSON.stringify(ledgerConfig(join(dir, 'open'), { http: { host: '0.0.0.0', port: 0, allow_non_loopback: true } })));
    const run = await runLexec(['ledger', 'serve', '--config', configPath, '--json'], { env: { HOME: dir } });
    expect(run.exitCode).not.toBe(0);
    expect(run.stdout + run.stderr).toContain('http.tls');
    expect(run.stdout + run.stderr).toContain('tls_required');
  });

  it('serves a renewed certificate to new connections after a real SIGHUP', async () => {
    const env = { LEXEC_HOME: join(dir, 'home') };
    await initTeamCa({ env, force: false });
    const pair = await issueServerCertificate({ env, hosts: ['127.0.0.1'] });
    const ca = await readCaFile(join(dir, 'home', 'tls', 'ca', 'ca.pem'), 'ca_file');
    const state = join(dir, 'served');
    const config = ledgerConfig(state, { http: { host: '127.0.0.1', port: 0, tls: { certificate_file: pair.certificate_file, key_file: pair.key_file } } });
    const configPath = join(dir, 'ledger.json');
    await writeFile(configPath, JSON.stringify(config));
    ledger = await spawnServerProcess(['ledger', 'serve', '--config', configPath], { startedEvent: 'ledger_started', env: { PATH: process.env.PATH ?? '', HOME: dir } });
    const port = Number(ledger.started.port);
    expect(ledger.started).toMatchObject({ scheme: 'https', tls_serial_number: pair.serial_number });
    expect(await servedSerial(port, ca)).toBe(pair.serial_number);
    const admin = await readPrivateFile(String(config.admin_capability_path), 'admin');
    expect(await createLedgerClient({ url: `https://127.0.0.1:${port}`, token: admin, caCertificate: ca }).listAgents()).toEqual([]);

    const renewed = await issueServerCertificate({ env, hosts: ['127.0.0.1'] });
    ledger.signal('SIGHUP');
    const served = ledger;
    await expect.poll(() => served.events().some((event) => event.event === 'tls_reloaded'), { timeout: 20_000 }).toBe(true);
    expect(await servedSerial(port, ca)).toBe(renewed.serial_number);
    const log = ledger.stderrLines().join('\n');
    expect(log).not.toContain('PRIVATE KEY');
    expect(log).not.toContain(admin);
    expect(await ledger.stop()).toBe(0);
    ledger = undefined;
  });
});
