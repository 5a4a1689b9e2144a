import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/*
 * The console's logins and sessions (docs/console.md "Security"), in memory only: nothing of them
 * is ever written to disk or to a log. A login token is 256 random bits, printed once by
 * `lexec stack console` and good for exactly one exchange; the exchange yields a session (a
 * random id sent back as an HttpOnly, SameSite=Strict cookie) with its own CSRF token. A new
 * login token replaces an unused one. Sessions end when the console stops.
 */

export const SESSION_COOKIE = 'lexec_console_session';

export interface ConsoleSession {
  readonly id: string;
  /** Sent back by the page's script in `x-lexec-csrf` on every state-changing request. */
  readonly csrfToken: string;
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
const random = () => randomBytes(32).toString('base64url');
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** Compares two secrets in constant time (by their digests, so lengths never leak). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export type ConsoleSessions = ReturnType<typeof createConsoleSessions>;

export function createConsoleSessions() {
  let loginDigest: Buffer | null = null;
  // Keyed by the digest of the session id: a heap dump shows no usable cookie.
  const sessions = new Map<string, ConsoleSession>();

  return {
    /** A new one-time login token; an earlier unused one stops working. */
    issueLoginToken(): string {
      const token = random();
      loginDigest = digest(token);
      return token;
    },

    /** Exchanges the login token for a new session, once; null for anything else. */
    login(token: unknown): ConsoleSession | null {
      if (typeof token !== 'string' || !TOKEN.test(token) || loginDigest === null) return null;
      if (!timingSafeEqual(digest(token), loginDigest)) return null;
      loginDigest = null;
      const session = { id: random(), csrfToken: random() };
      sessions.set(digest(session.id).toString('hex'), session);
      return session;
    },

    /** The session a cookie value names, or null. */
    session(id: string | undefined): ConsoleSession | null {
      if (id === undefined || !TOKEN.test(id)) return null;
      return sessions.get(digest(id).toString('hex')) ?? null;
    },

    logout(id: string): void {
      sessions.delete(digest(id).toString('hex'));
    },
  };
}
