import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../support/cli.js';

interface ManifestFlag {
  name: string;
  type: string;
  required?: boolean;
  options?: string[];
  default?: unknown;
}

/**
 * Scripts depend on command names and flags. This freezes them as the build's manifest records
 * them: changing the surface means changing this test, on purpose.
 */
describe('command surface', () => {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'oclif.manifest.json'), 'utf8')) as {
    commands: Record<string, { hidden?: boolean; flags: Record<string, ManifestFlag>; args: Record<string, { name: string; required?: boolean }> }>;
  };
  const surface = Object.fromEntries(
    Object.entries(manifest.commands)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, command]) => [
        id,
        Object.values(command.flags)
          .map((flag) => ({ name: flag.name, type: flag.type, required: flag.required ?? false, options: flag.options, default: flag.default }))
          .sort((a, b) => a.name.localeCompare(b.name)),
      ]),
  );

  const global = [
    { name: 'color', type: 'option', required: false, options: ['auto', 'always', 'never'], default: 'auto' },
    { name: 'json', type: 'boolean', required: false, options: undefined, default: undefined },
  ];

  const flag = (name: string, options: { required?: boolean; options?: string[] } = {}) => ({
    name,
    type: 'option',
    required: options.required ?? false,
    options: options.options,
    default: undefined,
  });
  /** Server-bound ledger verbs: --profile, or --url and --token-file (manual mode), --ca-file, plus their own flags, sorted by name with the global ones. */
  const ledgerVerb = (...own: ReturnType<typeof flag>[]) =>
    [...global, flag('profile'), flag('url'), flag('token-file'), flag('ca-file'), ...own].sort((a, b) => a.name.localeCompare(b.name));
  const statuses = ['requested', 'approved', 'denied', 'claimed', 'settled', 'released', 'expired', 'cancelled'];

  it('lists exactly these commands and flags', () => {
    expect(surface).toEqual({
      'agent:mcp': ledgerVerb(flag('executor-url'), flag('executor-token-file')),
      'ledger:audit': ledgerVerb(flag('since'), flag('agent-id'), flag('limit'), flag('after')),
      'ledger:events': ledgerVerb(flag('since'), { name: 'follow', type: 'boolean', required: false, options: undefined, default: undefined }, flag('types'), flag('agent-id')),
      'ledger:agents:add': ledgerVerb(flag('name', { required: true }), flag('credential-file')),
      'ledger:agents:list': ledgerVerb(),
      'ledger:agents:resume': ledgerVerb(flag('agent-id', { required: true })),
      'ledger:agents:suspend': ledgerVerb(flag('agent-id', { required: true }), flag('reason')),
      'ledger:budget:set': ledgerVerb(flag('day-units'), flag('week-units'), flag('month-units'), flag('alert-percentages'), flag('expect-version')),
      'ledger:budget:show': ledgerVerb(),
      'ledger:approvals:list': ledgerVerb(),
      'ledger:authorizations:approve': ledgerVerb(flag('as'), flag('reason')),
      'ledger:authorizations:deny': ledgerVerb(flag('as'), flag('reason')),
      'ledger:authorizations:list': ledgerVerb(flag('agent-id'), flag('status', { options: statuses }), flag('limit')),
      'ledger:authorizations:request': ledgerVerb(flag('amount-units', { required: true }), flag('idempotency-key'), flag('purpose')),
      'ledger:authorizations:show': ledgerVerb(),
      'ledger:credentials:create': ledgerVerb(
        flag('kind', { required: true, options: ['approver', 'executor', 'reconciliation', 'agent', 'metrics'] }),
        flag('agent-id'),
        flag('credential-file', { required: true }),
        flag('holder-name'),
      ),
      'ledger:credentials:list': ledgerVerb(flag('kind', { options: ['admin', 'agent', 'approver', 'executor', 'reconciliation', 'metrics'] }), flag('agent-id')),
      'ledger:credentials:revoke': ledgerVerb(),
      'ledger:credentials:rotate': ledgerVerb(flag('credential-file', { required: true }), flag('grace-seconds')),
      'ledger:policy:init': [global[0], flag('file', { required: true }), global[1]],
      'ledger:policy:set': ledgerVerb(flag('agent-id'), flag('file', { required: true }), flag('expect-version')),
      'ledger:spend': ledgerVerb(
        flag('by', { required: true }),
        { name: 'csv', type: 'boolean', required: false, options: undefined, default: undefined },
        flag('since'),
        flag('until'),
      ),
      'ledger:policy:show': ledgerVerb(flag('agent-id'), flag('export')),
      'ledger:webhooks:add': ledgerVerb(
        flag('webhook-url', { required: true }),
        flag('secret-file', { required: true }),
        flag('events'),
        flag('format', { options: ['lexec', 'slack'] }),
        flag('from'),
      ),
      'ledger:webhooks:deliveries': ledgerVerb({ name: 'failed', type: 'boolean', required: false, options: undefined, default: undefined }, flag('sink'), flag('limit'), flag('before'), flag('event')),
      'ledger:webhooks:list': ledgerVerb({ name: 'all', type: 'boolean', required: false, options: undefined, default: undefined }),
      'ledger:webhooks:remove': ledgerVerb(),
      // --token-file is the NEW file the enrolment token goes to; manual mode's admin capability is --admin-token-file.
      'ledger:enrolments:issue': [...global, flag('profile'), flag('url'), flag('admin-token-file'), flag('name', { required: true }), flag('agent'), flag('token-file', { required: true }), flag('ttl-minutes')].sort((a, b) =>
        a.name.localeCompare(b.name),
      ),
      'ledger:enrolments:list': ledgerVerb(),
      'ledger:enrolments:revoke': ledgerVerb(),
      'executor:credentials:bootstrap-managed': [
        global[0],
        { name: 'config', type: 'option', required: true, options: undefined, default: undefined },
        global[1],
        { name: 'ledger-admin-capability', type: 'option', required: true, options: undefined, default: undefined },
      ],
      'executor:credentials:list': [
        global[0],
        { name: 'config', type: 'option', required: true, options: undefined, default: undefined },
        global[1],
        flag('kind', { options: ['caller', 'reconciliation', 'metrics'] }),
      ],
      'executor:credentials:revoke': [
        global[0],
        { name: 'config', type: 'option', required: true, options: undefined, default: undefined },
        global[1],
      ],
      'executor:credentials:rotate': [
        global[0],
        { name: 'config', type: 'option', required: true, options: undefined, default: undefined },
        flag('grace-seconds'),
        global[1],
        flag('role', { required: true, options: ['caller', 'reconciliation'] }),
      ],
      'executor:reconciliation:list': [global[0], global[1], flag('profile')],
      'executor:reconciliation:resolve': [
        global[0],
        { name: 'images-billed', type: 'option', required: false, options: undefined, default: undefined },
        global[1],
        { name: 'note', type: 'option', required: true, options: undefined, default: undefined },
        flag('profile'),
        { name: 'release', type: 'boolean', required: false, options: undefined, default: undefined },
        { name: 'settle', type: 'boolean', required: false, options: undefined, default: undefined },
      ],
      'executor:serve': [
        global[0],
        { name: 'config', type: 'option', required: true, options: undefined, default: undefined },
        global[1],
      ],
      'executor:validate-config': [
        global[0],
        { name: 'config', type: 'option', required: true, options: undefined, default: undefined },
        global[1],
      ],
      'ledger:serve': [
        global[0],
        { name: 'config', type: 'option', required: false, options: undefined, default: undefined },
        global[1],
        { name: 'version', type: 'boolean', required: false, options: undefined, default: undefined },
      ],
      'provider:sandbox:serve': [
        global[0],
        { name: 'complete-after-ms', type: 'option', required: false, options: undefined, default: '40' },
        { name: 'faults-file', type: 'option', required: false, options: undefined, default: undefined },
        { name: 'host', type: 'option', required: false, options: undefined, default: '127.0.0.1' },
        { name: 'jobs-file', type: 'option', required: false, options: undefined, default: undefined },
        global[1],
        { name: 'latency-ms', type: 'option', required: false, options: undefined, default: '0' },
        { name: 'port', type: 'option', required: false, options: undefined, default: '0' },
        { name: 'seedless-model', type: 'option', required: false, options: undefined, default: undefined },
        { name: 'submissions-log', type: 'option', required: false, options: undefined, default: undefined },
      ],
      run: [
        flag('authorization'),
        global[0],
        { name: 'count', type: 'option', required: false, options: undefined, default: '1' },
        global[1],
        { name: 'no-wait', type: 'boolean', required: false, options: undefined, default: undefined },
        { name: 'out', type: 'option', required: false, options: undefined, default: './lexec-output' },
        flag('profile'),
        flag('size', { options: ['square_hd', 'square', 'portrait_4_3', 'portrait_16_9', 'landscape_4_3', 'landscape_16_9'] }),
        flag('target'),
        { name: 'timeout', type: 'option', required: false, options: undefined, default: '900' },
      ],
      // Launcher: every stack command takes the global --profile.
      'stack:activate': [global[0], flag('generation', { required: true }), global[1], flag('profile')],
      'stack:catalog': [...global, flag('profile')],
      'stack:console': [
        global[0],
        global[1],
        { name: 'open', type: 'boolean', required: false, options: undefined, default: undefined },
        { name: 'port', type: 'option', required: false, options: undefined, default: '7480' },
        flag('profile'),
      ],
      'stack:enrol': [...global, flag('profile'), flag('token-file', { required: true }), flag('ledger-url'), flag('ca-file')].sort((a, b) => a.name.localeCompare(b.name)),
      'stack:doctor': [global[0], { name: 'fix-permissions', type: 'boolean', required: false, options: undefined, default: undefined }, global[1], flag('profile')],
      'stack:generations': [global[0], global[1], flag('keep'), flag('profile')],
      'stack:logs': [
        global[0],
        { name: 'component', type: 'option', required: false, options: ['ledger', 'executor', 'sandbox', 'temporal', 'supervisor', 'all'], default: 'all' },
        flag('execution-id'),
        { name: 'follow', type: 'boolean', required: false, options: undefined, default: undefined },
        global[1],
        { name: 'level', type: 'option', required: false, options: ['trace', 'debug', 'info', 'warn', 'error', 'fatal'], default: undefined },
        { name: 'lines', type: 'option', required: false, options: undefined, default: '100' },
        flag('profile'),
        { name: 'raw', type: 'boolean', required: false, options: undefined, default: undefined },
        flag('since'),
      ],
      'stack:profiles': [...global, flag('profile')],
      'stack:render': [...global, flag('profile')],
      'stack:rollback': [global[0], flag('generation', { required: true }), global[1], flag('profile')],
      'stack:select': global,
      'stack:start': [
        global[0],
        { name: 'foreground', type: 'boolean', required: false, options: undefined, default: undefined },
        global[1],
        flag('profile'),
        { name: 'timeout', type: 'option', required: false, options: undefined, default: '60' },
      ],
      'stack:status': [...global, flag('profile')],
      'stack:stop': [
        ...global,
        flag('profile'),
        { name: 'wait', type: 'boolean', required: false, options: undefined, default: undefined },
        flag('wait-timeout'),
      ],
      'stack:credentials:rotate': [
        global[0],
        flag('grace-seconds'),
        global[1],
        flag('profile'),
        { name: 'role', type: 'option', required: false, options: ['agent', 'approver', 'executor', 'caller', 'reconciliation', 'metrics', 'admin'], default: undefined },
      ],
      'stack:supervise': [...global, flag('profile')],
      'stack:tls:init': [global[0], { name: 'force', type: 'boolean', required: false, options: undefined, default: undefined }, global[1]],
      'stack:tls:issue': [global[0], flag('host', { required: true }), global[1]],
      version: global,
    });
  });

  it('hides only the launcher-internal commands from help', () => {
    const hidden = Object.entries(manifest.commands)
      .filter(([, command]) => command.hidden === true)
      .map(([id]) => id);
    expect(hidden.sort()).toEqual(['executor:credentials:bootstrap-managed', 'stack:supervise']);
  });

  it('takes positional arguments only where listed', () => {
    const args = Object.fromEntries(
      Object.entries(manifest.commands)
        .filter(([, command]) => Object.keys(command.args).length > 0)
        .map(([id, command]) => [id, Object.values(command.args).map((arg) => ({ name: arg.name, required: arg.required ?? false }))]),
    );
    const tokenId = [{ name: 'token_id', required: true }];
    expect(args).toEqual({
      'executor:credentials:revoke': [{ name: 'credential_id', required: true }],
      'executor:reconciliation:resolve': [{ name: 'execution_id', required: true }],
      'ledger:credentials:revoke': [{ name: 'credential_id', required: true }],
      'ledger:credentials:rotate': [{ name: 'credential_id', required: true }],
      'ledger:webhooks:remove': [{ name: 'sink_id', required: true }],
      'ledger:enrolments:revoke': [{ name: 'enrolment_id', required: true }],
      'ledger:authorizations:approve': tokenId,
      'ledger:authorizations:deny': tokenId,
      'ledger:authorizations:show': tokenId,
      run: [{ name: 'prompt', required: true }],
      'stack:select': [{ name: 'name', required: true }],
    });
  });
});
