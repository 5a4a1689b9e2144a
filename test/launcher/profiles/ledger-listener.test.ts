import { describe, expect, it } from 'vitest';
import type { FieldIssue } from '../../../src/errors.js';
import { parseProfile } from '../../../src/launcher/profiles/profile-store.js';
import { listenHostOf, renderGeneration } from '../../../src/launcher/generations/render-generation.js';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { stackHandoff } from '../../../src/launcher/handoff/handoff.js';
import type { SupervisorState } from '../../../src/launcher/supervisor/supervisor-state.js';
import { readBuildInfo } from '../../../src/build-info.js';
import { exampleTable, profileRefusal, toToml, type TomlTable } from '../../support/example-profiles.js';

/*
 * Where a host's own ledger listens (`[ledger.http]`, docs/deployment.md "The ledger host's
 * listener"): a ledger host (or an all-in-one) on its own address over TLS, rendered to
 * ledger.json's http section, the manifest's endpoint and CA, and the handoff its clients use.
 */

const SOURCE = '/home/operator/.lexec/profiles/test/profile.toml';
const TLS = { certificate_file: '/etc/lexec/server.pem', key_file: '/etc/lexec/server.key', ca_file: '/etc/lexec/ca.pem' };

function ledgerHost(http: TomlTable | undefined): TomlTable {
  const example = exampleTable('sandbox');
  const ledger = { ...(example.ledger as TomlTable), ...(http === undefined ? {} : { http }) };
  return { schema_version: 1, kind: 'ledger', ports: { ledger: 7400 }, ledger };
}

async function issuesOf(table: TomlTable): Promise<FieldIssue[]> {
  return [...(await profileRefusal(toToml(table), SOURCE)).issues];
}

const paths = profilePaths('/home/operator/.lexec', 'test');
/** A rendered runtime file as JSON. */
const fileOf = (rendered: { files: Readonly<Partial<Record<string, string>>> }, name: 'ledger.json' | 'executor.json') => JSON.parse(rendered.files[name] ?? '') as { http: unknown; ledger: unknown };
const render = async (table: TomlTable) => renderGeneration({ profile: await parseProfile(toToml(table), SOURCE), paths, build: readBuildInfo(), now: new Date(0) });

function readyState(manifest: Awaited<ReturnType<typeof render>>['manifest'], own: SupervisorState['own_ledger']): SupervisorState {
  const component = { state: 'running' as const, pid: 10, pid_start_ticks: 1, port: 7400, started_at: null, ready_at: null, restarts: 0, last_exit: null, probe_error: null };
  return {
    state_version: 1,
    profile: 'test',
    generation_id: manifest.generation_id,
    supervisor_pid: 9,
    supervisor_pid_start_ticks: 1,
    started_at: new Date(0).toISOString(),
    phase: 'running',
    step: null,
    failure: null,
    agent: null,
    components: { ledger: component },
    ...(own === undefined ? {} : { own_ledger: own }),
  };
}

describe("a ledger host's listener: [ledger.http]", () => {
  it('renders the ledger on its own address over TLS, with its endpoint and CA in the manifest and the handoff', async () => {
    const rendered = await render(ledgerHost({ host: '10.0.0.5', tls: TLS }));
    expect(JSON.parse(rendered.files['ledger.json'] ?? '')).toMatchObject({
      http: { host: '10.0.0.5', port: 7400, allow_non_loopback: true, tls: { certificate_file: TLS.certificate_file, key_file: TLS.key_file } },
    });
    // The CA is the clients', not the server's: it is not in the ledger's configuration.
    expect(JSON.stringify(fileOf(rendered, 'ledger.json').http)).not.toContain('ca.pem');
    expect(rendered.manifest.components.ledger).toEqual({ port: 7400, endpoint: 'https://10.0.0.5:7400', ca_file: TLS.ca_file });
    expect(listenHostOf(rendered.manifest, 'ledger')).toBe('10.0.0.5');

    const handoff = stackHandoff(paths, readyState(rendered.manifest, { endpoint: 'https://10.0.0.5:7400', ca_file: TLS.ca_file }), new Date(0));
    expect(handoff.ledger).toEqual({ endpoint: 'https://10.0.0.5:7400', ca_file: TLS.ca_file });
  });

  it('without [ledger.http] the ledger renders on loopback as before (no endpoint in the manifest), and the handoff names http://127.0.0.1', async () => {
    const before = await render(ledgerHost(undefined));
    expect(fileOf(before, 'ledger.json').http).toEqual({ host: '127.0.0.1', port: 7400 });
    expect(before.manifest.components.ledger).toEqual({ port: 7400 });
    expect(listenHostOf(before.manifest, 'ledger')).toBe('127.0.0.1');
    expect(stackHandoff(paths, readyState(before.manifest, undefined), new Date(0)).ledger).toEqual({ endpoint: 'http://127.0.0.1:7400' });
    // TLS on loopback: https://127.0.0.1, verified against the CA (the certificate must name 127.0.0.1).
    const loopbackTls = await render(ledgerHost({ tls: TLS }));
    expect(loopbackTls.manifest.components.ledger).toEqual({ port: 7400, endpoint: 'https://127.0.0.1:7400', ca_file: TLS.ca_file });
  });

  it('an IPv6 address is bracketed in the endpoint', async () => {
    const rendered = await render(ledgerHost({ host: 'fd00::5', tls: TLS }));
    expect(rendered.manifest.components.ledger?.endpoint).toBe('https://[fd00::5]:7400');
    expect(listenHostOf(rendered.manifest, 'ledger')).toBe('fd00::5');
  });

  it('a non-loopback host without TLS is refused with tls_required at its path', async () => {
    const issues = await issuesOf(ledgerHost({ host: '10.0.0.5' }));
    expect(issues.map((issue) => issue.path)).toEqual(['ledger.http.tls']);
    expect(issues[0]?.message).toContain('tls_required');
  });

  it('a wildcard host, a TLS table without its CA, relative files and unknown keys are refused with their paths', async () => {
    expect((await issuesOf(ledgerHost({ host: '0.0.0.0', tls: TLS }))).map((issue) => issue.path)).toEqual(['ledger.http.host']);
    const withoutCa = { certificate_file: TLS.certificate_file, key_file: TLS.key_file };
    expect((await issuesOf(ledgerHost({ host: '10.0.0.5', tls: withoutCa }))).map((issue) => issue.path)).toEqual(['ledger.http.tls.ca_file']);
    const relative = (await issuesOf(ledgerHost({ host: '10.0.0.5', tls: { ...TLS, key_file: 'server.key' }, port: 7400 }))).map((issue) => issue.path).sort();
    expect(relative).toEqual(['ledger.http.port', 'ledger.http.tls.key_file']);
  });

  it("an executor host may not set [ledger.http]: its ledger is the ledger host's", async () => {
    const table = exampleTable('sandbox');
    table.ports = { executor: 7410, sandbox: 7420 };
    table.ledger = { url: 'https://ledger.example:7400', ca_file: '/etc/lexec/ca.pem', http: { host: '10.0.0.6', tls: TLS } };
    const issues = await issuesOf(table);
    expect(issues.map((issue) => issue.path)).toEqual(['ledger.http']);
    expect(issues[0]?.message).toContain("belongs to the ledger host's profile");
  });

  it("an all-in-one profile with [ledger.http] gives its executor the same endpoint and CA", async () => {
    const table = exampleTable('sandbox');
    (table.ledger as TomlTable).http = { host: '10.0.0.5', tls: TLS };
    const rendered = await render(table);
    const port = (table.ports as TomlTable).ledger as number;
    expect(fileOf(rendered, 'executor.json').ledger).toMatchObject({ endpoint: `https://10.0.0.5:${String(port)}`, ca_file: TLS.ca_file });
    expect(fileOf(rendered, 'ledger.json').http).toMatchObject({ host: '10.0.0.5', allow_non_loopback: true });
  });
});
