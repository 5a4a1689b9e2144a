import { tlsFailure } from '../../http/tls-trust.js';
import { z } from 'zod';
import { UserError, type FieldIssue } from '../../errors.js';

/*
 * The executor client's refusals (executor-client.ts): every error answer, failed connection and
 * unexpected answer as a `UserError` with a stable `executor_*` code. Codes, reasons and field
 * paths from the server are shown only if they are plain tokens; values never appear.
 */

export const SAFE_CODE = /^[A-Za-z0-9_.:-]{1,80}$/;
const SAFE_FIELD = /^[A-Za-z0-9_.[\]-]{1,160}$/;

export const errorBodySchema = z.object({
  error: z.object({ code: z.string(), reason_code: z.string().optional(), fields: z.array(z.string()).optional(), retryable: z.boolean().optional() }),
});

function stackStep(url: string): string {
  return `Check the executor at ${url}: \`lexec stack status\` shows the stack's components and \`lexec stack logs --component executor\` its log.`;
}

/** Maps an executor error answer to a `UserError`; field paths become issues, values never appear. */
export function executorResponseError(url: string, status: number, body: z.output<typeof errorBodySchema>['error'] | null): UserError {
  const code = body !== null && SAFE_CODE.test(body.code) ? body.code : 'unknown';
  const reason = body?.reason_code !== undefined && SAFE_CODE.test(body.reason_code) ? body.reason_code : undefined;
  const said = `${status} ${code}${reason === undefined ? '' : `: ${reason}`}`;
  const issues: FieldIssue[] = (body?.fields ?? []).filter((field) => SAFE_FIELD.test(field)).map((path) => ({ path, message: `refused by the executor (${reason ?? code})` }));
  if (status === 401) {
    return new UserError('executor_unauthorized', `The executor at ${url} refused the caller capability (${said}).`, {
      nextStep: 'The capability was revoked, or is not this executor\'s: `lexec executor credentials list --config <executor configuration>` shows the executor\'s credentials; for a stack, `lexec stack credentials rotate --role caller` gives it a new one.',
    });
  }
  if (status === 400) {
    return new UserError('executor_invalid_request', `The executor at ${url} refused the execution request (${said}).`, {
      nextStep: 'Correct the fields listed; `lexec stack catalog` shows the targets, sizes and counts this stack offers.',
      issues,
    });
  }
  if (status === 404) return new UserError('executor_not_found', `The executor at ${url} does not know that execution (${said}).`, { nextStep: stackStep(url) });
  if (status === 409 || status === 422) {
    return new UserError(status === 409 ? 'executor_conflict' : 'executor_refused', `The executor at ${url} refused the execution (${said}).`, {
      nextStep: 'The authorization cannot be used for this request as it stands; `lexec ledger authorizations show <token_id>` shows where it is.',
      issues,
    });
  }
  if (status === 503 && code === 'not_ready') {
    return new UserError('executor_not_ready', `The executor at ${url} is not admitting new executions right now (${said}).`, { nextStep: stackStep(url) });
  }
  if (status >= 500) return new UserError('executor_server_error', `The executor at ${url} failed to answer (${said}).`, { nextStep: stackStep(url) });
  return badResponse(url, `an unexpected status ${status}`);
}

export function badResponse(url: string, what: string): UserError {
  return new UserError('executor_bad_response', `The service at ${url} answered with ${what}; it does not look like a lexec executor of this version.`, {
    nextStep: stackStep(url),
  });
}

export function unreachable(url: string, error: unknown, timeoutMs: number): UserError {
  // Refused before anything was sent: the server did not prove it is the executor.
  const tls = tlsFailure(error);
  if (tls !== null) {
    return new UserError('executor_tls_untrusted', `The executor at ${url} was not trusted: ${tls.why} (${tls.code}); nothing was sent.`, {
      nextStep: 'Check the URL\'s host against the certificate `lexec stack tls issue --host` made for the executor, and that the CA file is the team\'s ca.pem; reissue the executor\'s certificate if it expired.',
    });
  }
  const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === 'string' && SAFE_CODE.test(cause.code) ? cause.code : 'connection failed';
  return new UserError('executor_unreachable', `The executor at ${url} is unreachable (${timedOut ? `no answer within ${timeoutMs / 1000} s` : code}).`, {
    nextStep: stackStep(url),
  });
}
