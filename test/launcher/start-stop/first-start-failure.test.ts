import { access } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../../support/cli.js';
import { sandboxProfile, writeProfile } from '../../support/example-profiles.js';
import { addStackProfile, destroyStackHome, jsonError, jsonResult, lexecIn, makeStackHome, type StackHome } from '../../support/stack-home.js';

/*
 * A first start that fails leaves nothing activated (issue 26 item 4): the operator fixes
 * profile.toml and starts again, without rendering and activating by hand. A busy port held by
 * another lexec stack is named with that stack's profile and LEXEC_HOME, not only a pid.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('a failed first start', () => {
  it('names the other stack holding its ports, activates nothing, and starts once the ports are fixed', async () => {
    // Stack A runs on its ports.
    const a = await makeStackHome({ prefix: 'lexec-first-a-' });
    cleanups.push(() => destroyStackHome(a));
    expect(jsonResult<{ outcome: string }>(await lexecIn(a.home, ['stack', 'start', '--json'])).outcome).toBe('started');

    // Stack B, another LEXEC_HOME, whose profile names A's ledger port.
    const b: StackHome = await addStackProfile(await makeTempDir('lexec-first-b-'), {
      edit: (table) => {
        (table.ports as Record<string, number>).ledger = a.ports.ledger;
      },
    });
    cleanups.push(() => destroyStackHome(b));
    const refused = await lexecIn(b.home, ['stack', 'start', '--json']);
    expect(refused.exitCode, refused.stderr).toBe(1);
    const error = jsonError(refused);
    expect(error.code).toBe('port_in_use');
    expect(error.message).toContain(`ledger: port ${a.ports.ledger} is in use by pid `);
    expect(error.message).toContain(`of profile "sandbox" in LEXEC_HOME ${a.home}`);
    expect(error.next_step).toContain(`LEXEC_HOME=${a.home} lexec stack stop --profile sandbox`);
    expect(error.next_step).toContain('then start again (nothing was activated');
    expect(error.next_step).not.toContain('lexec stack activate');
    // Nothing is active: the generation this start rendered and activated was withdrawn.
    expect(await exists(b.paths.activeFile)).toBe(false);

    // The operator gives B other ports; the next start takes them as they are.
    const { text, ports } = await sandboxProfile();
    await writeProfile(b.home, 'sandbox', text);
    const started = await lexecIn(b.home, ['stack', 'start', '--json']);
    expect(started.exitCode, started.stderr).toBe(0);
    const result = jsonResult<{ outcome: string; generation_activated: boolean; components: { name: string; endpoint: string }[] }>(started);
    expect(result.outcome).toBe('started');
    expect(result.generation_activated).toBe(true);
    expect(result.components.find((component) => component.name === 'ledger')?.endpoint).toBe(`http://127.0.0.1:${ports.ledger}`);
  });

  it('keeps an activation the operator made: a busy port then still points to render and activate', async () => {
    const a = await makeStackHome({ prefix: 'lexec-first-c-' });
    cleanups.push(() => destroyStackHome(a));
    expect(jsonResult<{ outcome: string }>(await lexecIn(a.home, ['stack', 'start', '--json'])).outcome).toBe('started');
    const b = await addStackProfile(await makeTempDir('lexec-first-d-'), {
      edit: (table) => {
        (table.ports as Record<string, number>).executor = a.ports.executor;
      },
    });
    cleanups.push(() => destroyStackHome(b));
    const rendered = jsonResult<{ generation_id: string }>(await lexecIn(b.home, ['stack', 'render', '--json'])).generation_id;
    jsonResult(await lexecIn(b.home, ['stack', 'activate', '--generation', rendered, '--json']));

    const refused = await lexecIn(b.home, ['stack', 'start', '--json']);
    expect(refused.exitCode, refused.stderr).toBe(1);
    expect(jsonError(refused).next_step).toContain('lexec stack activate --generation <id>');
    expect(await exists(b.paths.activeFile)).toBe(true);
  });
});
