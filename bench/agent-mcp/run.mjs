// Benchmark: `generate_images` of one image through `lexec agent mcp` against `lexec run` of the
// same job, wall time, on one sandbox stack. Prints figures; asserts nothing about timings and
// exits 0 whatever they are (a non-zero exit means the benchmark itself could not run).
//
//   node bench/agent-mcp/run.mjs [--rounds N] [--dir PATH]
//   (from the repository root, after `npm run build`)
//
// One fresh temporary LEXEC_HOME under --dir (default the OS temp dir) with a sandbox profile
// from profiles.example/sandbox.toml on free ports (the sandbox completes each job 300 ms after
// submission, as shipped), started with the real `lexec stack start`. Then --rounds rounds
// (default 10, after 2 warm-up rounds), each of three measurements in turn, same prompt, one
// square_hd image:
//
//   run      `lexec run "<prompt>" --count 1 --out <tmp> --json`: spawn to exit 0 (the CLI's own
//            start included: that is what a caller of `lexec run` pays every time);
//   mcp      `tools/call generate_images` on an MCP session that is already up (what an agent
//            pays per call: the host keeps the server running), request to answer;
//   mcp-cold spawn `lexec agent mcp` + initialize + the same call + close (a host starting it
//            for one call), for reference.
//
// Every MCP answer is checked: status succeeded, one image, spent 3000 micro-units.
// Target (information only): mcp median within 1.2x of run median. Last line: `RESULT {json}`.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { percentile } from '../lib/measure.mjs';
import { sandboxStackHome } from '../lib/sandbox-home.mjs';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(dirname(benchDir));
const bin = join(root, 'bin', 'run.js');
const TARGET = 1.2;
const PROMPT = 'a lighthouse on a cliff at dusk';

function fail(message) {
  process.stderr.write(`bench/agent-mcp: ${message}\n`);
  process.exitCode = 1;
  throw new Error(message);
}

function parseArgs(argv) {
  const options = { rounds: 10, dir: tmpdir() };
  for (let index = 0; index < argv.length; index += 1) {
    const [name, inline] = argv[index].includes('=') ? argv[index].split(/=(.*)/s) : [argv[index], undefined];
    if (name === '--help' || name === '-h') {
      process.stdout.write('usage: node bench/agent-mcp/run.mjs [--rounds N] [--dir PATH]\n');
      process.exit(0);
    }
    const value = inline ?? argv[++index];
    if (name === '--dir') options.dir = value;
    else if (name === '--rounds' && value !== undefined && /^\d+$/.test(value) && Number(value) >= 1) options.rounds = Number(value);
    else fail(`unknown or invalid argument ${JSON.stringify(argv[index])}`);
  }
  return options;
}

const median = (values) => percentile([...values].sort((a, b) => a - b), 50);
const p90 = (values) => percentile([...values].sort((a, b) => a - b), 90);
const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;

function lexecSync(args, env, label) {
  const result = spawnSync(process.execPath, [bin, ...args], { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 * 1024 * 1024 });
  if (result.status !== 0) fail(`${label} exited ${result.status ?? result.signal}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout.toString();
}

async function connect(env) {
  const client = new Client({ name: 'lexec-bench', version: '1.0.0' });
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'agent', 'mcp'], env, stderr: 'ignore', cwd: root });
  await client.connect(transport);
  return client;
}

async function generate(client) {
  const result = await client.callTool({ name: 'generate_images', arguments: { prompt: PROMPT, image_count: 1 } }, undefined, { timeout: 120_000 });
  const answer = result.structuredContent;
  if (result.isError || answer?.status !== 'succeeded' || answer.images.length !== 1 || answer.spent?.amount_units !== '3000') {
    fail(`generate_images did not succeed with one image and 3000 spent: ${JSON.stringify(result.isError ? result.content : answer)}`);
  }
}

// ---------------------------------------------------------------------------------------------

const options = parseArgs(process.argv.slice(2));
if (!existsSync(join(root, 'dist')) || !existsSync(join(root, 'oclif.manifest.json'))) fail('dist or oclif.manifest.json missing: run `npm run build` first.');
const { home, env } = await sandboxStackHome(options.dir, 'lexec-bench-agent-');
const out = join(home, 'out');

const figures = { run: [], mcp: [], cold: [] };
let session;
try {
  process.stderr.write('starting the sandbox stack…\n');
  lexecSync(['stack', 'start', '--json'], env, 'stack start');
  session = await connect(env);
  const rounds = options.rounds + 2;
  for (let round = 0; round < rounds; round += 1) {
    const warm = round < 2;
    process.stderr.write(`${warm ? 'warm-up' : 'round'} ${warm ? round + 1 : round - 1}/${warm ? 2 : options.rounds}\n`);

    let start = process.hrtime.bigint();
    const run = JSON.parse(lexecSync(['run', PROMPT, '--count', '1', '--out', out, '--json'], env, 'lexec run'));
    const runMs = ms(start);
    if (run.result?.spent?.amount_units !== '3000' || run.result.files.length !== 1) fail(`lexec run did not spend 3000 for one file: ${JSON.stringify(run)}`);

    start = process.hrtime.bigint();
    await generate(session);
    const mcpMs = ms(start);

    start = process.hrtime.bigint();
    const cold = await connect(env);
    await generate(cold);
    await cold.close();
    const coldMs = ms(start);

    if (!warm) {
      figures.run.push(runMs);
      figures.mcp.push(mcpMs);
      figures.cold.push(coldMs);
    }
  }
} finally {
  await session?.close().catch(() => undefined);
  spawnSync(process.execPath, [bin, 'stack', 'stop', '--json'], { env, cwd: root, stdio: 'ignore' });
  rmSync(home, { recursive: true, force: true });
}

const row = (label, values) => `${label.padEnd(44)} ${median(values).toFixed(0).padStart(7)} ms ${p90(values).toFixed(0).padStart(7)} ms`;
const ratio = median(figures.mcp) / median(figures.run);
process.stdout.write(
  [
    `bench/agent-mcp: one square_hd image on the sandbox stack (complete_after_ms 300), ${options.rounds} rounds`,
    `machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), Node.js ${process.version}`,
    '',
    `${'measurement'.padEnd(44)} ${'median'.padStart(10)} ${'p90'.padStart(10)}`,
    row('lexec run (spawn to exit)', figures.run),
    row('generate_images on a running MCP session', figures.mcp),
    row('generate_images with a fresh MCP session', figures.cold),
    '',
    `generate_images / lexec run (medians): ${ratio.toFixed(2)} (target <= ${TARGET}: ${ratio <= TARGET ? 'met' : 'NOT met'})`,
    '',
  ].join('\n'),
);
const summary = (values) => ({ median_ms: Number(median(values).toFixed(1)), p90_ms: Number(p90(values).toFixed(1)) });
process.stdout.write(
  `RESULT ${JSON.stringify({
    benchmark: 'agent-mcp',
    rounds: options.rounds,
    lexec_run: summary(figures.run),
    generate_images: summary(figures.mcp),
    generate_images_fresh_session: summary(figures.cold),
    ratio: Number(ratio.toFixed(3)),
    target: TARGET,
    met: ratio <= TARGET,
  })}\n`,
);
