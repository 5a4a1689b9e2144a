import type { z } from 'zod';
import type { CredentialKind } from '../../credentials/capability.js';
import type { SpendGrouping } from '../summarise-spend.js';
import type { RequestContext } from './ledger-client-errors.js';

/* What a ledger client call is made of (ledger-client.ts sends it; ledger-alerts-client.ts builds some). */

/** What `GET /reports/spend` is asked for: a grouping, and a range as dates or ISO times (the ledger reads dates in its time zone). */
export interface SpendReportRequest {
  readonly by: SpendGrouping;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  /** Each group's amounts per agent or target too. */
  readonly split?: 'agent' | 'target' | undefined;
}

/** `?a=1&b=2` of the parameters given (an undefined one is left out), or '' when none is. */
export function queryString(parameters: Readonly<Record<string, string | number | undefined>>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) query.set(name, String(value));
  return query.size === 0 ? '' : `?${query.toString()}`;
}

export interface Call<S extends z.ZodType> {
  readonly method: 'GET' | 'POST' | 'PUT';
  readonly path: string;
  readonly body?: unknown;
  /** Request headers beyond the credential and content negotiation (a precondition). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly needs: readonly CredentialKind[];
  readonly subject: RequestContext['subject'];
  readonly schema: S;
  /** Longer than the client's timeout by this much (a long-poll's wait). */
  readonly extraTimeoutMs?: number;
  /** The caller gives up (a follow stopped by Ctrl-C). */
  readonly signal?: AbortSignal | undefined;
}


/** Sends one call and answers its parsed answer, or throws the ledger's refusal as a UserError (ledger-client.ts). */
export type Send = <S extends z.ZodType>(call: Call<S>) => Promise<z.output<S>>;
