import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { readPrivateFile, privateFileIdentity, writePrivateFile } from '../../credentials/private-file.js';
import { UsageError, UserError } from '../../errors.js';
import { lexecHome } from '../home/stack-home.js';

/*
 * The team's private CA and the server certificates it signs (`lexec stack tls init|issue`,
 * docs/deployment.md "Certificates and TLS"). X.509 is built by @peculiar/x509 over Node's
 * WebCrypto (docs/decisions.md): ECDSA P-256 keys, SHA-256 signatures. Keys are written 0600 in
 * 0700 directories and never printed; results name files only.
 *
 *   <home>/tls/ca/ca.pem, ca.key                       the team CA
 *   <home>/tls/servers/<first host>/server.pem, server.key  each issued server pair
 */

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;
/** A CA lives ten years; a server certificate 397 days (the longest browsers accept). */
const CA_VALIDITY_DAYS = 3650;
export const SERVER_VALIDITY_DAYS = 397;
/** Clock skew between hosts: a new certificate is valid from a minute ago. */
const BACKDATE_MS = 60_000;

export interface TlsPaths {
  readonly dir: string;
  readonly caCertificate: string;
  readonly caKey: string;
  readonly serversDir: string;
}

export function tlsPaths(env: NodeJS.ProcessEnv): TlsPaths {
  const dir = join(lexecHome(env), 'tls');
  return { dir, caCertificate: join(dir, 'ca', 'ca.pem'), caKey: join(dir, 'ca', 'ca.key'), serversDir: join(dir, 'servers') };
}

export interface TlsInitResult {
  readonly ca_certificate_file: string;
  readonly ca_key_file: string;
  readonly subject: string;
  readonly serial_number: string;
  readonly valid_to: string;
  /** Whether an earlier CA was replaced (--force). */
  readonly replaced: boolean;
}

export interface TlsIssueResult {
  readonly certificate_file: string;
  readonly key_file: string;
  readonly ca_certificate_file: string;
  readonly hosts: readonly { readonly type: 'dns' | 'ip'; readonly value: string }[];
  readonly serial_number: string;
  readonly valid_from: string;
  readonly valid_to: string;
}

function serialNumber(): string {
  const bytes = randomBytes(16);
  // Positive (RFC 5280 §4.1.2.2) and of full length.
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40;
  return bytes.toString('hex');
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  return `${x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY')}\n`;
}

/** `lexec stack tls init`: makes the team CA. An existing one is kept unless `force`. */
export async function initTeamCa(request: { env: NodeJS.ProcessEnv; force: boolean; now?: Date }): Promise<TlsInitResult> {
  const paths = tlsPaths(request.env);
  const existing = (await privateFileIdentity(paths.caCertificate)) !== null || (await privateFileIdentity(paths.caKey)) !== null;
  if (existing && !request.force) {
    throw new UserError('tls_ca_exists', `A team CA exists already at ${paths.caCertificate}.`, {
      nextStep: 'Issue server certificates with it (`lexec stack tls issue --host <name>`). Replacing it (--force) makes every certificate it signed untrusted by clients given the new ca.pem.',
    });
  }
  const now = request.now ?? new Date();
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const name = `CN=lexec team CA ${randomBytes(4).toString('hex')}`;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(now.getTime() + CA_VALIDITY_DAYS * DAY_MS),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  // The key first: a certificate without its key would look like a usable CA.
  await writePrivateFile(paths.caKey, await privateKeyPem(keys.privateKey));
  await writePrivateFile(paths.caCertificate, certificate.toString('pem') + '\n');
  const parsed = new X509Certificate(certificate.toString('pem'));
  return {
    ca_certificate_file: paths.caCertificate,
    ca_key_file: paths.caKey,
    subject: name,
    serial_number: parsed.serialNumber,
    valid_to: new Date(parsed.validTo).toISOString(),
    replaced: existing,
  };
}

const DNS_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

/** A `--host`: an IP address (v4 or v6) or a DNS name of letters, digits and hyphens. */
export function parseTlsHost(raw: string): { type: 'dns' | 'ip'; value: string } {
  const bare = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
  if (isIP(bare) !== 0) return { type: 'ip', value: bare };
  const name = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  if (name.length >= 1 && name.length <= 253 && name.split('.').every((label) => DNS_LABEL.test(label)) && !/^[0-9.]+$/.test(name)) {
    return { type: 'dns', value: name.toLowerCase() };
  }
  throw new UsageError('tls_host_invalid', '--host must be a DNS name (letters, digits, hyphens and dots, e.g. ledger.team.internal) or an IP address (e.g. 10.0.0.5, ::1).', {
    nextStep: 'Pass the name or address clients use in the server\'s URL, once per --host.',
  });
}

/** The directory name of a pair: its first host, with what a file name cannot hold replaced. */
function pairDirectory(host: string): string {
  return host.replace(/[^A-Za-z0-9.-]/g, '_');
}

export interface TlsIssueRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly hosts: readonly string[];
  readonly now?: Date;
  /** Internal (tests): the validity, e.g. one in the past to make an expired certificate. */
  readonly validity?: { readonly notBefore: Date; readonly notAfter: Date };
}

/**
 * `lexec stack tls issue --host …`: a server certificate for the hosts (one SAN each) and its
 * key, signed by the team CA; written under the CA's directory, replacing an earlier pair for the
 * same first host (a renewal: the server reads the new pair on SIGHUP).
 */
export async function issueServerCertificate(request: TlsIssueRequest): Promise<TlsIssueResult> {
  if (request.hosts.length === 0) {
    throw new UsageError('tls_host_missing', 'Name at least one --host: the DNS name or IP address clients use to reach the server.', {
      nextStep: 'For example: lexec stack tls issue --host ledger.team.internal --host 10.0.0.5',
    });
  }
  const hosts = request.hosts.map(parseTlsHost);
  const unique = hosts.filter((host, index) => hosts.findIndex((other) => other.type === host.type && other.value === host.value) === index);
  const paths = tlsPaths(request.env);
  if ((await privateFileIdentity(paths.caCertificate)) === null) {
    throw new UserError('tls_ca_missing', `There is no team CA at ${paths.caCertificate}.`, { nextStep: 'Make one first: `lexec stack tls init`.' });
  }
  const caPem = await readPrivateFile(paths.caCertificate, 'team CA certificate');
  const caKeyPem = await readPrivateFile(paths.caKey, 'team CA key');
  const ca = new x509.X509Certificate(caPem);
  const caKey = await webcrypto.subtle.importKey('pkcs8', x509.PemConverter.decodeFirst(caKeyPem), ALGORITHM, false, ['sign']);
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const now = request.now ?? new Date();
  const notBefore = request.validity?.notBefore ?? new Date(now.getTime() - BACKDATE_MS);
  const notAfter = request.validity?.notAfter ?? new Date(now.getTime() + SERVER_VALIDITY_DAYS * DAY_MS);
  const first = unique[0] ?? hosts[0];
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${first?.value ?? 'server'}`,
    issuer: ca.subject,
    notBefore,
    notAfter,
    signingKey: caKey,
    publicKey: keys.publicKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(unique.map((host) => ({ type: host.type, value: host.value }))),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const dir = join(paths.serversDir, pairDirectory(first?.value ?? 'server'));
  const certificateFile = join(dir, 'server.pem');
  const keyFile = join(dir, 'server.key');
  // The key first: a server reloading between the two writes sees a pair that does not match and keeps its old one.
  await writePrivateFile(keyFile, await privateKeyPem(keys.privateKey));
  await writePrivateFile(certificateFile, certificate.toString('pem') + '\n');
  const parsed = new X509Certificate(certificate.toString('pem'));
  return {
    certificate_file: certificateFile,
    key_file: keyFile,
    ca_certificate_file: paths.caCertificate,
    hosts: unique,
    serial_number: parsed.serialNumber,
    valid_from: new Date(parsed.validFrom).toISOString(),
    valid_to: new Date(parsed.validTo).toISOString(),
  };
}
