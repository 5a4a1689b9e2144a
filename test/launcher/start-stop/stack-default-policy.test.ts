import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyStackHome, jsonResult, lexecIn, makeStackHome, type StackHome } from '../../support/stack-home.js';

/*
 * The operator lowers `[ledger.default_policy]` in profile.toml and applies it the documented way
 * (render → stop → activate → start): the agent the stack created with the old default now
 * works under the new one. Before this rule the change rendered, activated and did nothing.
 */

interface RunJson {
  authorization: { token_id: string; status: string };
}

let stack: StackHome;

beforeAll(async () => {
  stack = await makeStackHome();
  jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
}, 120_000);

afterAll(async () => {
  await destroyStackHome(stack);
}, 120_000);

describe('a changed default spend policy', () => {
  it('is shown by render and holds after stop, activate and start for the agent that follows it', async () => {
    const run = (args: string[]) => lexecIn(stack.home, ['run', 'a kite', '--out', `${stack.home}/out`, '--json', ...args]);
    expect(jsonResult<RunJson>(await run([])).authorization.status).toBe('settled'); // 3000 units: below the 1 USD threshold

    const source = await readFile(stack.paths.source, 'utf8');
    expect(source).toMatch(/^approval_threshold_units = "1000000"/m);
    await writeFile(stack.paths.source, source.replace(/^approval_threshold_units = "1000000"/m, 'approval_threshold_units = "1000"'));

    const rendered = jsonResult<{ generation_id: string; affected_components: string[]; default_policy_changes: unknown[] }>(await lexecIn(stack.home, ['stack', 'render', '--json']));
    expect(rendered.default_policy_changes).toEqual([{ field: 'approval_threshold_units', from: '1000000', to: '1000' }]);
    expect(rendered.affected_components).toContain('ledger');
    const human = await lexecIn(stack.home, ['stack', 'render']);
    expect(human.stdout + human.stderr).toContain('default spend policy: approval_threshold_units 1000000 → 1000');
    // What changes, as a diff of the rendered files against the active generation.
    expect(human.stdout).toMatch(/^-\s+"approval_threshold_units": "1000000",?$/m);
    expect(human.stdout).toMatch(/^\+\s+"approval_threshold_units": "1000",?$/m);
    expect(human.stdout).toContain(`+++ ${rendered.generation_id}/ledger.json`);
    // The generation keeps the TOML it was rendered from.
    expect(await readFile(join(stack.paths.generationsDir, rendered.generation_id, 'profile.toml'), 'utf8')).toContain('approval_threshold_units = "1000"');

    jsonResult(await lexecIn(stack.home, ['stack', 'stop', '--json']));
    jsonResult(await lexecIn(stack.home, ['stack', 'activate', '--generation', rendered.generation_id, '--json']));
    const started = jsonResult<{ agent: { agent_id: string } }>(await lexecIn(stack.home, ['stack', 'start', '--json']));

    const shown = jsonResult<{ policy: { approval_threshold_units: string; source: string } }>(
      await lexecIn(stack.home, ['ledger', 'policy', 'show', '--agent-id', started.agent.agent_id, '--json']),
    );
    expect(shown.policy).toMatchObject({ approval_threshold_units: '1000', source: 'default' });
    // Without --agent-id: the profile's own agent (the one `lexec run` spends as).
    expect(jsonResult<{ policy: unknown }>(await lexecIn(stack.home, ['ledger', 'policy', 'show', '--json'])).policy).toEqual(shown.policy);
    // The same job now needs a human.
    expect(jsonResult<RunJson>(await run(['--no-wait'])).authorization.status).toBe('requested');
  }, 150_000);

  it('a profile.toml that no longer renders is named key by key when start keeps the active generation', async () => {
    const source = await readFile(stack.paths.source, 'utf8');
    await writeFile(stack.paths.source, source.replace(/^\[ports\]$/m, '[ports]\nbogus = 1'));
    const start = await lexecIn(stack.home, ['stack', 'start', '--json']);
    expect(start.exitCode, start.stderr).toBe(0);
    expect(start.stderr).toContain('warning: profile.toml no longer renders (profile_invalid: ports.bogus); the running stack keeps generation');
    expect(start.stderr).toContain('  ports.bogus: unknown field');
    await writeFile(stack.paths.source, source);
  }, 120_000);
});
