import { describe, expect, it } from 'vitest';
import type { FieldIssue } from '../../../src/errors.js';
import { parseProfile } from '../../../src/launcher/profiles/profile-store.js';
import { renderGeneration } from '../../../src/launcher/generations/render-generation.js';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { readBuildInfo } from '../../../src/build-info.js';
import { exampleTable, profileRefusal, toToml, type TomlTable } from '../../support/example-profiles.js';

/*
 * The three roles' profiles (src/launcher/profiles/profile-schema.ts; docs/deployment.md "Roles"):
 * a ledger host (kind = "ledger"), an executor host ([ledger] url), the all-in-one. Each refusal
 * names its field path; each role renders only its own components.
 */

const SOURCE = '/home/operator/.lexec/profiles/test/profile.toml';

function ledgerHost(change: (table: TomlTable) => void = () => undefined): TomlTable {
  const example = exampleTable('sandbox');
  const table: TomlTable = { schema_version: 1, kind: 'ledger', ports: { ledger: 7400 }, ledger: example.ledger };
  change(table);
  return table;
}

function executorHost(change: (table: TomlTable) => void = () => undefined): TomlTable {
  const table = exampleTable('sandbox');
  table.ports = { executor: 7410, sandbox: 7420 };
  table.ledger = { url: 'https://ledger.example:7400', ca_file: '/etc/lexec/ca.pem' };
  change(table);
  return table;
}

async function issuesOf(table: TomlTable): Promise<FieldIssue[]> {
  return [...(await profileRefusal(toToml(table), SOURCE)).issues];
}

const paths = (issues: FieldIssue[]) => issues.map((issue) => issue.path).sort();
const render = async (table: TomlTable) => renderGeneration({ profile: await parseProfile(toToml(table), SOURCE), paths: profilePaths('/home/operator/.lexec', 'test'), build: readBuildInfo(), now: new Date(0) });

describe('profiles for the three roles', () => {
  it('a ledger host renders the ledger only: no executor.json, no executor or sandbox component', async () => {
    const rendered = await render(ledgerHost());
    expect(Object.keys(rendered.files)).toEqual(['ledger.json']);
    expect(rendered.manifest.kind).toBe('ledger');
    expect(Object.keys(rendered.manifest.components)).toEqual(['ledger']);
    expect(rendered.manifest.remote_ledger).toBeUndefined();
  });

  it('a ledger host with anything of an executor is refused key by key', async () => {
    const issues = await issuesOf(
      ledgerHost((table) => {
        table.ports = { ledger: 7400, executor: 7410, sandbox: 7420 };
        const example = exampleTable('sandbox');
        table.execution_targets = example.execution_targets;
        table.workflow_engine = example.workflow_engine;
        table.agent = { name: 'local' };
        (table.ledger as TomlTable).url = 'https://ledger.example:7400';
      }),
    );
    expect(paths(issues)).toEqual(['agent', 'execution_targets', 'ledger.url', 'ports.executor', 'ports.sandbox', 'workflow_engine']);
    expect(issues.find((issue) => issue.path === 'ports.executor')?.message).toContain('kind = "ledger" runs no executor');
  });

  it('a ledger host needs its port and its default policy', async () => {
    expect(paths(await issuesOf(ledgerHost((table) => ((table.ports = {}), (table.ledger = {})))))).toEqual(['ledger.default_policy', 'ports.ledger']);
  });

  it('an executor host renders the executor and sandbox against the remote ledger, with its CA file, and no ledger.json', async () => {
    const rendered = await render(executorHost());
    expect(Object.keys(rendered.files)).toEqual(['executor.json']);
    expect(Object.keys(rendered.manifest.components).sort()).toEqual(['executor', 'sandbox']);
    expect(rendered.manifest.remote_ledger).toEqual({ url: 'https://ledger.example:7400', ca_file: '/etc/lexec/ca.pem' });
    expect(JSON.parse(rendered.files['executor.json'] ?? '')).toMatchObject({ ledger: { endpoint: 'https://ledger.example:7400', ca_file: '/etc/lexec/ca.pem' } });
  });

  it("an executor host with the ledger host's settings or its own ledger port is refused with their paths", async () => {
    const issues = await issuesOf(
      executorHost((table) => {
        table.ports = { ledger: 7400, executor: 7410, sandbox: 7420 };
        table.ledger = { ...exampleTable('sandbox').ledger as TomlTable, url: 'https://ledger.example:7400', time_zone: 'UTC', webhook_delivered_retention_days: 7 };
      }),
    );
    expect(paths(issues)).toEqual(['ledger.authorization_ttl_seconds', 'ledger.default_policy', 'ledger.time_zone', 'ledger.webhook_delivered_retention_days', 'ports.ledger']);
    expect(issues.find((issue) => issue.path === 'ledger.default_policy')?.message).toContain("belongs to the ledger host's profile");
  });

  it('a remote ledger over plain http beyond loopback, a relative CA file, or a CA file without a url are refused', async () => {
    expect(paths(await issuesOf(executorHost((table) => (table.ledger = { url: 'http://ledger.example:7400', ca_file: 'ca.pem' }))))).toEqual(['ledger.ca_file', 'ledger.url']);
    const allInOne = exampleTable('sandbox');
    (allInOne.ledger as TomlTable).ca_file = '/etc/lexec/ca.pem';
    expect(paths(await issuesOf(allInOne))).toEqual(['ledger.ca_file']);
  });

  it('an all-in-one profile still needs its executor, agent and targets, and renders both files as before', async () => {
    const table = exampleTable('sandbox');
    delete table.agent;
    delete table.execution_targets;
    expect(paths(await issuesOf(table))).toEqual(['agent', 'execution_targets']);
    const rendered = await render(exampleTable('sandbox'));
    expect(Object.keys(rendered.files)).toEqual(['ledger.json', 'executor.json']);
    expect(rendered.manifest.remote_ledger).toBeUndefined();
  });
});
