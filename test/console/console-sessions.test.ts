import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { composeConsole, type ConsoleProcess } from '../../src/console/compose-console.js';
import { LOGIN_TOKEN_LIFETIME_MS, SESSION_IDLE_MS, SESSION_LIFETIME_MS } from '../../src/console/console-sessions.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { createFakeTime, type FakeTime } from '../support/fake-time.js';
import { rawRequest, signIn } from '../support/console-process.js';

/*
 * How long logins and sessions live (docs/console.md "Security"), on the console built by its
 * composition root with a manual clock, listening on loopback. No stack runs: a request a
 * session admits is answered 503 stack_unavailable (the profile does not exist), one it does not
 * admit 401 — which tells the two apart without a stack.
 */

const MINUTE = 60_000;
let home: string;
let time: FakeTime;
let served: ConsoleProcess;
let origin: string;

beforeEach(async () => {
  home = await makeTempDir('lexec-console-sessions-');
  time = createFakeTime();
  served = await composeConsole({ env: { LEXEC_HOME: home }, profile: 'sandbox', logger: pino({ level: 'silent' }), clock: time.clock });
  origin = await served.listen(0);
});

afterEach(async () => {
  await served.close();
  await removeDir(home);
});

async function statusWith(session: string): Promise<{ status: number; reason: string | undefined }> {
  const response = await rawRequest(origin, 'GET', '/api/agents', { headers: { 'x-lexec-session': session } });
  return { status: response.status, reason: (JSON.parse(response.body) as { error: { reason_code?: string } }).error.reason_code };
}

describe('console logins and sessions expire', () => {
  it('a login link works within 10 minutes of being printed, not after', async () => {
    const fresh = served.loginUrl();
    await time.advance(LOGIN_TOKEN_LIFETIME_MS);
    expect(await statusWith(await signIn(origin, fresh))).toEqual({ status: 503, reason: 'profile_not_found' });

    const stale = served.loginUrl();
    await time.advance(LOGIN_TOKEN_LIFETIME_MS + 1);
    await expect(signIn(origin, stale)).rejects.toThrow(/login failed: 401 .*login_token_invalid/);
  });

  it('a session in use lives on; after 30 minutes without a request it ends', async () => {
    const session = await signIn(origin, served.loginUrl());
    for (let step = 0; step < 4; step += 1) {
      await time.advance(SESSION_IDLE_MS - MINUTE);
      expect((await statusWith(session)).status).toBe(503);
    }
    await time.advance(SESSION_IDLE_MS + 1);
    expect(await statusWith(session)).toEqual({ status: 401, reason: 'session_invalid' });
    // Ended for good: using it again does not bring it back.
    expect((await statusWith(session)).status).toBe(401);
    expect(served.sessions.count()).toBe(0);
  });

  it('a session ends 12 hours after its login however busy it is', async () => {
    const session = await signIn(origin, served.loginUrl());
    for (let elapsed = 0; elapsed + 20 * MINUTE <= SESSION_LIFETIME_MS; elapsed += 20 * MINUTE) {
      await time.advance(20 * MINUTE);
      expect((await statusWith(session)).status, `${String(elapsed)} ms`).toBe(503);
    }
    await time.advance(SESSION_LIFETIME_MS % (20 * MINUTE) + 1);
    expect(await statusWith(session)).toEqual({ status: 401, reason: 'session_invalid' });
    // A new login starts a new session.
    expect((await statusWith(await signIn(origin, served.loginUrl()))).status).toBe(503);
  });
});
