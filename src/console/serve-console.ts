import { execa } from 'execa';
import pino from 'pino';
import { activeStack } from '../stack-client/locate-stack.js';
import { composeConsole } from './compose-console.js';
import type { ConsoleClock } from './console-sessions.js';

/*
 * `lexec stack console` (docs/console.md): resolves the profile once (`--profile`, else the
 * selection now) and checks that its stack runs (its handoff), serves the console for that
 * profile on 127.0.0.1 until the signal ends it, and reports where — at once, through `onReady` —
 * with a one-time login link. SIGUSR1 prints a new link (the earlier one, if unused, stops
 * working). `--open` hands the link to the platform's opener; failing that is a warning.
 */

export interface ConsoleServeRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profile: string | undefined;
  readonly port: number;
  readonly open: boolean;
  /** Ends the serving (the command wires SIGINT, SIGTERM and SIGHUP to it). */
  readonly signal: AbortSignal;
  /** Session and login-token lifetimes (default: the system clock). */
  readonly clock?: ConsoleClock;
  /** Called once the console listens. */
  onReady(address: ConsoleAddress): void;
  /** Called with each new login link (SIGUSR1). */
  onNewLogin(loginUrl: string): void;
  /** The platform's browser opener (--open) failed or is missing: the operator opens the link. */
  onOpenFailed(failure: OpenFailed): void;
}

export interface OpenFailed {
  /** The opener run: xdg-open, open or explorer. */
  readonly opener: string;
  readonly reason: 'failed' | 'missing';
}

export interface ConsoleAddress {
  readonly profile: string;
  readonly address: string;
  /** One-time, for 10 minutes: the first browser tab to open it gets the session. */
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
  // Resolved once: a later `lexec stack select` must not move a running console to another
  // profile's stack (it would list and approve that profile's spend under this one's name).
  const profile = (await activeStack(request.env, request.profile)).paths.name;
  // Warnings and errors only: a line per poll would bury the terminal. Never a token or a secret.
  const logger = pino({ base: { service: 'console' }, level: 'warn', timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
  const served = await composeConsole({ env: request.env, profile, logger, ...(request.clock === undefined ? {} : { clock: request.clock }) });
  const address = await served.listen(request.port);
  // A listener also keeps Node.js from its default for SIGUSR1 (starting the inspector).
  const onNewLink = () => {
    request.onNewLogin(served.loginUrl());
  };
  process.on('SIGUSR1', onNewLink);
  try {
    const loginUrl = served.loginUrl();
    request.onReady({ profile, address, login_url: loginUrl });
    if (request.open) {
      await execa(opener(), [loginUrl], { stdio: 'ignore', detached: true, reject: false, timeout: 10_000 }).then(
        (result) => {
          if (result.failed) request.onOpenFailed({ opener: opener(), reason: 'failed' });
        },
        () => {
          request.onOpenFailed({ opener: opener(), reason: 'missing' });
        },
      );
    }
    if (!request.signal.aborted) await new Promise((resolve) => { request.signal.addEventListener('abort', resolve, { once: true }); });
  } finally {
    process.off('SIGUSR1', onNewLink);
    await served.close();
  }
  return { profile, address };
}
