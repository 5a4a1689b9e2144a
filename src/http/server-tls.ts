import { createPrivateKey, X509Certificate } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Server as TlsServer } from 'node:tls';
import type { ServerTlsConfig } from '../config/schema-parts.js';
import { readPrivateFile } from '../credentials/private-file.js';
import { errorCode, UserError } from '../errors.js';

/*
 * A lexec server's certificate and key (`http.tls`, docs/deployment.md "Certificates and TLS"):
 * read and checked at start, read again on SIGHUP. Errors name the configuration field and the
 * file, never what the files hold.
 */

/** Largest certificate file read (a chain of a few certificates fits many times). */
const MAX_CERTIFICATE_BYTES = 64 * 1024;

/** What a server is given to serve HTTPS with: PEM text, and what its log may say about it. */
export interface ServerTlsMaterial {
  readonly cert: string;
  readonly key: string;
  /** The leaf certificate's serial number (hex, as Node prints it): not secret. */
  readonly serialNumber: string;
  readonly validTo: string;
}

function refused(code: string, path: string, message: string, nextStep: string): UserError {
  return new UserError(code, message, { nextStep, issues: [{ path, message }] });
}

async function readCertificateFile(file: string, path: string): Promise<string> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = errorCode(error);
    throw refused('tls_certificate_unreadable', path, `the certificate file ${file} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? 'error'})`}`, 'Point it at the PEM certificate `lexec stack tls issue` wrote.');
  }
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > MAX_CERTIFICATE_BYTES) {
      throw refused('tls_certificate_unreadable', path, `the certificate file ${file} is not a PEM certificate file`, 'Point it at the PEM certificate `lexec stack tls issue` wrote.');
    }
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Reads and checks the certificate and key `config` names (`at`: the configuration path of the
 * `tls` object, for the field paths of errors): the certificate parses and is valid now, the key
 * file is private (0600) and its key is the certificate's.
 */
export async function loadServerTls(config: ServerTlsConfig, at = 'http.tls', now: Date = new Date()): Promise<ServerTlsMaterial> {
  const certPath = `${at}.certificate_file`;
  const keyPath = `${at}.key_file`;
  const cert = await readCertificateFile(config.certificate_file, certPath);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    throw refused('tls_certificate_invalid', certPath, `the certificate file ${config.certificate_file} does not hold a PEM certificate`, 'Point it at the PEM certificate `lexec stack tls issue` wrote.');
  }
  if (certificate.ca) {
    throw refused('tls_certificate_invalid', certPath, `the certificate in ${config.certificate_file} is a CA certificate, not a server's`, 'Issue a server certificate with `lexec stack tls issue --host <name>`.');
  }
  if (new Date(certificate.validTo).getTime() <= now.getTime()) {
    throw refused('tls_certificate_expired', certPath, `the certificate in ${config.certificate_file} expired on ${new Date(certificate.validTo).toISOString()}`, 'Issue a new one with `lexec stack tls issue --host <name>`.');
  }
  if (new Date(certificate.validFrom).getTime() > now.getTime()) {
    throw refused('tls_certificate_not_yet_valid', certPath, `the certificate in ${config.certificate_file} is valid only from ${new Date(certificate.validFrom).toISOString()}`, 'Check this host\'s clock, or issue a new certificate.');
  }
  let key: string;
  try {
    key = await readPrivateFile(config.key_file, 'TLS private key');
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    throw new UserError(error.code, error.message, { nextStep: error.nextStep, issues: [{ path: keyPath, message: error.message }] });
  }
  let matches: boolean;
  try {
    matches = certificate.checkPrivateKey(createPrivateKey(key));
  } catch {
    throw refused('tls_key_invalid', keyPath, `the key file ${config.key_file} does not hold a PEM private key`, 'Point it at the private key `lexec stack tls issue` wrote beside the certificate.');
  }
  if (!matches) {
    throw refused('tls_key_mismatch', keyPath, `the key in ${config.key_file} is not the key of the certificate in ${config.certificate_file}`, 'Point key_file at the key issued with that certificate (`lexec stack tls issue` writes them side by side).');
  }
  return { cert, key, serialNumber: certificate.serialNumber, validTo: new Date(certificate.validTo).toISOString() };
}

/** What `followTlsReload` logs: events with the field paths and codes, never file contents. */
export interface TlsReloadLog {
  info(event: Record<string, unknown>): void;
  warn(event: Record<string, unknown>): void;
}

/**
 * On each SIGHUP, reads the certificate and key again and serves them to new connections
 * (`setSecureContext`); connections already open keep theirs. A pair that does not load keeps
 * the one served and logs why. Returns the function that stops following.
 */
export function followTlsReload(server: TlsServer, config: ServerTlsConfig, log: TlsReloadLog, at = 'http.tls'): () => void {
  let running: Promise<void> = Promise.resolve();
  const reload = async () => {
    try {
      const material = await loadServerTls(config, at);
      server.setSecureContext({ cert: material.cert, key: material.key });
      log.info({ event: 'tls_reloaded', serial_number: material.serialNumber, valid_to: material.validTo });
    } catch (error) {
      const refusal = error instanceof UserError ? error : null;
      log.warn({
        event: 'tls_reload_refused',
        code: refusal?.code ?? 'tls_reload_failed',
        fields: refusal?.issues.map((issue) => issue.path) ?? [],
        message: refusal?.message ?? 'the certificate and key could not be served',
        kept: 'the certificate served before',
      });
    }
  };
  const onSignal = () => {
    // One reload at a time, in the order the signals came.
    running = running.then(reload);
  };
  process.on('SIGHUP', onSignal);
  return () => {
    process.off('SIGHUP', onSignal);
  };
}
