import { createHash } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { BIN, expectResult, makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';
import { tableAt } from '../support/example-profiles.js';
import { startAgentSession, structured, toolError, type AgentSession } from '../support/mcp-client.js';
import { decodePng } from '../support/png.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { eventually } from '../support/stack-home.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';

/*
 * `lexec agent mcp` driven by the official MCP SDK's Client over stdio, against a real sandbox
 * stack started with `lexec stack start`. The policy makes one image (3000 micro-units)
 * automatic, two (6000) wait for a human, and four (12000) pass the per-authorization cap.
 * Every tool answer, progress message and stderr line is kept and checked at the end for
 * capabilities, paths, URLs and the prompts submitted.
 */

const PROMPTS: string[] = [];
const prompt = (text: string) => {
  PROMPTS.push(text);
  return text;
};

/** The MCP Inspector's CLI (a devDependency), an MCP client written independently of lexec. */
const INSPECTOR = join(PACKAGE_ROOT, 'node_modules', '.bin', 'mcp-inspector');

let stack: RunningStack;
let inspectorHome: string;
let agent: AgentSession;
const seen: string[] = [];
const sessions: AgentSession[] = [];

async function call(name: string, args: Record<string, unknown> = {}, progress?: Progress[]) {
  const result = await agent.call(name, args, progress === undefined ? {} : { progress });
  seen.push(JSON.stringify(result));
  return result;
}

async function ledgerAuthorization(tokenId: string) {
  const run = await stack.lexec(['ledger', 'authorizations', 'show', tokenId, '--json']);
  return (expectResult(run) as { authorization: { status: string; execution_id: string | null; settlement: { amount_units: string } | null } }).authorization;
}

beforeAll(async () => {
  stack = await startRunningStack({
    edit: (profile) => {
      const policy = tableAt(profile, 'ledger.default_policy');
      policy.approval_threshold_units = '5000';
      policy.per_authorization_cap_units = '10000';
      tableAt(profile, 'sandbox').complete_after_ms = 800;
    },
  });
  agent = await startAgentSession({ env: stack.env });
  sessions.push(agent);
  inspectorHome = await makeTempDir('lexec-inspector-');
}, 180_000);

afterAll(async () => {
  for (const session of sessions) await session.close().catch(() => undefined);
  const secrets = await Promise.all((['admin', 'agent', 'approver', 'caller', 'reconciliation'] as const).map((role) => stack.capability(role).catch(() => 'unreadable')));
  await stack.stop();
  await removeDir(inspectorHome);
  const everything = [...seen, ...sessions.map((session) => session.stderr())].join('\n');
  expect(everything).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{20,}/);
  for (const secret of secrets) expect(everything).not.toContain(secret);
  expect(everything).not.toContain(stack.home);
  expect(everything).not.toMatch(/(127\.0\.0\.1|localhost|\[::1\]):\d+/);
  expect(everything).not.toContain(stack.ledgerUrl);
  expect(everything).not.toContain(stack.executorUrl);
  for (const text of PROMPTS) expect(everything).not.toContain(text);
}, 120_000);

describe('lexec agent mcp, driven by an MCP client over stdio', () => {
  it('tells the host its version: the product version, contract version and full commit of `lexec version --json`', async () => {
    const version = expectResult(await stack.lexec(['version', '--json'])) as { product_version: string; contract_version: string; commit: string; build_kind: string };
    const info = agent.client.getServerVersion();
    expect(info?.name).toBe('lexec');
    expect(info?.version).toBe(`${version.product_version}+contract.${version.contract_version}.commit.${version.commit}.${version.build_kind}`);
    expect(version.contract_version).toBe('v4.5');
    expect(version.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it('lists exactly the six tools, with their frozen input and output schemas', async () => {
    const { tools } = await agent.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['generate_images', 'get_execution', 'get_images', 'list_targets', 'quote', 'spending']);
    const contract = Object.fromEntries(tools.map((tool) => [tool.name, { inputSchema: tool.inputSchema, outputSchema: tool.outputSchema, annotations: tool.annotations }]));
    await expect(JSON.stringify(contract, null, 2)).toMatchFileSnapshot('./__snapshots__/agent-tools.json');
  });

  it('lists the targets with exact unit prices, quotes without reserving, and reports the policy and spending', async () => {
    const { targets } = structured('list_targets', await call('list_targets'));
    expect(targets).toHaveLength(1);
    expect(targets[0]?.image_count.max).toBe(4);
    expect(targets[0]?.image_sizes).toContainEqual({
      image_size: 'square_hd',
      unit_price: { numerator: '3', denominator: '1000', currency: 'USD', per: 'image' },
      one_image: { amount_units: '3000', units_scale: 6, currency: 'USD', display: '0.003000 USD' },
    });

    const before = structured('spending', await call('spending'));
    expect(before.approval_threshold.amount_units).toBe('5000');
    expect(before.per_authorization_cap.amount_units).toBe('10000');
    expect(before.held.amount_units).toBe('0');

    const one = structured('quote', await call('quote', { image_count: 1 }));
    expect(one).toMatchObject({ cost: { amount_units: '3000' }, policy_outcome: 'automatic' });
    expect(structured('quote', await call('quote', { image_count: 2, image_size: 'landscape_16_9' }))).toMatchObject({ cost: { amount_units: '6000' }, policy_outcome: 'needs_human_approval' });
    expect(structured('quote', await call('quote', { image_count: 4 }))).toMatchObject({ policy_outcome: 'refused', refusal_reason: 'per_authorization_cap_exceeded' });

    // Quoting reserved nothing.
    const after = structured('spending', await call('spending'));
    expect(after.held.amount_units).toBe(before.held.amount_units);
    expect(after.spent.amount_units).toBe(before.spent.amount_units);
  });

  it('generates an image end to end: PNG bytes inline, progress reported, the exact spend equal to the ledger settlement', async () => {
    const spentBefore = structured('spending', await call('spending')).spent.amount_units;
    const progress: Progress[] = [];
    const result = await call('generate_images', { prompt: prompt('a lighthouse made of glass, agent test one') }, progress);
    const generated = structured('generate_images', result);
    expect(generated).toMatchObject({ status: 'succeeded', authorization_status: 'settled', quoted: { amount_units: '3000' }, spent: { amount_units: '3000', display: '0.003000 USD' } });
    expect(generated.delivery).toEqual({ requested: 1, delivered: 1, billed: 1, partial: false });
    expect(generated.next_step).toBeNull();
    const images = result.content.filter((block) => block.type === 'image');
    expect(images).toHaveLength(1);
    const bytes = Buffer.from(images[0]?.type === 'image' ? images[0].data : '', 'base64');
    expect(decodePng(bytes).width).toBeGreaterThan(0);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(generated.images[0]?.sha256);

    const ledger = await ledgerAuthorization(generated.authorization_id ?? '');
    expect(ledger.status).toBe('settled');
    expect(ledger.settlement?.amount_units).toBe(generated.spent?.amount_units);
    expect(ledger.execution_id).toBe(generated.execution_id);
    const spentAfter = structured('spending', await call('spending')).spent.amount_units;
    expect(BigInt(spentAfter) - BigInt(spentBefore)).toBe(3000n);

    const messages = progress.map((entry) => entry.message ?? '');
    expect(messages[0]).toMatch(/^quoted 1 x square_hd/);
    // The last lines are read from the server's log: the SDK's client handles a notification a
    // microtask after a response that came in the same read, so one sent just before the answer
    // may be dropped as late (modelcontextprotocol/typescript-sdk#2580; CI saw it).
    for (const line of [`execution ${generated.execution_id}: succeeded`, `execution ${generated.execution_id}: 1 image ready`]) {
      await eventually(`the progress line "${line}"`, () => (agent.stderr().includes(`progress: ${line}`) ? true : undefined));
    }
    seen.push(JSON.stringify(progress));

    expect(structured('get_execution', await call('get_execution', { execution_id: generated.execution_id }))).toMatchObject({ state: 'succeeded', spent: { amount_units: '3000' }, image_count: 1 });
  });

  it('delivers images as resource links on request, readable with resources/read', async () => {
    const result = await call('generate_images', { prompt: prompt('a paper crane, agent test links'), delivery: 'links' });
    const generated = structured('generate_images', result);
    const links = result.content.filter((block) => block.type === 'resource_link');
    expect(links).toHaveLength(1);
    expect(generated.images[0]).toMatchObject({ delivered: 'link', uri: `lexec://executions/${generated.execution_id}/images/${generated.images[0]?.ordinal}` });
    const read = await agent.client.readResource({ uri: generated.images[0]?.uri ?? '' });
    const blob = read.contents[0] !== undefined && 'blob' in read.contents[0] ? read.contents[0].blob : '';
    expect(createHash('sha256').update(Buffer.from(blob, 'base64')).digest('hex')).toBe(generated.images[0]?.sha256);

    const again = await call('get_images', { execution_id: generated.execution_id, delivery: 'inline' });
    expect(again.content.filter((block) => block.type === 'image')).toHaveLength(1);
  });

  it('answers a read of a URI that names no image with the MCP resource-not-found error (-32002), never echoing the URI (issue 24 item 9)', async () => {
    const generated = structured('generate_images', await call('generate_images', { prompt: prompt('a tin lantern, agent test unknown resource'), delivery: 'links' }));
    const marker = 'resource~marker~41c7';
    const uris = [
      `lexec://executions/exe_${'0'.repeat(32)}/images/0`,
      `lexec://executions/${generated.execution_id}/images/3`,
      `lexec://executions/exe_${marker}/images/0`,
      `file:///etc/${marker}`,
      `https://example.invalid/${marker}?token=${marker}`,
      marker,
    ];
    for (const uri of uris) {
      const failure = await agent.client.readResource({ uri }).then(
        () => null,
        (error: unknown) => error as { code?: number; message?: string },
      );
      seen.push(JSON.stringify(failure?.message ?? ''));
      expect(failure?.code, uri).toBe(-32002);
      expect(failure?.message, uri).toMatch(/Resource not found/);
      expect(failure?.message).not.toContain(marker);
      expect(failure?.message).not.toContain('<url>');
      expect(failure?.message).not.toContain(uri);
    }
    expect(agent.stderr()).not.toContain(marker);
    // The tools say the same without a placeholder where the executor named its URL.
    const unknown = toolError(await call('get_execution', { execution_id: `exe_${'0'.repeat(32)}` }));
    expect(unknown).toMatchObject({ code: 'executor_not_found', message: "The stack's executor has no execution with that id." });
    expect(unknown.text).not.toContain('<url>');
  });

  it('stops for a human above the approval threshold; after the human approves with the CLI, the resumed call finishes; the authorization pays for one execution only', async () => {
    const job = { prompt: prompt('two tide pools at dawn, agent test approval'), image_count: 2 };
    const waiting = structured('generate_images', await call('generate_images', job));
    expect(waiting).toMatchObject({ status: 'awaiting_approval', authorization_status: 'requested', execution_id: null, spent: null, images: [] });
    const tokenId = waiting.authorization_id ?? '';
    expect(waiting.approve_command).toBe(`lexec ledger authorizations approve ${tokenId} --profile sandbox`);

    // Still waiting: the agent has no way to approve; calling again only says so.
    expect(structured('generate_images', await call('generate_images', { ...job, authorization_id: tokenId }))).toMatchObject({ status: 'awaiting_approval' });

    const [, ...args] = (waiting.approve_command ?? '').split(' ');
    expect((await stack.lexec([...args, '--json'])).exitCode).toBe(0);

    const done = structured('generate_images', await call('generate_images', { ...job, authorization_id: tokenId }));
    expect(done).toMatchObject({ status: 'succeeded', authorization_id: tokenId, spent: { amount_units: '6000' } });
    expect(done.images).toHaveLength(2);

    // The same call again replays the same execution; another job on it is refused.
    const replay = structured('generate_images', await call('generate_images', { ...job, authorization_id: tokenId }));
    expect(replay.execution_id).toBe(done.execution_id);
    const other = toolError(await call('generate_images', { prompt: prompt('a different job on a used authorization'), image_count: 2, authorization_id: tokenId }));
    expect(other.code).toBe('authorization_already_used');
    expect(other.message).toContain(done.execution_id ?? 'missing');
    const ledger = await ledgerAuthorization(tokenId);
    expect(ledger).toMatchObject({ status: 'settled', execution_id: done.execution_id, settlement: { amount_units: '6000' } });
  });

  it('the same call again while its request awaits approval continues that request (one hold, one approval); without authorization_id it finishes on it; once used, the same call is a new job', async () => {
    const job = { prompt: prompt('a bridge of reeds, agent test rerun'), image_count: 2 };
    const pending = async () =>
      (expectResult(await stack.lexec(['ledger', 'approvals', 'list', '--json'])) as { authorizations: { token_id: string; created_at: string }[] }).authorizations;
    const before = (await pending()).length;
    const waiting = structured('generate_images', await call('generate_images', job));
    expect(waiting).toMatchObject({ status: 'awaiting_approval', authorization_status: 'requested' });
    const tokenId = waiting.authorization_id ?? '';
    const opened = (await pending()).find((authorization) => authorization.token_id === tokenId);

    const again = structured('generate_images', await call('generate_images', job));
    expect(again).toMatchObject({ status: 'awaiting_approval', authorization_id: tokenId, approve_command: waiting.approve_command });
    expect(again.next_step).toMatch(new RegExp(`^This continues the request an identical earlier call opened at ${opened?.created_at ?? 'missing'} \\(awaiting approval\\); nothing new was requested\\. A human must approve`));
    // Its progress says so too (read from the server's log: a notification sent just before the answer may reach the host after it).
    const said = `progress: authorization ${tokenId}: requested (continuing the request opened at ${opened?.created_at ?? 'missing'} instead of opening a new one)`;
    await eventually('the progress line of the continued request', () => (agent.stderr().includes(said) ? true : undefined));
    expect((await pending()).length).toBe(before + 1);

    const [, ...args] = (waiting.approve_command ?? '').split(' ');
    expect((await stack.lexec([...args, '--json'])).exitCode).toBe(0);
    const done = structured('generate_images', await call('generate_images', job));
    expect(done).toMatchObject({ status: 'succeeded', authorization_id: tokenId, authorization_status: 'settled', spent: { amount_units: '6000' } });
    expect(await ledgerAuthorization(tokenId)).toMatchObject({ status: 'settled', execution_id: done.execution_id, settlement: { amount_units: '6000' } });

    const later = structured('generate_images', await call('generate_images', job));
    expect(later).toMatchObject({ status: 'awaiting_approval' });
    expect(later.authorization_id).not.toBe(tokenId);
    expect(later.next_step).not.toContain('continues the request');
    // Leave nothing waiting for the tests after this one.
    expect((await stack.lexec(['ledger', 'authorizations', 'deny', later.authorization_id ?? '', '--profile', 'sandbox', '--json'])).exitCode).toBe(0);
  });

  it('a partial delivery (the provider returns 1 of 2 images) says partial: delivery, next_step and get_execution; billed for the one delivered (issue 26 item 5)', async () => {
    const job = { prompt: prompt('two herons, one shy, agent test partial'), image_count: 2 };
    const waiting = structured('generate_images', await call('generate_images', job));
    const tokenId = waiting.authorization_id ?? '';
    const [, ...args] = (waiting.approve_command ?? '').split(' ');
    expect((await stack.lexec([...args, '--json'])).exitCode).toBe(0);
    await stack.sandbox.setFaults([{ kind: 'fewer_images', omit: 1, times: 1 }]);

    const progress: Progress[] = [];
    const done = structured('generate_images', await call('generate_images', { ...job, authorization_id: tokenId }, progress));
    expect(done).toMatchObject({ status: 'succeeded', quoted: { amount_units: '6000' }, spent: { amount_units: '3000', display: '0.003000 USD' } });
    expect(done.images).toHaveLength(1);
    expect(done.delivery).toEqual({ requested: 2, delivered: 1, billed: 1, partial: true });
    expect(done.next_step).toContain('Partial delivery: 1 of 2 images delivered; billed for 1 (0.003000 USD).');
    expect(done.next_step).toContain('image_count 1');
    // The last progress line, from the server's log (sent just before the answer: see the first generation test).
    const ready = `progress: execution ${done.execution_id}: 1 image ready (partial delivery: 1 of 2 images delivered; billed for 1`;
    await eventually('the partial delivery\'s progress line', () => (agent.stderr().includes(ready) ? true : undefined));
    seen.push(JSON.stringify(progress));

    const shown = structured('get_execution', await call('get_execution', { execution_id: done.execution_id }));
    expect(shown).toMatchObject({ state: 'succeeded', image_count: 1, delivery: { requested: 2, delivered: 1, billed: 1, partial: true }, spent: { amount_units: '3000' } });
    expect(await ledgerAuthorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
  });

  it('a call the host abandons, or one that outlasts wait_seconds, resumes by execution id and is paid once', async () => {
    const spentBefore = BigInt(structured('spending', await call('spending')).spent.amount_units);
    const submittedBefore = (await stack.sandbox.submissions()).length;

    // The host gives up mid-call (its timeout or the user): the SDK cancels the request.
    const progress: Progress[] = [];
    const abandon = new AbortController();
    const abandoned = agent.call('generate_images', { prompt: prompt('a lantern festival, agent test abandoned') }, { signal: abandon.signal, progress });
    const deadline = Date.now() + 60_000;
    let executionId: string | undefined;
    while (executionId === undefined && Date.now() < deadline) {
      executionId = /execution (exe_[0-9a-f]{32})/.exec(progress.map((entry) => entry.message).join('\n'))?.[1];
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    abandon.abort();
    await expect(abandoned).rejects.toThrow();
    seen.push(JSON.stringify(progress));
    const resumed = structured('generate_images', await call('generate_images', { execution_id: executionId }));
    expect(resumed).toMatchObject({ status: 'succeeded', execution_id: executionId, spent: { amount_units: '3000' } });
    expect(resumed.images).toHaveLength(1);

    // Slow provider answers: the call returns "running" at wait_seconds, with the id to resume.
    await stack.sandbox.setFaults([{ kind: 'latency', ms: 1500, routes: ['status'], times: 2 }]);
    const running = structured('generate_images', await call('generate_images', { prompt: prompt('a slow glacier, agent test wait'), wait_seconds: 1 }));
    expect(running).toMatchObject({ status: 'running', spent: null, images: [] });
    expect(running.next_step).toContain(`execution_id ${running.execution_id ?? 'missing'}`);
    const finished = structured('generate_images', await call('generate_images', { execution_id: running.execution_id }));
    expect(finished).toMatchObject({ status: 'succeeded', execution_id: running.execution_id, spent: { amount_units: '3000' } });

    // Two jobs: two provider submissions, two settlements; resuming submitted and paid nothing again.
    const spentAfter = BigInt(structured('spending', await call('spending')).spent.amount_units);
    expect(spentAfter - spentBefore).toBe(6000n);
    expect((await stack.sandbox.submissions()).length - submittedBefore).toBe(2);
  });

  it('a spend the policy refuses is a tool error with the reason, and holds nothing', async () => {
    const held = structured('spending', await call('spending')).held.amount_units;
    const refused = toolError(await call('generate_images', { prompt: prompt('four images, over the cap, agent test'), image_count: 4 }));
    expect(refused.code).toBe('ledger_policy_refused');
    expect(refused.next_step).not.toBe('');
    expect(structured('spending', await call('spending')).held.amount_units).toBe(held);
  });

  it('refuses bad arguments with field paths and without echoing them', async () => {
    const secretish = 'lexec_agent_' + 'x'.repeat(43);
    const bad = toolError(await call('generate_images', { prompt: `${secretish} ${'y'.repeat(5000)}`, image_count: 99, image_size: 'huge', colour: 'red' }));
    expect(bad.code).toBe('invalid_argument');
    expect(bad.fields.map((field) => field.path).sort()).toEqual(['colour', 'image_count', 'image_size', 'prompt']);
    expect(bad.text).not.toContain('lexec_agent_');
    expect(bad.text).not.toContain('huge');
    expect(bad.next_step).not.toBe('');

    // A well-formed prompt that holds a capability: refused before any authorization is requested.
    const capability = generateCapability('agent');
    const secret = toolError(await call('generate_images', { prompt: `a fox ${capability}`, image_count: 1 }));
    expect(secret).toMatchObject({ code: 'invalid_argument', fields: [{ path: 'prompt' }] });
    expect(secret.text).toContain('looks like it contains a secret');
    expect(secret.text).not.toContain(capability.slice(-16));

    const missing = toolError(await call('generate_images', {}));
    expect(missing).toMatchObject({ code: 'invalid_argument', fields: [{ path: 'prompt' }] });
    const size = toolError(await call('quote', { target_id: 'lexec:target:v1:nope' }));
    expect(size).toMatchObject({ code: 'invalid_argument', fields: [{ path: 'target_id' }] });
    const unknown = toolError(await call('get_execution', { execution_id: `exe_${'0'.repeat(32)}` }));
    expect(unknown.code).toBe('executor_not_found');
  });

  it('needs only the agent and caller capabilities: it works with the admin, approver and reconciliation files gone', async () => {
    const moved = (['admin', 'approver', 'reconciliation'] as const).map((role) => stack.credentials[role]);
    for (const path of moved) await rename(path, `${path}.away`);
    try {
      const session = await startAgentSession({ env: stack.env });
      sessions.push(session);
      const result = await session.call('generate_images', { prompt: prompt('a small red kite, agent test identity') });
      seen.push(JSON.stringify(result));
      expect(structured('generate_images', result)).toMatchObject({ status: 'succeeded', spent: { amount_units: '3000' } });
      await session.close();
    } finally {
      for (const path of moved) await rename(`${path}.away`, path);
    }
  });

  it('manual mode: a revoked agent capability is refused at the next tool call, and the session says what to do (issue 27 item 2)', async () => {
    const agentFile = join(stack.home, 'manual-agent', 'agent.capability');
    const issued = expectResult(await stack.lexec(['ledger', 'credentials', 'create', '--kind', 'agent', '--agent-id', stack.agentId, '--credential-file', agentFile, '--json'])) as {
      credential: { credential_id: string };
    };
    const args = ['--url', stack.ledgerUrl, '--token-file', agentFile, '--executor-url', stack.executorUrl, '--executor-token-file', stack.credentials.caller];
    const session = await startAgentSession({ env: { LEXEC_HOME: join(stack.home, 'nowhere') }, args });
    sessions.push(session);
    expect(structured('spending', await session.call('spending')).per_authorization_cap.amount_units).toBe('10000');
    expectResult(await stack.lexec(['ledger', 'credentials', 'revoke', issued.credential.credential_id, '--json']));
    const refused = toolError(await session.call('spending'));
    expect(refused.code).toBe('ledger_unauthorized');
    expect(refused.message).toContain('revoked');
    seen.push(refused.text);
    await session.close();
  });

  it('manual mode: --url/--token-file and --executor-url/--executor-token-file; a wrong capability kind or mixed modes fail before any protocol', async () => {
    const { credentials } = stack;
    const manual = (agentFile: string) => ['--url', stack.ledgerUrl, '--token-file', agentFile, '--executor-url', stack.executorUrl, '--executor-token-file', credentials.caller];
    const session = await startAgentSession({ env: { LEXEC_HOME: join(stack.home, 'nowhere') }, args: manual(credentials.agent) });
    sessions.push(session);
    const spent = structured('spending', await session.call('spending'));
    expect(spent.per_authorization_cap.amount_units).toBe('10000');
    seen.push(JSON.stringify(spent));
    await session.close();

    const approverAsAgent = await stack.lexec(['agent', 'mcp', ...manual(credentials.approver)]);
    expect(approverAsAgent.exitCode).toBe(1);
    expect(approverAsAgent.stderr).toContain('--token-file must name a file holding an agent capability');
    expect(approverAsAgent.stdout).toBe('');
    const partial = await stack.lexec(['agent', 'mcp', '--url', stack.ledgerUrl]);
    expect(partial.exitCode).toBe(2);
    expect(partial.stderr).toContain('missing --token-file, --executor-url, --executor-token-file');
    const mixed = await stack.lexec(['agent', 'mcp', '--profile', 'sandbox', ...manual(credentials.agent)]);
    expect(mixed.exitCode).toBe(2);
    const json = await stack.lexec(['agent', 'mcp', '--json']);
    expect(json.exitCode).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'usage_error' } });
    seen.push(approverAsAgent.stderr, partial.stderr, mixed.stderr);
  });

  it('speaks MCP to an independent peer: the MCP Inspector CLI lists the tools and calls quote', async () => {
    const inspector = async (...args: string[]) => {
      const run = await execa(INSPECTOR, ['--cli', process.execPath, BIN, 'agent', 'mcp', '-e', `LEXEC_HOME=${stack.home}`, ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: inspectorHome, MCP_CATALOG_PATH: join(inspectorHome, 'mcp.json') },
        extendEnv: false,
        reject: false,
        timeout: 60_000,
      });
      expect(run.exitCode, run.stderr).toBe(0);
      return JSON.parse(run.stdout) as Record<string, unknown>;
    };
    const listed = (await inspector('--method', 'tools/list')) as { tools: { name: string }[] };
    expect(listed.tools.map((tool) => tool.name).sort()).toEqual(['generate_images', 'get_execution', 'get_images', 'list_targets', 'quote', 'spending']);
    const quoted = (await inspector('--method', 'tools/call', '--tool-name', 'quote', '--tool-arg', 'image_count=2')) as { structuredContent: unknown; isError?: boolean };
    expect(quoted.isError ?? false).toBe(false);
    expect(quoted.structuredContent).toMatchObject({ image_count: 2, cost: { amount_units: '6000', display: '0.006000 USD' }, policy_outcome: 'needs_human_approval' });
    seen.push(JSON.stringify(listed), JSON.stringify(quoted));
  });

  it('a stack stopped mid-call ends the call with what stays and how to resume; a new session without a stack fails at start', async () => {
    const progress: Progress[] = [];
    // The job never completes at the provider, so the call is still under way when the stack
    // stops, however long `stack stop` takes to start on a loaded machine.
    await stack.sandbox.setFaults([{ kind: 'never_complete', times: 1 }]);
    const pending = call('generate_images', { prompt: prompt('a slow sunset, agent test stop'), wait_seconds: 120 }, progress);
    const deadline = Date.now() + 60_000;
    while (!progress.some((entry) => /: running/.test(entry.message ?? '')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const executionId = /execution (exe_[0-9a-f]{32})/.exec(progress.map((entry) => entry.message).join('\n'))?.[1];
    expect(executionId).toBeDefined();
    expect((await stack.lexec(['stack', 'stop', '--json'])).exitCode).toBe(0);
    const failed = toolError(await pending);
    expect(failed.code).toMatch(/^executor_/);
    expect(failed.message).toContain(`Execution ${executionId ?? ''} continues`);
    expect(failed.next_step).toContain(`execution_id ${executionId ?? ''}`);

    const after = toolError(await call('get_execution', { execution_id: executionId }));
    expect(after.code).toBe('stack_not_running');
    const refused = await startAgentSession({ env: stack.env }).then(
      () => '',
      (error: unknown) => String(error),
    );
    expect(refused).toMatch(/The stack of profile "sandbox" is not running/);
    seen.push(refused);
  }, 180_000);
});
