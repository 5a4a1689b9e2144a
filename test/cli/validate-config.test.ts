import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listTree, makeTempDir, removeDir, runLexec, type CliRun } from '../support/cli.js';
import { liveConfig, sandboxConfig, TEMPLATES_DIR, type JsonObject } from '../support/config-fixtures.js';

interface JsonFailure {
  ok: false;
  error: { kind: string; code: string; message: string; next_step: string; issues: { path: string; message: string }[] };
}

let root: string;

beforeEach(async () => {
  root = await makeTempDir();
});

afterEach(async () => {
  await removeDir(root);
});

async function writeConfig(config: JsonObject | string, name = 'executor.json'): Promise<string> {
  const path = join(root, name);
  await writeFile(path, typeof config === 'string' ? config : JSON.stringify(config, null, 2));
  return path;
}

function failure(run: CliRun): JsonFailure {
  const document = JSON.parse(run.stdout) as JsonFailure;
  expect(document.ok).toBe(false);
  return document;
}

/** Points every state path of a configuration into `stateDir`. */
function withStateIn(config: JsonObject, stateDir: string): JsonObject {
  config.storage = {
    database_path: join(stateDir, 'executor.db'),
    artifact_root: join(stateDir, 'artifacts'),
    catalog_path: join(stateDir, 'provider-catalog.json'),
  };
  config.credentials = { mode: 'managed', state_dir: join(stateDir, 'credentials') };
  return config;
}

describe('validate-config accepts', () => {
  it('the shipped example, by absolute path', async () => {
    const path = join(TEMPLATES_DIR, 'executor.example.json');
    const human = await runLexec(['executor', 'validate-config', '--config', path]);
    expect(human.exitCode).toBe(0);
    expect(human.stderr).toBe('');
    expect(human.stdout).toContain(`${path} is a valid executor configuration (schema version 3)`);

    const json = await runLexec(['executor', 'validate-config', '--config', path, '--json']);
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      json_version: 1,
      command: 'executor validate-config',
      ok: true,
      result: {
        config_path: path,
        schema_version: 3,
        valid: true,
        summary: {
          http_listen: '127.0.0.1:7410',
          ledger_product_version: 'v0.3.0',
          credentials_mode: 'explicit',
          workflow_engine_mode: 'embedded',
          providers_mode: 'sandbox',
          execution_target_ids: ['lexec:target:v1:flux-schnell'],
          development_allowance: false,
        },
      },
    });
  });
});

describe('validate-config touches nothing', () => {
  let servers: Server[] = [];
  let connections = 0;

  /** A loopback TCP server that counts every connection made to it. */
  async function countingServer(): Promise<number> {
    const server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return address.port;
  }

  afterEach(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    servers = [];
    connections = 0;
  });

  it('creates no file or directory and connects to no ledger or provider', async () => {
    const home = join(root, 'home');
    const cwd = join(root, 'cwd');
    const state = join(root, 'state');
    const tmp = join(root, 'tmp');
    for (const dir of [home, cwd, state, tmp]) await mkdir(dir);
    const ledgerPort = await countingServer();
    const providerPort = await countingServer();
    const config = withStateIn(sandboxConfig(), state);
    (config.ledger as JsonObject).endpoint = `http://127.0.0.1:${ledgerPort}`;
    config.providers = { mode: 'sandbox', base_url: `http://127.0.0.1:${providerPort}` };
    const path = await writeConfig(config);

    const env = { TMPDIR: tmp, XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, '.local/share'), XDG_CACHE_HOME: join(home, '.cache') };
    for (const extra of [[], ['--json']]) {
      const run = await runLexec(['executor', 'validate-config', '--config', path, ...extra], { home, cwd, env });
      expect(run.exitCode).toBe(0);
    }

    expect(await listTree(home)).toEqual([]);
    expect(await listTree(cwd)).toEqual([]);
    expect(await listTree(state)).toEqual([]);
    expect(await listTree(tmp)).toEqual([]);
    expect(connections).toBe(0);
  });

  it('validates with an unreachable ledger', async () => {
    const closedPort = await countingServer();
    await new Promise((resolve) => servers.pop()?.close(resolve));
    const config = sandboxConfig();
    (config.ledger as JsonObject).endpoint = `http://127.0.0.1:${closedPort}`;
    const run = await runLexec(['executor', 'validate-config', '--config', await writeConfig(config)]);
    expect(run.exitCode).toBe(0);
  });

  it('reads no secret: a file secret that would block any reader is never opened', async () => {
    // A FIFO blocks whoever opens it for reading until a writer appears; none ever does.
    const secretPath = join(root, 'fal.key');
    execFileSync('mkfifo', ['-m', '600', secretPath]);
    const config = liveConfig();
    (config.providers as JsonObject).credential = { store: 'file', path: secretPath };
    config.credentials = {
      mode: 'explicit',
      caller: { store: 'file', path: secretPath },
      ledger: { store: 'keychain', service: 'lexec', account: 'executor-ledger' },
    };
    const run = await runLexec(['executor', 'validate-config', '--config', await writeConfig(config)], { timeoutMs: 15_000 });
    expect(run.exitCode).toBe(0);
  });
});

describe('validate-config rejects', () => {
  it('a relative path (usage error, exit 2)', async () => {
    const run = await runLexec(['executor', 'validate-config', '--config', 'executor.json', '--json'], { cwd: root });
    expect(run.exitCode).toBe(2);
    expect(failure(run).error).toMatchObject({ kind: 'usage', code: 'config_path_not_absolute' });
  });

  it('a missing file, naming it', async () => {
    const path = join(root, 'missing.json');
    const human = await runLexec(['executor', 'validate-config', '--config', path]);
    expect(human.exitCode).toBe(1);
    expect(human.stderr).toContain(`The configuration file ${path} does not exist.`);
    const json = await runLexec(['executor', 'validate-config', '--config', path, '--json']);
    expect(json.exitCode).toBe(1);
    expect(failure(json).error).toMatchObject({ kind: 'user', code: 'config_not_found' });
  });

  it('a directory', async () => {
    const run = await runLexec(['executor', 'validate-config', '--config', root, '--json']);
    expect(run.exitCode).toBe(1);
    expect(failure(run).error.code).toBe('config_not_a_file');
  });

  it('invalid JSON, with the position and without quoting the document', async () => {
    const path = await writeConfig('{\n  "schema_version": 3,\n  "http": { "port": hunter2 }\n}\n');
    const human = await runLexec(['executor', 'validate-config', '--config', path]);
    expect(human.exitCode).toBe(1);
    expect(human.stderr).toContain(`The configuration file ${path} is not valid JSON: syntax error at line 3, column 21`);
    expect(human.stderr).not.toContain('hunter2');
    const json = await runLexec(['executor', 'validate-config', '--config', path, '--json']);
    expect(json.exitCode).toBe(1);
    expect(failure(json).error.code).toBe('config_not_json');
    expect(json.stdout).not.toContain('hunter2');
  });

  it('an empty file', async () => {
    const run = await runLexec(['executor', 'validate-config', '--config', await writeConfig(''), '--json']);
    expect(run.exitCode).toBe(1);
    expect(failure(run).error.code).toBe('config_not_json');
  });

  it('unknown fields and wrong types, each with its field path', async () => {
    const config = sandboxConfig();
    config.surprise = true;
    (config.http as JsonObject).port = '7410';
    (config.storage as JsonObject).database_path = 'executor.db';
    const path = await writeConfig(config);

    const human = await runLexec(['executor', 'validate-config', '--config', path]);
    expect(human.exitCode).toBe(1);
    expect(human.stderr).toContain(`The configuration file ${path} has 3 problems.`);
    expect(human.stderr).toContain('surprise: unknown field');
    expect(human.stderr).toContain('http.port: must be a TCP port number');
    expect(human.stderr).toContain('storage.database_path: must be an absolute path');

    const json = await runLexec(['executor', 'validate-config', '--config', path, '--json']);
    expect(json.exitCode).toBe(1);
    const { error } = failure(json);
    expect(error.code).toBe('config_invalid');
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(['http.port', 'storage.database_path', 'surprise']);
  });

  it('a raw secret, without printing it anywhere', async () => {
    const secret = 'lexec_cap_Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9';
    const config = sandboxConfig();
    ((config.execution_targets as JsonObject[])[0] as JsonObject).label = secret;
    const path = await writeConfig(config);
    for (const extra of [[], ['--json']]) {
      const run = await runLexec(['executor', 'validate-config', '--config', path, ...extra]);
      expect(run.exitCode).toBe(1);
      expect(run.stdout + run.stderr).toContain('execution_targets[0].label');
      expect(run.stdout + run.stderr).not.toContain(secret);
    }
  });
});
