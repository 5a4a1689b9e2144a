// One cycle client of bench/ledger-hosts, run by it inside a lab host's network namespace
// (`ip netns exec <ns> node bench/ledger-hosts/client.mjs …`). It speaks JSON lines on stdout and
// takes one word a line on stdin, so that the clients on both hosts measure over the same window:
//
//   set-up (an agent of its own and its agent, approver and executor capabilities, registered
//   with the admin capability read from --admin-file), W warm-up cycles at concurrency C
//                                    → {"ready":true}
//   "go"   N measured cycles at C    → {"done":{wall_ms, client_cpu_ms, samples:[{step: ms}…]}}
//   "verify" every cycle read back   → {"verified":{settled,total}}, then exit 0
//
// Any failure: the message on stderr and exit 1. With --ca it speaks HTTPS and trusts that CA only.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BenchError, fail, parseCount } from '../lib/harness.mjs';
import { makeClient, runCycles, setUp, verify } from '../ledger-cycles/cycles.mjs';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

function parseArgs(argv) {
  const options = { host: null, port: null, ca: null, adminFile: null, concurrency: 1, cycles: 500, warmup: 50, name: 'bench-ledger-hosts' };
  for (let index = 0; index < argv.length; index += 1) {
    const name = argv[index];
    const value = argv[++index];
    if (value === undefined) fail(`${name} needs a value.`);
    if (name === '--host') options.host = value;
    else if (name === '--port') options.port = parseCount(name, value, 1);
    else if (name === '--ca') options.ca = value;
    else if (name === '--admin-file') options.adminFile = value;
    else if (name === '--concurrency') options.concurrency = parseCount(name, value, 1);
    else if (name === '--cycles') options.cycles = parseCount(name, value, 1);
    else if (name === '--warmup') options.warmup = parseCount(name, value, 0);
    else if (name === '--name') options.name = value;
    else fail(`unknown argument ${JSON.stringify(name)}`);
  }
  if (options.host === null || options.port === null || options.adminFile === null) fail('--host, --port and --admin-file are required.');
  return options;
}

const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const awaitWord = async (word) => {
    const next = await lines.next();
    if (next.done || next.value.trim() !== word) fail(`expected "${word}" on stdin, got ${next.done ? 'the end' : JSON.stringify(next.value)}.`);
  };
  const capability = await import(pathToFileURL(join(root, 'dist', 'credentials', 'capability.js')).href);
  const adminToken = readFileSync(options.adminFile, 'utf8').trim();
  const client = makeClient('http', { host: options.host, port: options.port, ca: options.ca === null ? null : readFileSync(options.ca, 'utf8') });
  try {
    const actors = await setUp(client, adminToken, capability, null, options.name);
    const ids = [];
    if (options.warmup > 0) await runCycles(client, actors, options.concurrency, options.warmup, ids);
    say({ ready: true });
    await awaitWord('go');
    const run = await runCycles(client, actors, options.concurrency, options.cycles, ids);
    say({ done: { wall_ms: run.wallMs, client_cpu_ms: run.clientCpuMs, samples: run.samples } });
    await awaitWord('verify');
    const verification = await verify(client, adminToken, actors.agentId, ids);
    say({ verified: verification });
  } finally {
    client.close();
  }
}

try {
  await main();
  process.exit(0);
} catch (error) {
  process.stderr.write(`bench/ledger-hosts client: ${error instanceof BenchError ? error.message : (error?.stack ?? String(error))}\n`);
  process.exit(1);
}
