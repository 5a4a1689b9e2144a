import { jsonSuccess } from '../cli/json-envelope.js';
import type { Output } from '../terminal/output.js';
import type { ConsoleAddress, ConsoleStopped, OpenFailed } from './serve-console.js';

/*
 * What `lexec stack console` prints while it serves: the address and the one-time login link on
 * stdout (under --json one document each), the rest on stderr.
 */

function loginLine(loginUrl: string, output: Output): void {
  output.line(`Log in (works once, within 10 minutes): ${loginUrl}`);
}

export function renderConsoleReady(address: ConsoleAddress, pid: number, output: Output): void {
  if (output.jsonMode) output.jsonLine(jsonSuccess('stack console', address));
  else {
    output.line(`Console of profile "${address.profile}": ${address.address}`);
    loginLine(address.login_url, output);
  }
  output.diagnostics.line(output.diagnostics.style.dim(`Serving until Ctrl-C; \`kill -USR1 ${String(pid)}\` prints a new login link.`));
}

export function renderNewLogin(loginUrl: string, output: Output): void {
  if (output.jsonMode) output.jsonLine(jsonSuccess('stack console', { login_url: loginUrl }));
  else loginLine(loginUrl, output);
}

export function renderOpenFailed(failure: OpenFailed, output: Output): void {
  const why = failure.reason === 'failed' ? `${failure.opener} failed` : `${failure.opener} is missing`;
  output.diagnostics.line(output.diagnostics.style.warn(`Warning: Could not open a browser (${why}); open the login link yourself.`));
}

export function renderConsoleStopped(result: ConsoleStopped, output: Output): void {
  output.diagnostics.line(output.diagnostics.style.dim(`Console at ${result.address} stopped.`));
}
