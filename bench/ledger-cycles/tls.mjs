// A team CA and one server certificate for a benchmark's ledger (issue 29), made with the
// project's own code — dist/launcher/tls/team-ca.js, what `lexec stack tls init` and
// `lexec stack tls issue --host …` run — in a LEXEC_HOME of its own inside the benchmark's
// temporary directory (removed with it). Keys are written 0600 there and never printed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fail } from '../lib/harness.mjs';

/**
 * Makes the CA and a server pair whose subject alternative names are `hosts` (the addresses
 * clients put in the URL). Answers the files and the CA's PEM text (what a client trusts).
 */
export async function benchTls(root, workDir, hosts) {
  const module = join(root, 'dist', 'launcher', 'tls', 'team-ca.js');
  if (!existsSync(module)) fail(`${module} missing; run \`npm run build\` first.`);
  const { initTeamCa, issueServerCertificate } = await import(pathToFileURL(module).href);
  const env = { LEXEC_HOME: join(workDir, 'lexec-home') };
  const ca = await initTeamCa({ env, force: false });
  const issued = await issueServerCertificate({ env, hosts });
  return {
    caFile: ca.ca_certificate_file,
    caPem: readFileSync(ca.ca_certificate_file, 'utf8'),
    certificateFile: issued.certificate_file,
    keyFile: issued.key_file,
  };
}
