import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { errorCode, UserError } from '../errors.js';
import { buildConsoleApp } from './console-app.js';
import { loadConsoleAssets } from './console-assets.js';
import { createConsoleSessions, systemClock, type ConsoleClock, type ConsoleSessions } from './console-sessions.js';
import { createConsoleStack } from './console-stack.js';

/*
 * The console's one composition root (docs/console.md): `lexec stack console` and the tests build
 * the process with it, so what is tested is what runs. It binds 127.0.0.1 only — there is no
 * option to bind anything else: the console acts with the stack's capabilities.
 */

export interface ConsoleProcessOptions {
  readonly env: NodeJS.ProcessEnv;
  /**
   * The profile, resolved once by the caller (`--profile` or the selection at start): every
   * request acts on this one, whatever `lexec stack select` chooses later.
   */
  readonly profile: string;
  readonly logger: FastifyBaseLogger;
  /** Session and login-token lifetimes run on it (tests pass a fake one). */
  readonly clock?: ConsoleClock;
}

export interface ConsoleProcess {
  readonly app: FastifyInstance;
  readonly sessions: ConsoleSessions;
  /** Listens on 127.0.0.1:`port` (0: any free port); returns the console's origin. */
  listen(port: number): Promise<string>;
  /** A new one-time login link, good for 10 minutes (an unused earlier one stops working). */
  loginUrl(): string;
  close(): Promise<void>;
}

export const CONSOLE_HOST = '127.0.0.1';

export async function composeConsole(options: ConsoleProcessOptions): Promise<ConsoleProcess> {
  const sessions = createConsoleSessions({ clock: options.clock ?? systemClock });
  const stack = createConsoleStack({ env: options.env, profile: options.profile });
  let origin: string | null = null;
  const app = buildConsoleApp({ stack, sessions, assets: await loadConsoleAssets(), logger: options.logger, profile: options.profile, origin: () => origin });
  return {
    app,
    sessions,
    async listen(port) {
      try {
        await app.listen({ host: CONSOLE_HOST, port });
      } catch (error) {
        throw new UserError('listen_failed', `The console cannot listen on ${CONSOLE_HOST}:${port} (${errorCode(error) ?? 'error'}).`, {
          nextStep: errorCode(error) === 'EADDRINUSE' ? 'Another program (or another console) uses that port: pass --port with a free one, or 0 for any free port.' : 'Check --port.',
        });
      }
      origin = `http://${CONSOLE_HOST}:${(app.server.address() as AddressInfo).port}`;
      return origin;
    },
    loginUrl() {
      if (origin === null) throw new Error('the console does not listen yet');
      // In the fragment: a browser never sends it to a server, in a Referer or in a request line.
      return `${origin}/login#${sessions.issueLoginToken()}`;
    },
    close: async () => {
      stack.live.close();
      await app.close();
    },
  };
}
