// The main job until the launcher (`lexec stack start` + `lexec run`) exists: starts a ledger, a
// sandbox provider and an executor as real processes in a temporary directory, bootstraps the
// executor's credentials, has a demo agent request a spend authorization, runs one real
// (sandbox) generation end to end, saves the PNG files, prints the exact amount spent, and stops
// everything again.
//
//   node scripts/sandbox-demo.mjs [--prompt "…"] [--count N] [--out DIR]
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const bin = join(root, 'bin', 'run.js');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(name);
  return index === -1 ? fallback : args[index + 1];
};
const prompt = option('--prompt', 'a lighthouse on a cliff at dusk');
const count = Number(option('--count', '2'));
const out = resolve(option('--out', join(process.cwd(), 'lexec-demo-output')));

const work = mkdtempSync(join(tmpdir(), 'lexec-demo-'));
const children = [];
const say = (line) => process.stderr.write(`${line}\n`);

function start(name, commandArgs, startedEvent) {
  const child = spawn(process.execPath, [bin, ...commandArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  const lines = [];
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => lines.push(...chunk.split('\n').filter(Boolean)));
  return new Promise((resolvePort, reject) => {
    const timer = setInterval(() => {
      for (const line of lines) {
        try {
          const event = JSON.parse(line);
          if (event.event === startedEvent) {
            clearInterval(timer);
            resolvePort(event.port);
            return;
          }
        } catch {
          // a human line
        }
      }
      if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`${name} exited early:\n${lines.slice(-10).join('\n')}`));
      }
    }, 50);
  });
}

function lexec(commandArgs) {
  return JSON.parse(execFileSync(process.execPath, [bin, ...commandArgs, '--json'], { encoding: 'utf8' })).result;
}

async function http(method, url, token, body) {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload = await response.json();
  if (!response.ok) throw new Error(`${method} ${new URL(url).pathname} answered ${response.status}: ${JSON.stringify(payload)}`);
  return payload;
}

async function main() {
  const version = lexec(['version']);
  say(`lexec ${version.product_version} (${version.build_kind} build) — sandbox stack in ${work}`);

  const ledgerConfig = join(work, 'ledger.json');
  writeFileSync(
    ledgerConfig,
    JSON.stringify({
      schema_version: 1,
      http: { port: 0 },
      database_path: join(work, 'ledger', 'ledger.db'),
      admin_capability_path: join(work, 'ledger', 'credentials', 'admin.capability'),
      default_policy: { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' },
    }),
  );
  const ledgerPort = await start('ledger', ['ledger', 'serve', '--config', ledgerConfig], 'ledger_started');
  const ledgerUrl = `http://127.0.0.1:${ledgerPort}`;
  say(`  ledger    ${ledgerUrl}`);

  const sandboxPort = await start('sandbox provider', ['provider', 'sandbox', 'serve', '--port', '0', '--complete-after-ms', '300'], 'sandbox_started');
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  say(`  sandbox   ${sandboxUrl}`);

  const executorConfig = join(work, 'executor.json');
  const template = JSON.parse(readFileSync(join(root, 'templates', 'executor.example.json'), 'utf8'));
  writeFileSync(
    executorConfig,
    JSON.stringify({
      ...template,
      http: { host: '127.0.0.1', port: 0 },
      ledger: { endpoint: ledgerUrl, product_version: version.product_version },
      credentials: { mode: 'managed', state_dir: join(work, 'executor', 'credentials') },
      storage: { database_path: join(work, 'executor', 'executor.db'), artifact_root: join(work, 'executor', 'artifacts'), catalog_path: join(work, 'executor', 'catalog.json') },
      providers: { mode: 'sandbox', base_url: sandboxUrl },
      development_allowance: version.build_kind !== 'release',
    }),
  );
  const adminCapability = join(work, 'ledger', 'credentials', 'admin.capability');
  lexec(['executor', 'credentials', 'bootstrap-managed', '--config', executorConfig, '--ledger-admin-capability', adminCapability]);
  const executorPort = await start('executor', ['executor', 'serve', '--config', executorConfig], 'executor_started');
  const executorUrl = `http://127.0.0.1:${executorPort}`;
  for (let tries = 0; (await fetch(`${executorUrl}/readyz`)).status !== 200; tries += 1) {
    if (tries > 200) throw new Error('the executor did not become ready');
    await new Promise((wait) => setTimeout(wait, 50));
  }
  say(`  executor  ${executorUrl} (ready)`);

  const ledgerArgs = ['--url', ledgerUrl, '--token-file'];
  const agentFile = join(work, 'agent', 'demo.capability');
  lexec(['ledger', 'agents', 'add', '--name', 'demo', '--credential-file', agentFile, ...ledgerArgs, adminCapability]);
  const authorization = lexec(['ledger', 'authorizations', 'request', '--amount-units', '100000', '--purpose', 'sandbox demo', ...ledgerArgs, agentFile]).authorization;
  say(`authorization ${authorization.token_id}: ${authorization.status}, holding ${authorization.amount_units} micro-USD`);

  const caller = readFileSync(join(work, 'executor', 'credentials', 'caller.capability'), 'utf8').trim();
  const target = (await http('GET', `${executorUrl}/v2/execution-targets`, caller)).targets[0];
  const admitted = await http('POST', `${executorUrl}/v2/executions`, caller, {
    schema_version: 2,
    spend_auth_token_id: authorization.token_id,
    input: { prompt, image_count: count, image_size: 'square_hd' },
    input_schema_version: 1,
    target_id: target.target_id,
  });
  const executionId = admitted.execution.execution_id;
  say(`execution ${executionId}: ${admitted.execution.state}`);
  let execution = admitted.execution;
  for (let tries = 0; !['succeeded', 'failed', 'reconciliation'].includes(execution.state); tries += 1) {
    if (tries > 600) throw new Error('the execution did not finish');
    await new Promise((wait) => setTimeout(wait, 100));
    execution = (await http('GET', `${executorUrl}/v1/executions/${executionId}`, caller)).execution;
  }
  say(`execution ${executionId}: ${execution.state}`);
  if (execution.state !== 'succeeded') throw new Error(`the execution ended ${execution.state} (${execution.state_reason})`);

  mkdirSync(out, { recursive: true });
  const { artifacts } = await http('GET', `${executorUrl}/v1/executions/${executionId}/artifacts`, caller);
  const files = [];
  for (const artifact of artifacts) {
    const response = await fetch(`${executorUrl}${artifact.content_path}`, { headers: { authorization: `Bearer ${caller}` } });
    const file = join(out, `${executionId}-${artifact.ordinal}.png`);
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    files.push(file);
  }
  const settled = lexec(['ledger', 'authorizations', 'show', authorization.token_id, ...ledgerArgs, adminCapability]).authorization;
  const units = BigInt(settled.settlement.amount_units);
  const dollars = `${units / 1_000_000n}.${(units % 1_000_000n).toString().padStart(6, '0')}`;
  say(`spent exactly ${dollars} USD (${units} micro-USD), settled at the ledger as ${settled.settlement.settlement_id}`);
  for (const file of files) say(`  ${file}`);
  process.stdout.write(`${JSON.stringify({ execution_id: executionId, spent_units: units.toString(), units_scale: 6, currency: 'USD', files })}\n`);
}

function stopAll() {
  for (const child of children.reverse()) if (child.exitCode === null) child.kill('SIGTERM');
}

try {
  await main();
} catch (error) {
  process.stderr.write(`demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  stopAll();
  await Promise.all(children.map((child) => (child.exitCode === null ? new Promise((done) => child.once('exit', done)) : undefined)));
  rmSync(work, { recursive: true, force: true });
}
