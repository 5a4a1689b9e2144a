import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectFailure, expectResult, type CliRun } from '../support/cli.js';
import { decodePng } from '../support/png.js';
import { generateCapability } from '../../src/credentials/capability.js';
import { writeHandoff } from '../../src/launcher/handoff/handoff.js';
import { canListen } from '../../src/process/port-probe.js';
import { runSessionPerFile, type RunSession } from '../support/run-session.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { eventually, readState } from '../support/stack-home.js';

/*
 * `lexec run`, the main job, on a profile's stack started by `lexec stack start` (its supervisor
 * runs the real ledger, executor and sandbox provider processes; start writes the handoff).
 * Under the example profile's policy a sandbox image (3/1000 USD) is approved at once.
 */

interface RunJson {
  profile: string;
  authorization: { token_id: string; status: string; amount_units: string };
  approve_command: string | null;
  execution: { execution_id: string; state: string } | null;
  spent: { amount_units: string; units_scale: number; currency: string; display: string } | null;
  delivery: { requested: number; delivered: number; billed: number | null; partial: boolean } | null;
  out_dir: string;
  files: { path: string; bytes: number; sha256: string }[];
}

interface Authorization {
  token_id: string;
  status: string;
  amount_units: string;
  purpose: string | null;
  settlement: { amount_units: string } | null;
}

let stack: RunningStack;
let work: string;
let lexec: RunSession['lexec'];
const ok = (run: CliRun) => expectResult(run) as RunJson;

runSessionPerFile((session) => {
  ({ stack, work, lexec } = session);
});

async function authorizations(): Promise<Authorization[]> {
  const run = await lexec(['ledger', 'authorizations', 'list', '--json']);
  expect(run.exitCode, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { result: { authorizations: Authorization[] } }).result.authorizations;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('lexec run on a running sandbox stack', () => {
  it('produces real PNG files, prints the exact spend, and the ledger settled exactly that amount', async () => {
    const run = await lexec(['run', 'a lighthouse on a cliff at dusk', '--count', '2', '--out', 'first']);
    expect(run.exitCode, run.stderr).toBe(0);
    // Progress on stderr, the summary (the result) on stdout.
    // 2 images x 3/1000 USD = 0.006 USD exactly.
    expect(run.stderr).toContain('quote: 2 x square_hd on FLUX.1 [schnell] (lexec:target:v1:flux-schnell) = 0.006000 USD');
    expect(run.stderr).toMatch(/authorization [0-9a-f-]{36}: approved, 0\.006000 USD/);
    expect(run.stderr).toMatch(/execution exe_[0-9a-f]{32}: succeeded/);
    expect(run.stdout).toContain('spent exactly 0.006000 USD (6000 micro-units), settled at the ledger');
    expect(run.stdout).not.toContain('quote:');

    const out = join(work, 'first');
    const names = (await readdir(out)).sort();
    expect(names).toHaveLength(2);
    const executionId = /execution (exe_[0-9a-f]{32}): succeeded/.exec(run.stderr)?.[1] ?? '';
    expect(names).toEqual([`${executionId}-0.png`, `${executionId}-1.png`]);
    for (const name of names) {
      expect(run.stderr).toContain(join(out, name));
      const png = decodePng(await readFile(join(out, name)));
      expect([png.width, png.height]).toEqual([1024, 1024]);
    }

    const tokenId = /authorization ([0-9a-f-]{36}):/.exec(run.stderr)?.[1];
    const settled = (await authorizations()).find((authorization) => authorization.token_id === tokenId);
    expect(settled).toMatchObject({ status: 'settled', amount_units: '6000', settlement: { amount_units: '6000' } });
    expect(settled?.purpose).toBe('lexec run: 2 x square_hd images, FLUX.1 [schnell]');
  });

  it('--json prints one typed result: profile, authorization, execution, exact spend and the files with their digests', async () => {
    const result = ok(await lexec(['run', 'a quiet harbour', '--size', 'landscape_16_9', '--out', join(work, 'json'), '--json']));
    expect(Object.keys(result).sort()).toEqual(['approve_command', 'authorization', 'delivery', 'execution', 'files', 'out_dir', 'profile', 'spent']);
    expect(result).toMatchObject({
      profile: 'sandbox',
      authorization: { status: 'settled', amount_units: '3000' },
      approve_command: null,
      execution: { state: 'succeeded' },
      spent: { amount_units: '3000', units_scale: 6, currency: 'USD', display: '0.003000 USD' },
      delivery: { requested: 1, delivered: 1, billed: 1, partial: false },
      out_dir: join(work, 'json'),
    });
    expect(result.files).toHaveLength(1);
    const [file] = result.files;
    const bytes = await readFile(file?.path ?? '');
    expect(file).toEqual({ path: join(work, 'json', `${result.execution?.execution_id ?? ''}-0.png`), bytes: bytes.length, sha256: sha256(bytes) });
    const png = decodePng(bytes);
    expect([png.width, png.height]).toEqual([1024, 576]);
  });

  it('--authorization continues a finished run: the identical request replays it, identical files are kept, nothing is spent twice', async () => {
    const first = ok(await lexec(['run', 'a red kite', '--out', 'again', '--json']));
    const before = (await authorizations()).length;
    const again = ok(await lexec(['run', 'a red kite', '--out', 'again', '--authorization', first.authorization.token_id, '--json']));
    expect(again.execution).toEqual(first.execution);
    expect(again.spent).toEqual(first.spent);
    expect(again.files).toEqual(first.files);
    expect(await authorizations()).toHaveLength(before);
    const human = await lexec(['run', 'a red kite', '--out', 'again', '--authorization', first.authorization.token_id]);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stderr).toContain(`already saved ${first.files[0]?.path ?? ''}`);

    // A changed prompt is not the same request: the executor names the field, nothing runs.
    const changed = expectFailure(await lexec(['run', 'a blue kite', '--out', 'again', '--authorization', first.authorization.token_id, '--json']), 1, 'executor_conflict');
    expect(changed.issues?.map((issue) => issue.path)).toEqual(['input.prompt']);
  });

  it('never overwrites a file already in the way', async () => {
    const first = ok(await lexec(['run', 'a lantern', '--out', 'clash', '--json']));
    const path = first.files[0]?.path ?? '';
    await writeFile(path, 'not the image');
    const error = expectFailure(await lexec(['run', 'a lantern', '--out', 'clash', '--authorization', first.authorization.token_id, '--json']), 1, 'output_file_exists');
    expect(error.message).toContain(path);
    // Paid for already: the next step is the exact command that fetches the images again.
    expect(error.next_step).toContain(`--authorization ${first.authorization.token_id}`);
    expect(error.next_step).not.toContain('<token_id>');
    expect(await readFile(path, 'utf8')).toBe('not the image');
  });

  it('an --out that is a file, or cannot be created, is refused before anything is requested or spent', async () => {
    const before = (await authorizations()).length;
    const file = join(work, 'a-file');
    await writeFile(file, 'in the way');
    const notDirectory = expectFailure(await lexec(['run', 'x', '--out', file, '--json']), 2, 'out_not_a_directory');
    expect(notDirectory.message).toContain('nothing was requested or spent');
    const underFile = expectFailure(await lexec(['run', 'x', '--out', join(file, 'images'), '--json']), 1, 'out_unwritable');
    expect(underFile.message).toContain('ENOTDIR');
    expect(await authorizations()).toHaveLength(before);
  });

  it('an unknown size, a count above the target\'s limit, an unknown target or a blank prompt is a usage error before anything is requested', async () => {
    const before = (await authorizations()).length;
    const count = expectFailure(await lexec(['run', 'x', '--count', '5', '--json']), 2, 'invalid_flag_value');
    expect(count.message).toContain('--count');
    const target = expectFailure(await lexec(['run', 'x', '--target', 'lexec:target:v1:nope', '--json']), 2, 'invalid_flag_value');
    expect(target.message).toContain('lexec:target:v1:flux-schnell');
    expectFailure(await lexec(['run', 'x', '--size', 'huge', '--json']), 2, 'invalid_flag_value');
    expectFailure(await lexec(['run', '   ', '--json']), 2, 'invalid_argument');
    // A prompt holding a capability is sent to the provider and kept: refused, never echoed.
    const capability = generateCapability('agent');
    const secret = await lexec(['run', `a fox, ${capability}`, '--json']);
    expect(expectFailure(secret, 2, 'invalid_argument').message).toContain('looks like it contains a secret');
    expect(secret.stdout + secret.stderr).not.toContain(capability.slice(-16));
    expect(await authorizations()).toHaveLength(before);
  });

  it('a profile whose stack is not running fails with stack_not_running and the start command', async () => {
    const other = await startRunningStack({ home: stack.home, profile: 'second' });
    await other.stop();
    const error = expectFailure(await lexec(['run', 'x', '--profile', 'second', '--json']), 1, 'stack_not_running');
    expect(error.next_step).toContain('lexec stack start --profile second');
    // `run` has no manual mode: its next step names no flag it does not take.
    expect(error.next_step).not.toContain('--url');
  }, 180_000);
});

describe('lexec run and an executor that refuses (a relay in front of the real executor)', () => {
  /** Answers POST /v2/executions with `refuse(n)` when it returns one; forwards everything else. */
  /** The paths of the GETs the last relay forwarded. */
  const relayedGets: string[] = [];

  /** Per POST: answer this refusal instead, `lose_answer` (the executor admits it; its answer never arrives), or null (forward). */
  async function withRelay(refuse: (post: number) => { status: number; body: unknown } | 'lose_answer' | null, work: (posts: string[]) => Promise<void>) {
    const posts: string[] = [];
    relayedGets.length = 0;
    const relay = createServer((request: IncomingMessage, response: ServerResponse) => {
      if (request.method === 'GET') relayedGets.push(request.url ?? '');
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        if (request.method === 'POST' && request.url === '/v2/executions') {
          posts.push(body.toString('utf8'));
          const refusal = refuse(posts.length);
          if (refusal === 'lose_answer') {
            void fetch(`${stack.executorUrl}/v2/executions`, { method: 'POST', headers: { authorization: request.headers.authorization ?? '', 'content-type': 'application/json' }, body }).then(() => {
              response.socket?.destroy();
            });
            return;
          }
          if (refusal !== null) {
            response.writeHead(refusal.status, { 'content-type': 'application/json' }).end(JSON.stringify(refusal.body));
            return;
          }
        }
        const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => ['authorization', 'content-type'].includes(name))) as Record<string, string>;
        void fetch(`${stack.executorUrl}${request.url ?? '/'}`, { method: request.method, headers, body: body.length === 0 ? undefined : body }).then(async (answer) => {
          response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await answer.arrayBuffer()));
        });
      });
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    await writeHandoff(stack.paths, { ...stack.handoff, executor: { endpoint: `http://127.0.0.1:${String((relay.address() as AddressInfo).port)}` } });
    try {
      await work(posts);
    } finally {
      await writeHandoff(stack.paths, stack.handoff);
      await new Promise((resolve) => relay.close(resolve));
    }
  }

  it('a 503 not_ready admission is retried briefly with the identical request, then the run finishes', async () => {
    const notReady = { status: 503, body: { error: { code: 'not_ready', reason_code: 'readiness_withdrawn', retryable: true } } };
    await withRelay(
      (post) => (post <= 2 ? notReady : null),
      async (posts) => {
        const run = await lexec(['run', 'a windmill', '--out', 'retried', '--json']);
        const result = ok(run);
        expect(result.execution?.state).toBe('succeeded');
        expect(run.stderr).toContain('retrying the identical request briefly');
        expect(posts).toHaveLength(3);
        expect(new Set(posts).size).toBe(1);
      },
    );
  });

  it('follows the execution by waiting at the executor for each change (long-polls), not by polling', async () => {
    await withRelay(
      () => null,
      async () => {
        const run = await lexec(['run', 'a harbour', '--out', 'followed', '--json']);
        expect(ok(run).execution?.state).toBe('succeeded');
        const follows = relayedGets.filter((path) => /^\/v1\/executions\/exe_[0-9a-f]{32}(\?|$)/.test(path));
        expect(follows.length).toBeGreaterThan(0);
        for (const path of follows) expect(path).toMatch(/\?wait_seconds=\d+&state=[a-z]+&phase=[a-z_]*$/);
      },
    );
  });

  it('the admission answer is lost (the executor admitted it): the identical request is sent again and answered as a replay', async () => {
    await withRelay(
      (post) => (post === 1 ? 'lose_answer' : null),
      async (posts) => {
        const run = await lexec(['run', 'a lighthouse', '--out', 'lost-answer', '--json']);
        const result = ok(run);
        expect(result.execution?.state).toBe('succeeded');
        expect(posts).toHaveLength(2);
        expect(new Set(posts).size).toBe(1);

        // One execution, one settlement for the authorization.
        const settled = (await authorizations()).find((authorization) => authorization.token_id === result.authorization.token_id);
        expect(settled?.status).toBe('settled');
        expect(result.files).toHaveLength(1);
      },
    );
  });

  it('an executor 400 is surfaced with its field paths (never values); the authorization stays approved and unused', async () => {
    const invalid = { status: 400, body: { error: { code: 'invalid_request', reason_code: 'pricing_selector_not_matched', fields: ['input.image_size'] } } };
    await withRelay(
      () => invalid,
      async () => {
        const error = expectFailure(await lexec(['run', 'a windmill', '--json']), 1, 'executor_invalid_request');
        expect(error.message).toContain('400 invalid_request: pricing_selector_not_matched');
        expect(error.issues).toEqual([{ path: 'input.image_size', message: 'refused by the executor (pricing_selector_not_matched)' }]);
      },
    );
    const [latest] = await authorizations();
    expect(latest?.status).toBe('approved');
  });
});

describe('lexec run when the provider misbehaves (sandbox faults)', () => {
  it('fewer images delivered than asked: a partial delivery, exit 6, the spend the exact settled amount, not the quote (issue 26 item 5)', async () => {
    await stack.sandbox.setFaults([{ kind: 'fewer_images', omit: 1, times: 1 }]);
    const run = await lexec(['run', 'two swans', '--count', '2', '--out', 'fewer', '--json']);
    expect(run.exitCode, run.stderr).toBe(6);
    const result = (JSON.parse(run.stdout) as { ok: boolean; result: RunJson }).result;
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true });
    expect(result.authorization.amount_units).toBe('6000');
    expect(result.spent).toMatchObject({ amount_units: '3000', display: '0.003000 USD' });
    expect(result.delivery).toEqual({ requested: 2, delivered: 1, billed: 1, partial: true });
    expect(result.files).toHaveLength(1);
    expect(run.stderr).toContain('1 of 2 images delivered; billed for 1 (0.003000 USD)');
    const settled = (await authorizations()).find((authorization) => authorization.token_id === result.authorization.token_id);
    expect(settled?.settlement?.amount_units).toBe('3000');

    // Without --json: the same line on stderr, the summary on stdout says partial, exit 6.
    await stack.sandbox.setFaults([{ kind: 'fewer_images', omit: 2, times: 1 }]);
    const human = await lexec(['run', 'three swans', '--count', '3', '--out', 'fewer-human']);
    expect(human.exitCode, human.stderr).toBe(6);
    expect(human.stderr).toContain('1 of 3 images delivered; billed for 1 (0.003000 USD)');
    expect(human.stderr).toContain('run `lexec run` again with --count 2');
    expect(human.stdout).toContain('partial delivery: 1 of 3 images delivered; billed for 1 (0.003000 USD)');
    expect(human.stdout).toContain('spent exactly 0.003000 USD');
  });

  it('billing ambiguous: the run ends with exit 1, execution_in_reconciliation and the reason; nothing is saved', async () => {
    await stack.sandbox.setFaults([{ kind: 'complete_with_error', times: 1 }]);
    const error = expectFailure(await lexec(['run', 'a mirage', '--out', 'ambiguous', '--json']), 1, 'execution_in_reconciliation');
    expect(error.message).toContain('billing_ambiguous');
    // The next step names the commands that resolve it, and the console (issue 26 item 6).
    const id = /Execution (exe_[0-9a-f]{32})/.exec(error.message)?.[1] ?? 'missing';
    expect(error.next_step).toContain(`lexec executor reconciliation resolve ${id} --settle --images-billed <n>`);
    expect(error.next_step).toContain(`lexec executor reconciliation resolve ${id} --release`);
    expect(error.next_step).toContain("console's Reconciliation page (`lexec stack console --profile ");
    expect(error.next_step).not.toContain("executor's reconciliation route");
    // --out is created (and checked) before anything is requested; no image lands in it.
    expect(await readdir(join(work, 'ambiguous'))).toEqual([]);
  });

  it('a submission that provably never reached the provider: exit 1, execution_failed, the authorization released', async () => {
    // The provider is down for this run: the supervisor would restart it at once, so it is held
    // stopped (SIGSTOP; its other children run on) while the sandbox is stopped and the run made.
    const state = await readState(stack.paths);
    const sandbox = state.components.sandbox;
    if (sandbox?.pid == null) throw new Error('the supervisor records no sandbox process');
    process.kill(state.supervisor_pid, 'SIGSTOP');
    try {
      process.kill(sandbox.pid, 'SIGTERM');
      await eventually('the sandbox port to close', async () => ((await canListen(sandbox.port)) ? true : undefined));
      const error = expectFailure(await lexec(['run', 'an empty sky', '--json']), 1, 'execution_failed');
      expect(error.message).toContain('nothing was spent');
    } finally {
      process.kill(state.supervisor_pid, 'SIGCONT');
    }
    const [latest] = await authorizations();
    expect(latest).toMatchObject({ status: 'released', settlement: null });
  });
});
