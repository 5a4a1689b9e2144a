import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import { UserError } from '../../src/errors.js';
import { createExecutorClient } from '../../src/executor/client/executor-client.js';
import { createLedgerGateway, LedgerUnavailable } from '../../src/executor/ledger-gateway.js';
import { followTlsReload, loadServerTls } from '../../src/http/server-tls.js';
import { readCaFile } from '../../src/http/tls-trust.js';
import { initTeamCa, issueServerCertificate, type TlsIssueResult } from '../../src/launcher/tls/team-ca.js';
import { composeLedger, type ComposedLedger } from '../../src/ledger/compose-ledger.js';
import { createLedgerClient } from '../../src/ledger/client/ledger-client.js';
import { DEFAULT_POLICY } from '../support/ledger.js';

/*
 * The ledger over HTTPS with certificates made by lexec's own `stack tls init|issue` code: a
 * client given the team CA works; a certificate for another name, an expired one, one signed by
 * another CA, a key that is not the certificate's and a key file others can read are each refused
 * with a clear message before anything is sent; SIGHUP serves a new pair to new connections.
 */

const DAY = 24 * 60 * 60 * 1000;
let dir: string;
let home: string;
let otherHome: string;
let good: TlsIssueResult;
let caPem: string;
let otherCaPem: string;

async function ledgerWith(tls: { cert: string; key: string } | undefined, name: string): Promise<{ ledger: ComposedLedger; url: string; admin: string; logs: string[] }> {
  const logs: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(line) });
  const ledger = await composeLedger({
    config: {
      database_path: join(dir, `${name}.db`),
      admin_capability_path: join(dir, `${name}-credentials`, 'admin.capability'),
      contract_level: 'v4.5',
      authorization_ttl_seconds: 3600,
      default_policy: DEFAULT_POLICY,
    },
    logger,
    ...(tls === undefined ? {} : { tls }),
  });
  await ledger.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = ledger.app.server.address() as AddressInfo;
  const admin = await readPrivateFile(join(dir, `${name}-credentials`, 'admin.capability'), 'admin');
  return { ledger, url: `https://127.0.0.1:${port}`, admin, logs };
}

async function stop(served: { ledger: ComposedLedger }): Promise<void> {
  await served.ledger.app.close();
  served.ledger.close();
}

/** The serial number of the certificate a new TLS connection to `port` is served. */
function servedSerial(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: undefined }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(serial);
    });
    socket.on('error', reject);
  });
}

async function refusal(promise: Promise<unknown>): Promise<UserError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UserError);
  return error as UserError;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lexec-tls-'));
  home = join(dir, 'home');
  otherHome = join(dir, 'other-home');
  await initTeamCa({ env: { LEXEC_HOME: home }, force: false });
  await initTeamCa({ env: { LEXEC_HOME: otherHome }, force: false });
  good = await issueServerCertificate({ env: { LEXEC_HOME: home }, hosts: ['127.0.0.1', 'localhost'] });
  caPem = await readCaFile(join(home, 'tls', 'ca', 'ca.pem'), 'ca_file');
  otherCaPem = await readCaFile(join(otherHome, 'tls', 'ca', 'ca.pem'), 'ca_file');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('lexec stack tls init|issue', () => {
  it('refuses a second CA unless forced, and a bad host name; results name files, never key material', async () => {
    const again = await refusal(initTeamCa({ env: { LEXEC_HOME: home }, force: false }));
    expect(again.code).toBe('tls_ca_exists');
    for (const host of ['bad_host', '-lead.example', 'a..b', '', 'ledger example', '999.1.1.1']) {
      expect((await refusal(issueServerCertificate({ env: { LEXEC_HOME: home }, hosts: [host] }))).code).toBe('tls_host_invalid');
    }
    expect(JSON.stringify(good)).not.toContain('PRIVATE KEY');
    expect(good.hosts).toEqual([
      { type: 'ip', value: '127.0.0.1' },
      { type: 'dns', value: 'localhost' },
    ]);
    expect((await readFile(good.key_file, 'utf8')).startsWith('-----BEGIN PRIVATE KEY-----')).toBe(true);
    const scratch = join(dir, 'forced');
    const first = await initTeamCa({ env: { LEXEC_HOME: scratch }, force: false });
    const forced = await initTeamCa({ env: { LEXEC_HOME: scratch }, force: true });
    expect(forced.replaced).toBe(true);
    expect(forced.serial_number).not.toBe(first.serial_number);
    expect(JSON.stringify(forced)).not.toContain('PRIVATE KEY');
    expect(await refusal(issueServerCertificate({ env: { LEXEC_HOME: join(dir, 'no-ca') }, hosts: ['127.0.0.1'] }))).toMatchObject({ code: 'tls_ca_missing' });
  });
});

describe('the ledger over HTTPS', () => {
  it('answers a client that trusts the team CA; the executor client and the ledger gateway too', async () => {
    const served = await ledgerWith(await loadServerTls({ certificate_file: good.certificate_file, key_file: good.key_file }), 'good');
    try {
      const client = createLedgerClient({ url: served.url, token: served.admin, caCertificate: caPem });
      expect(await client.listAgents()).toEqual([]);
      const gateway = createLedgerGateway({ endpoint: served.url, credential: served.admin, caCertificate: caPem });
      expect((await gateway.version()).product_version).toBeTypeOf('string');
      gateway.close();
      // A gateway given another CA does not use the ledger: unavailable, saying why.
      const untrusting = createLedgerGateway({ endpoint: served.url, credential: served.admin, caCertificate: otherCaPem });
      const refused = await untrusting.version().then(
        () => null,
        (error: unknown) => error,
      );
      untrusting.close();
      expect(refused).toBeInstanceOf(LedgerUnavailable);
      expect((refused as LedgerUnavailable).detail).toMatch(/not trusted: its certificate is not signed by the configured CA/);
      // The executor client trusts the same way: the ledger's /readyz is a 404 here, which proves TLS went through.
      const executor = createExecutorClient({ url: served.url, token: 'not-a-capability', caCertificate: caPem });
      const answered = await refusal(executor.readiness());
      expect(answered.code).not.toBe('executor_tls_untrusted');
      const distrusting = createExecutorClient({ url: served.url, token: 'not-a-capability', caCertificate: otherCaPem });
      expect(await refusal(distrusting.readiness())).toMatchObject({ code: 'executor_tls_untrusted', message: expect.stringMatching(/not signed by the configured CA/) as unknown });
    } finally {
      await stop(served);
    }
  });

  it('is refused by a client whose URL names a host the certificate does not (name mismatch)', async () => {
    const other = await issueServerCertificate({ env: { LEXEC_HOME: home }, hosts: ['ledger.team.example'] });
    const served = await ledgerWith(await loadServerTls({ certificate_file: other.certificate_file, key_file: other.key_file }), 'mismatch');
    try {
      const client = createLedgerClient({ url: served.url, token: served.admin, caCertificate: caPem });
      const error = await refusal(client.listAgents());
      expect(error.code).toBe('ledger_tls_untrusted');
      expect(error.message).toContain('does not name this host (name mismatch)');
      expect(error.message).not.toContain(served.admin);
    } finally {
      await stop(served);
    }
  });

  it('is refused by a client given another CA (not signed by it), and by one given none (the system roots)', async () => {
    const served = await ledgerWith(await loadServerTls({ certificate_file: good.certificate_file, key_file: good.key_file }), 'other-ca');
    try {
      const error = await refusal(createLedgerClient({ url: served.url, token: served.admin, caCertificate: otherCaPem }).listAgents());
      expect(error).toMatchObject({ code: 'ledger_tls_untrusted' });
      expect(error.message).toContain('not signed by the configured CA');
      expect((await refusal(createLedgerClient({ url: served.url, token: served.admin }).listAgents())).code).toBe('ledger_tls_untrusted');
    } finally {
      await stop(served);
    }
  });

  it('refuses an expired certificate: the server will not start with it, and a client will not trust a server that serves it', async () => {
    const expired = await issueServerCertificate({
      env: { LEXEC_HOME: home },
      hosts: ['127.0.0.2'],
      validity: { notBefore: new Date(Date.now() - 30 * DAY), notAfter: new Date(Date.now() - DAY) },
    });
    const atStart = await refusal(loadServerTls({ certificate_file: expired.certificate_file, key_file: expired.key_file }));
    expect(atStart.code).toBe('tls_certificate_expired');
    expect(atStart.issues.map((issue) => issue.path)).toEqual(['http.tls.certificate_file']);
    // Served anyway by a server that does not check (not lexec's): the client refuses it.
    const server = createHttpsServer({ cert: await readFile(expired.certificate_file, 'utf8'), key: await readFile(expired.key_file, 'utf8') }, (_request, response) => {
      response.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const error = await refusal(createLedgerClient({ url: `https://127.0.0.2:${port}`, token: 'lxa_x', caCertificate: caPem }).listAgents());
      expect(error.code).toBe('ledger_tls_untrusted');
      expect(error.message).toContain('its certificate has expired');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('will not start with a key that is not the certificate\'s, or a key file others can read; the errors name the field', async () => {
    const second = await issueServerCertificate({ env: { LEXEC_HOME: home }, hosts: ['127.0.0.3'] });
    const mismatch = await refusal(loadServerTls({ certificate_file: good.certificate_file, key_file: second.key_file }));
    expect(mismatch.code).toBe('tls_key_mismatch');
    expect(mismatch.issues.map((issue) => issue.path)).toEqual(['http.tls.key_file']);
    await chmod(second.key_file, 0o644);
    const open = await refusal(loadServerTls({ certificate_file: second.certificate_file, key_file: second.key_file }));
    expect(open.code).toBe('secret_file_not_private');
    expect(open.issues.map((issue) => issue.path)).toEqual(['http.tls.key_file']);
    const key = await readFile(second.key_file, 'utf8');
    for (const error of [mismatch, open]) expect(JSON.stringify({ message: error.message, issues: error.issues, next: error.nextStep })).not.toContain(key.split('\n')[1]);
    // A key where the certificate should be, and a certificate where the CA should be.
    expect((await refusal(loadServerTls({ certificate_file: good.key_file, key_file: good.key_file }))).code).toBe('tls_certificate_invalid');
    expect((await refusal(readCaFile(good.certificate_file, 'ledger.ca_file'))).code).toBe('tls_ca_file_invalid');
  });

  it('serves a new pair to new connections after SIGHUP; a bad pair on reload keeps the old one and says why, without key material', async () => {
    const live = join(dir, 'live');
    const pair = await issueServerCertificate({ env: { LEXEC_HOME: live }, hosts: ['127.0.0.1'] }).catch(async () => {
      await initTeamCa({ env: { LEXEC_HOME: live }, force: false });
      return issueServerCertificate({ env: { LEXEC_HOME: live }, hosts: ['127.0.0.1'] });
    });
    const liveCa = await readCaFile(join(live, 'tls', 'ca', 'ca.pem'), 'ca_file');
    const config = { certificate_file: pair.certificate_file, key_file: pair.key_file };
    const served = await ledgerWith(await loadServerTls(config), 'reload');
    const events: Record<string, unknown>[] = [];
    const waitFor = async (name: string, count: number) => {
      while (events.filter((event) => event.event === name).length < count) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    const stopFollowing = followTlsReload(served.ledger.app.server as unknown as import('node:tls').Server, config, {
      info: (event) => void events.push(event),
      warn: (event) => void events.push(event),
    });
    try {
      const port = Number(new URL(served.url).port);
      expect(await servedSerial(port, liveCa)).toBe(pair.serial_number);
      // A renewal: the same paths, a new pair.
      const renewed = await issueServerCertificate({ env: { LEXEC_HOME: live }, hosts: ['127.0.0.1'] });
      expect(renewed.certificate_file).toBe(pair.certificate_file);
      process.emit('SIGHUP', 'SIGHUP');
      await waitFor('tls_reloaded', 1);
      expect(await servedSerial(port, liveCa)).toBe(renewed.serial_number);
      expect(await createLedgerClient({ url: served.url, token: served.admin, caCertificate: liveCa }).listAgents()).toEqual([]);

      // A key that is not the certificate's: refused, the renewed pair still served.
      const stray = await issueServerCertificate({ env: { LEXEC_HOME: live }, hosts: ['127.0.0.9'] });
      const strayKey = await readFile(stray.key_file, 'utf8');
      await writeFile(pair.key_file, strayKey, { mode: 0o600 });
      process.emit('SIGHUP', 'SIGHUP');
      await waitFor('tls_reload_refused', 1);
      expect(events.find((event) => event.event === 'tls_reload_refused')).toMatchObject({ code: 'tls_key_mismatch', fields: ['http.tls.key_file'] });
      expect(await servedSerial(port, liveCa)).toBe(renewed.serial_number);
      const everything = JSON.stringify(events) + served.logs.join('');
      expect(everything).not.toContain('PRIVATE KEY');
      expect(everything).not.toContain(strayKey.split('\n')[1]);
      expect(everything).not.toContain(served.admin);
    } finally {
      stopFollowing();
      await stop(served);
    }
  });
});
