import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/*
 * The console's logins and sessions (docs/console.md "Security"), in memory only: nothing of them
 * is ever written to disk or to a log. A login token is 256 random bits, printed by
 * `lexec stack console`, good for exactly one exchange within LOGIN_TOKEN_LIFETIME_MS; a new one
 * replaces an unused one. The exchange yields a session secret (256 random bits) that the page
 * keeps in its tab's sessionStorage and sends in `x-lexec-session` — never a cookie: cookies are
 * not scoped to a port, so every listener on 127.0.0.1 would receive one. A session ends on
 * sign-out, after SESSION_IDLE_MS without a request, SESSION_LIFETIME_MS after the login, or
 * when the console stops. Time comes from the injected clock (tests move it by hand).
 */

export const SESSION_HEADER = 'x-lexec-session';
export const LOGIN_TOKEN_LIFETIME_MS = 10 * 60_000;
export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_LIFETIME_MS = 12 * 60 * 60_000;

export interface ConsoleClock {
  now(): number;
}

export const systemClock: ConsoleClock = { now: () => Date.now() };

interface SessionTimes {
  readonly startedAt: number;
  lastUsedAt: number;
  /** Who signed in: the named approver this session decides as. */
  readonly approverName: string;
}

/** A live session, as a route sees it. */
export interface ConsoleSession {
  readonly approverName: string;
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
const random = () => randomBytes(32).toString('base64url');
const SECRET = /^[A-Za-z0-9_-]{43}$/;

export type ConsoleSessions = ReturnType<typeof createConsoleSessions>;

export function createConsoleSessions(options: { readonly clock: ConsoleClock }) {
  const { clock } = options;
  let login: { readonly digest: Buffer; readonly expiresAt: number } | null = null;
  // Keyed by the digest of the session secret: a heap dump shows no usable secret.
  const sessions = new Map<string, SessionTimes>();
  const keyOf = (secret: string) => digest(secret).toString('hex');
  const expired = (times: SessionTimes, now: number) => now - times.lastUsedAt > SESSION_IDLE_MS || now - times.startedAt > SESSION_LIFETIME_MS;

  return {
    /** A new one-time login token, good for LOGIN_TOKEN_LIFETIME_MS; an earlier unused one stops working. */
    issueLoginToken(): string {
      const token = random();
      login = { digest: digest(token), expiresAt: clock.now() + LOGIN_TOKEN_LIFETIME_MS };
      return token;
    },

    /** Exchanges the current, unexpired login token for a new session secret of `approverName`, once; null for anything else. */
    login(token: unknown, approverName: string): string | null {
      if (typeof token !== 'string' || !SECRET.test(token) || login === null) return null;
      if (!timingSafeEqual(digest(token), login.digest)) return null;
      const { expiresAt } = login;
      login = null;
      const now = clock.now();
      if (now > expiresAt) return null;
      const secret = random();
      sessions.set(keyOf(secret), { startedAt: now, lastUsedAt: now, approverName });
      return secret;
    },

    /**
     * The live session a secret names, or null; a hit counts as use (the idle lifetime starts
     * again). Expired sessions are dropped on the way.
     */
    use(secret: string | undefined): ConsoleSession | null {
      const now = clock.now();
      for (const [key, times] of sessions) if (expired(times, now)) sessions.delete(key);
      if (secret === undefined || !SECRET.test(secret)) return null;
      const times = sessions.get(keyOf(secret));
      if (times === undefined) return null;
      times.lastUsedAt = now;
      return { approverName: times.approverName };
    },

    logout(secret: string): void {
      sessions.delete(keyOf(secret));
    },

    /** Live sessions (for tests and diagnostics; never their secrets). */
    count(): number {
      const now = clock.now();
      return [...sessions.values()].filter((times) => !expired(times, now)).length;
    },
  };
}
