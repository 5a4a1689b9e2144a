import { execa } from 'execa';
import pino from 'pino';
import { activeStack } from '../launcher/handoff/server-target.js';
import { composeConsole } from './compose-console.js';

/*
 * `lexec stack console` (docs/console.md): checks that the profile's stack runs (its handoff),
 * serves the console on 127.0.0.1 until SIGINT or SIGTERM, and reports where — at once, through
 * `onReady` — with a one-time login link. SIGHUP prints a new link (the earlier one, if unused,
 * stops working). `--open` hands the link to the platform's opener; failing that is a warning.
 */

export interface ConsoleServeRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profile: string | undefined;
  readonly port: number;
  readonly open: boolean;
  /** Ends the serving (the command wires SIGINT and SIGTERM to it). */
  readonly signal: AbortSignal;
  /** Called once the console listens. */
  onReady(address: ConsoleAddress): void;
  /** Called with each new login link (SIGHUP). */
  onNewLogin(loginUrl: string): void;
  /** Diagnostics for stderr. */
  warn(text: string): void;
}

export interface ConsoleAddress {
  readonly profile: string;
  readonly address: string;
  /** One-time: the first browser to open it gets the session. */
  readonly login_url: string;
}

export interface ConsoleStopped {
  readonly profile: string;
  readonly address: string;
}

function opener(): string {
  if (process.platform === 'darwin') return 'open';
  if (process.platform === 'win32') return 'explorer';
  return 'xdg-open';
}

export async function serveConsole(request: ConsoleServeRequest): Promise<ConsoleStopped> {
  const stack = await activeStack(request.env, request.profile);
  // Warnings and errors only: a line per poll would bury the terminal. Never a URL or a cookie.
  const logger = pino({ base: { service: 'console' }, level: 'warn', timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
  const served = await composeConsole({ env: request.env, profile: request.profile, logger });
  const address = await served.listen(request.port);
  const profile = stack.paths.name;
  const onHangup = () => {
    request.onNewLogin(served.loginUrl());
  };
  try {
    const loginUrl = served.loginUrl();
    request.onReady({ profile, address, login_url: loginUrl });
    if (request.open) {
      await execa(opener(), [loginUrl], { stdio: 'ignore', detached: true, reject: false, timeout: 10_000 }).then(
        (result) => {
          if (result.failed) request.warn(`Could not open a browser (${opener()} failed); open the login link yourself.`);
        },
        () => {
          request.warn(`Could not open a browser (${opener()} is missing); open the login link yourself.`);
        },
      );
    }
    process.on('SIGHUP', onHangup);
    if (!request.signal.aborted) await new Promise((resolve) => { request.signal.addEventListener('abort', resolve, { once: true }); });
  } finally {
    process.off('SIGHUP', onHangup);
    await served.close();
  }
  return { profile, address };
}
