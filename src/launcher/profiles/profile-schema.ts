import { z } from 'zod';
import {
  embeddedEngineSchema,
  executionTargetSchema,
  externalEngineSchema,
  liveProvidersSchema,
  managedLocalEngineFields,
  orphanClaimsSchema,
} from '../../executor/config/executor-config-schema.js';
import { absolutePath, credentialedEndpointUrl, identifier, isLoopbackHost, TLS_REQUIRED_REASON } from '../../config/schema-parts.js';
import { authorizationTtlSeconds, deliveredRetentionDays, spendPolicySchema, timeZone } from '../../ledger/ledger-config.js';

/*
 * A launcher profile (`profile.toml`, schema version 1; docs/stack.md "Profiles"). Operator-owned
 * source from which `stack render` derives the runtime files. It names no path of the stack's
 * own state (those are derived from the profile directory) and no secret: a live provider key
 * is referenced by secret coordinates. Strict everywhere: an unknown key is an error with its path.
 */

export const PROFILE_SCHEMA_VERSION = 1;
/**
 * The three roles (docs/deployment.md "Roles"): `sandbox` and `live` run an executor — with their
 * own ledger (all-in-one) or, with `[ledger] url`, against a remote ledger (an executor host);
 * `ledger` is a ledger-only host (the ledger and, on demand, the console).
 */
export const PROFILE_KINDS = ['sandbox', 'live', 'ledger'] as const;
export type ProfileKind = (typeof PROFILE_KINDS)[number];

/** A fixed port: the rendered configuration names it, so 0 ("any free port") is not allowed. */
const fixedPort = z
  .number({ error: 'must be a TCP port number' })
  .int('must be a whole TCP port number')
  .min(1024, 'must be a TCP port from 1024 to 65535')
  .max(65535, 'must be a TCP port from 1024 to 65535');

const ports = z.strictObject({
  /** Where this host's own ledger listens: all-in-one and ledger hosts; an executor host has none. */
  ledger: fixedPort.optional(),
  /** Executor-bearing profiles only. */
  executor: fixedPort.optional(),
  /** Sandbox profiles only: where the local sandbox provider listens. */
  sandbox: fixedPort.optional(),
  /** managed_local only: the executor's Temporal dev server (gRPC frontend) and its web UI. */
  temporal: fixedPort.optional(),
  temporal_ui: fixedPort.optional(),
});

/** The executor's workflow engine; a managed Temporal's data and log directories are derived, its ports are in [ports]. */
const workflowEngine = z.discriminatedUnion('mode', [embeddedEngineSchema, managedLocalEngineFields.omit({ data_dir: true, log_dir: true, port: true, ui_port: true }), externalEngineSchema], {
  error: 'must be a workflow engine: mode "embedded", "managed_local" or "external"',
});

/**
 * Where this host's own ledger listens (`[ledger.http]`, a ledger host or an all-in-one;
 * docs/deployment.md "The ledger host's listener"): loopback by default; beyond loopback over TLS
 * only. `tls.ca_file` is the CA that signed the certificate: this host's own clients of the ledger
 * (the credential bootstrap, the console's server side, ledger verbs) verify it against that CA.
 */
const ledgerHttp = z
  .strictObject({
    /** An IP address or DNS name of this host (the one the certificate names); default 127.0.0.1. */
    host: z
      .string({ error: 'must be a host name or IP address' })
      .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|[0-9A-Fa-f:.]{2,45})$/, 'must be a host name or IP address (such as 10.0.0.5 or ledger.team.internal)')
      .refine((host) => !['0.0.0.0', '::', '0:0:0:0:0:0:0:0'].includes(host), 'must be one address of this host (the one clients use and the certificate names), not a wildcard')
      .optional(),
    tls: z
      .strictObject({
        certificate_file: absolutePath,
        key_file: absolutePath,
        /** The CA certificate (PEM) that signed `certificate_file`: what this host's own clients trust. */
        ca_file: absolutePath,
      })
      .optional(),
  })
  .superRefine((value, ctx) => {
    if (value.host === undefined || isLoopbackHost(value.host) || value.tls !== undefined) return;
    ctx.addIssue({
      code: 'custom',
      path: ['tls'],
      message: `${TLS_REQUIRED_REASON}: a ledger listening beyond loopback is served over TLS only; set certificate_file, key_file and ca_file (\`lexec stack tls issue --host ${value.host}\`)`,
      params: { reason: TLS_REQUIRED_REASON },
    });
  });

/** The ledger's settings (all-in-one and ledger host), or where the remote ledger is (executor host: `url`, `ca_file`). */
const ledger = z.strictObject({
  /** Where this host's own ledger listens and its TLS (ledger host, all-in-one). */
  http: ledgerHttp.optional(),
  /** Default 3600 (on a host that runs its own ledger). */
  authorization_ttl_seconds: authorizationTtlSeconds.unwrap().optional(),
  /** The policy every agent of this stack gets unless set otherwise with `lexec ledger policy set`. */
  default_policy: spendPolicySchema.optional(),
  /** The installation's IANA time zone: calendar budgets begin at its midnight (the ledger's default: UTC). */
  time_zone: timeZone.optional(),
  /** How many days the ledger keeps a delivered webhook delivery's row (the ledger's default: 30). */
  webhook_delivered_retention_days: deliveredRetentionDays.optional(),
  /** Executor host: the remote ledger's base URL (https, or http on loopback only). */
  url: credentialedEndpointUrl.optional(),
  /** Executor host: the CA certificate (PEM) the remote ledger's certificate is verified against. */
  ca_file: absolutePath.optional(),
});

/** The agent `lexec run` acts as: created at the ledger by `stack start` with its own capability. */
const agent = z.strictObject({ name: identifier(64) });

const sandbox = z.strictObject({
  /** Milliseconds from submit to a completed sandbox job. */
  complete_after_ms: z
    .number({ error: 'must be a whole number of milliseconds' })
    .int('must be a whole number of milliseconds')
    .min(0, 'must be at least 0')
    .max(60_000, 'must be at most 60000')
    .default(300),
});

/** The executor's live providers settings; the mode is the profile's kind. */
const live = liveProvidersSchema.omit({ mode: true });

export const profileSchema = z
  .strictObject({
    schema_version: z.literal(PROFILE_SCHEMA_VERSION, { error: `must be ${PROFILE_SCHEMA_VERSION}` }),
    kind: z.enum(PROFILE_KINDS, { error: 'must be "sandbox", "live" or "ledger"' }),
    ports,
    /** Executor-bearing profiles only (required there). */
    workflow_engine: workflowEngine.optional(),
    ledger,
    /** Executor-bearing profiles only (required there). */
    agent: agent.optional(),
    sandbox: sandbox.optional(),
    live: live.optional(),
    /** When the executor releases a claim it never turned into an execution; the executor's default when absent. */
    orphan_claims: orphanClaimsSchema.optional(),
    /** Executor-bearing profiles only (required there). */
    execution_targets: z
      .array(executionTargetSchema, { error: 'must be a list of execution targets ([[execution_targets]] tables)' })
      .min(1, 'must list at least one execution target')
      .max(100, 'must list at most 100 targets')
      .optional(),
  })
  .superRefine((profile, ctx) => {
    const issue = (path: (string | number)[], message: string) => {
      ctx.addIssue({ code: 'custom', path, message });
    };
    if (profile.kind === 'ledger') {
      // A ledger-only host: nothing of an executor, and its own ledger's settings.
      const executorOnly: [string[], unknown][] = [
        [['ports', 'executor'], profile.ports.executor],
        [['ports', 'sandbox'], profile.ports.sandbox],
        [['ports', 'temporal'], profile.ports.temporal],
        [['ports', 'temporal_ui'], profile.ports.temporal_ui],
        [['workflow_engine'], profile.workflow_engine],
        [['agent'], profile.agent],
        [['sandbox'], profile.sandbox],
        [['live'], profile.live],
        [['orphan_claims'], profile.orphan_claims],
        [['execution_targets'], profile.execution_targets],
      ];
      for (const [path, value] of executorOnly) if (value !== undefined) issue(path, 'is not allowed in a ledger host profile (kind = "ledger" runs no executor)');
      if (profile.ports.ledger === undefined) issue(['ports', 'ledger'], 'required in a ledger host profile');
      if (profile.ledger.default_policy === undefined) issue(['ledger', 'default_policy'], 'required in a ledger host profile');
      for (const key of ['url', 'ca_file'] as const) if (profile.ledger[key] !== undefined) issue(['ledger', key], 'is not allowed in a ledger host profile (it runs the ledger itself)');
      return;
    }
    for (const key of ['workflow_engine', 'agent', 'execution_targets'] as const) if (profile[key] === undefined) issue([key], `required in a ${profile.kind} profile`);
    if (profile.ports.executor === undefined) issue(['ports', 'executor'], `required in a ${profile.kind} profile`);
    if (profile.ledger.url === undefined) {
      if (profile.ports.ledger === undefined) issue(['ports', 'ledger'], 'required unless [ledger] url names a remote ledger');
      if (profile.ledger.default_policy === undefined) issue(['ledger', 'default_policy'], 'required unless [ledger] url names a remote ledger');
      if (profile.ledger.ca_file !== undefined) issue(['ledger', 'ca_file'], 'is only allowed with [ledger] url (a remote ledger)');
    } else {
      // An executor host: the ledger and its settings are the ledger host's.
      if (profile.ports.ledger !== undefined) issue(['ports', 'ledger'], 'is not allowed with [ledger] url: this host runs no ledger');
      for (const key of ['default_policy', 'time_zone', 'authorization_ttl_seconds', 'webhook_delivered_retention_days', 'http'] as const) {
        if (profile.ledger[key] !== undefined) issue(['ledger', key], "belongs to the ledger host's profile: this host's ledger is remote ([ledger] url)");
      }
    }
    if (profile.kind === 'sandbox') {
      if (profile.live !== undefined) ctx.addIssue({ code: 'custom', path: ['live'], message: 'is only allowed in a live profile (kind = "live")' });
      if (profile.ports.sandbox === undefined) ctx.addIssue({ code: 'custom', path: ['ports', 'sandbox'], message: 'required in a sandbox profile' });
    } else {
      if (profile.live === undefined) ctx.addIssue({ code: 'custom', path: ['live'], message: 'required in a live profile' });
      if (profile.sandbox !== undefined) ctx.addIssue({ code: 'custom', path: ['sandbox'], message: 'is only allowed in a sandbox profile (kind = "sandbox")' });
      if (profile.ports.sandbox !== undefined) ctx.addIssue({ code: 'custom', path: ['ports', 'sandbox'], message: 'is only allowed in a sandbox profile' });
      if (profile.live !== undefined && !(profile.execution_targets ?? []).some((target) => target.target_id === profile.live?.target_id)) {
        ctx.addIssue({ code: 'custom', path: ['live', 'target_id'], message: 'must name one of execution_targets' });
      }
    }
    for (const key of ['temporal', 'temporal_ui'] as const) {
      if (profile.workflow_engine?.mode === 'managed_local' && profile.ports[key] === undefined) {
        ctx.addIssue({ code: 'custom', path: ['ports', key], message: 'required with workflow_engine.mode = "managed_local"' });
      }
      if (profile.workflow_engine?.mode !== 'managed_local' && profile.ports[key] !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['ports', key], message: 'is only allowed with workflow_engine.mode = "managed_local" (the executor starts no Temporal server otherwise)' });
      }
    }
    const used = new Map<number, string>();
    for (const [component, port] of Object.entries(profile.ports) as [string, number | undefined][]) {
      if (port === undefined) continue;
      const other = used.get(port);
      if (other !== undefined) ctx.addIssue({ code: 'custom', path: ['ports', component], message: `is the same port as ports.${other}` });
      used.set(port, component);
    }
    const targets = profile.execution_targets ?? [];
    targets.forEach((target, index) => {
      if (targets.findIndex((other) => other.target_id === target.target_id) !== index) {
        ctx.addIssue({ code: 'custom', path: ['execution_targets', index, 'target_id'], message: 'is listed twice' });
      }
    });
  });

export type Profile = z.output<typeof profileSchema>;
