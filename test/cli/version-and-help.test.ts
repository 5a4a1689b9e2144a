import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { BIN, PACKAGE_ROOT, runLexec } from '../support/cli.js';

function gitHead(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: PACKAGE_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

describe('lexec version', () => {
  it('--json prints one versioned document with the four facts', async () => {
    const run = await runLexec(['version', '--json']);
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe('');
    const document = JSON.parse(run.stdout) as { json_version: number; command: string; ok: boolean; result: Record<string, string> };
    expect(document).toMatchObject({ json_version: 1, command: 'version', ok: true });
    expect(Object.keys(document.result).sort()).toEqual(['build_kind', 'commit', 'contract_version', 'product', 'product_version']);
    expect(document.result.product_version).toBe(`v${pkg.version}`);
    expect(document.result.contract_version).toBe('v4.5');
    expect(document.result.commit).toMatch(/^([0-9a-f]{40}|unknown)$/);
    expect(['release', 'development']).toContain(document.result.build_kind);
  });

  it.skipIf(gitHead() === null)('reports the full commit of the checkout it was built from', async () => {
    const run = await runLexec(['version', '--json']);
    const { result } = JSON.parse(run.stdout) as { result: { commit: string } };
    expect(result.commit).toBe(gitHead());
  });

  it('prints the human result on stdout and nothing on stderr', async () => {
    const run = await runLexec(['version']);
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain(`lexec v${pkg.version}`);
    expect(run.stdout).toContain('contract  v4.5');
  });
});

describe('lexec --help', () => {
  it('lists the topics and commands', async () => {
    const run = await runLexec(['--help']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/TOPICS\s+agent\s+The agent-protocol client: an MCP server[\s\S]*\n\s+executor\s+Run and configure the executor service\./);
    expect(run.stdout).toMatch(/COMMANDS[\s\S]*version/);
  });

  it('shows the executor topic with validate-config', async () => {
    const run = await runLexec(['executor', '--help']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('executor validate-config');
  });
});

describe('usage errors', () => {
  it('an unknown command exits 2 through the same error handler', async () => {
    const human = await runLexec(['no-such-command']);
    expect(human.exitCode).toBe(2);
    expect(human.stderr).toContain('Unknown command.');
    const json = await runLexec(['no-such-command', '--json']);
    expect(json.exitCode).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { kind: 'usage', code: 'unknown_command' } });
  });

  it('an unknown command suggests the nearest one, and `stack restart` says stop, then start', async () => {
    const restart = JSON.parse((await runLexec(['stack', 'restart', '--json'])).stdout) as { error: { code: string; next_step: string } };
    expect(restart.error.code).toBe('unknown_command');
    expect(restart.error.next_step).toContain('run `lexec stack stop`, then `lexec stack start`');
    const typo = JSON.parse((await runLexec(['ledger', 'agent', 'list', '--json'])).stdout) as { error: { next_step: string } };
    expect(typo.error.next_step).toContain('Did you mean `lexec ledger agents list`?');
    const far = JSON.parse((await runLexec(['frobnicate', '--json'])).stdout) as { error: { next_step: string } };
    expect(far.error.next_step).toBe('Run lexec --help to list the commands.');
  });

  it('help or a result piped into `head` exits cleanly: no EPIPE error, no unsettled await, exit 0', async () => {
    for (const args of ['--help', 'stack --help', 'version']) {
      const run = await execa('bash', ['-c', `"${process.execPath}" "${BIN}" ${args} | head -1; echo "exit=\${PIPESTATUS[0]}" >&2`], { reject: false, env: { PATH: process.env.PATH ?? '', HOME: tmpdir() }, extendEnv: false });
      expect(run.stdout.split('\n')).toHaveLength(1);
      expect(run.stderr.trim()).toBe('exit=0');
    }
  });

  it('an unknown flag exits 2 and never repeats the value typed with it', async () => {
    const run = await runLexec(['version', '--token=s3cr3t-value', '--json']);
    expect(run.exitCode).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, error: { code: 'unknown_flag', message: 'Unknown flag: --token.' } });
    expect(run.stdout + run.stderr).not.toContain('s3cr3t-value');
  });

  it('a stray argument exits 2 without being echoed', async () => {
    const run = await runLexec(['executor', 'validate-config', '--config', '/etc/lexec/executor.json', 'stray-s3cr3t']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('1 unexpected positional argument.');
    expect(run.stderr).not.toContain('stray-s3cr3t');
  });

  it('a bad --color value exits 2 and names the allowed values', async () => {
    const run = await runLexec(['version', '--color', 'pink', '--json']);
    expect(run.exitCode).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({
      error: { code: 'invalid_flag_value', message: '--color must be one of: auto, always, never.' },
    });
  });

  it('a flag given last with no value exits 2 naming the flag, for a plain flag and one with a set of values (it was an internal error, exit 70)', async () => {
    const valueless = await runLexec(['ledger', 'audit', '--json', '--since']);
    expect(valueless.exitCode).toBe(2);
    expect(JSON.parse(valueless.stdout)).toMatchObject({ ok: false, error: { kind: 'usage', code: 'missing_flag_value', message: '--since needs a value after it.' } });
    const optionless = await runLexec(['version', '--json', '--color']);
    expect(optionless.exitCode).toBe(2);
    expect(JSON.parse(optionless.stdout)).toMatchObject({ ok: false, error: { code: 'missing_flag_value', message: '--color needs one of: auto, always, never.' } });
    const human = await runLexec(['ledger', 'webhooks', 'deliveries', '--event']);
    expect([human.exitCode, human.stderr]).toEqual([2, expect.stringContaining('--event needs a value after it.')]);
    expect(human.stderr).not.toContain('Internal error');
  });

  it('a missing required flag exits 2', async () => {
    const run = await runLexec(['executor', 'validate-config', '--json']);
    expect(run.exitCode).toBe(2);
    const document = JSON.parse(run.stdout) as { error: { kind: string; message: string } };
    expect(document.error.kind).toBe('usage');
    expect(document.error.message).toContain('config');
  });
});
