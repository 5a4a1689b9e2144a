import { z } from 'zod';
import {
  embeddedEngineSchema,
  executionTargetSchema,
  externalEngineSchema,
  liveProvidersSchema,
  managedLocalEngineFields,
  orphanClaimsSchema,
} from '../../executor/config/executor-config-schema.js';
import { identifier } from '../../config/schema-parts.js';
import { authorizationTtlSeconds, spendPolicySchema, timeZone } from '../../ledger/ledger-config.js';

/*
 * A launcher profile (`profile.toml`, schema version 1; docs/stack.md "Profiles"). Operator-owned
 * source from which `stack render` derives the runtime files. It names no path of the stack's
 * own state (those are derived from the profile directory) and no secret: a live provider key
 * is referenced by secret coordinates. Strict everywhere: an unknown key is an error with its path.
 */

export const PROFILE_SCHEMA_VERSION = 1;
export const PROFILE_KINDS = ['sandbox', 'live'] as const;
export type ProfileKind = (typeof PROFILE_KINDS)[number];

/** A fixed port: the rendered configuration names it, so 0 ("any free port") is not allowed. */
const fixedPort = z
  .number({ error: 'must be a TCP port number' })
  .int('must be a whole TCP port number')
  .min(1024, 'must be a TCP port from 1024 to 65535')
  .max(65535, 'must be a TCP port from 1024 to 65535');

const ports = z.strictObject({
  ledger: fixedPort,
  executor: fixedPort,
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

const ledger = z.strictObject({
  authorization_ttl_seconds: authorizationTtlSeconds,
  /** The policy every agent of this stack gets unless set otherwise with `lexec ledger policy set`. */
  default_policy: spendPolicySchema,
  /** The installation's IANA time zone: calendar budgets begin at its midnight (the ledger's default: UTC). */
  time_zone: timeZone.optional(),
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
    kind: z.enum(PROFILE_KINDS, { error: 'must be "sandbox" or "live"' }),
    ports,
    workflow_engine: workflowEngine,
    ledger,
    agent,
    sandbox: sandbox.optional(),
    live: live.optional(),
    /** When the executor releases a claim it never turned into an execution; the executor's default when absent. */
    orphan_claims: orphanClaimsSchema.optional(),
    execution_targets: z
      .array(executionTargetSchema, { error: 'must be a list of execution targets ([[execution_targets]] tables)' })
      .min(1, 'must list at least one execution target')
      .max(100, 'must list at most 100 targets'),
  })
  .superRefine((profile, ctx) => {
    if (profile.kind === 'sandbox') {
      if (profile.live !== undefined) ctx.addIssue({ code: 'custom', path: ['live'], message: 'is only allowed in a live profile (kind = "live")' });
      if (profile.ports.sandbox === undefined) ctx.addIssue({ code: 'custom', path: ['ports', 'sandbox'], message: 'required in a sandbox profile' });
    } else {
      if (profile.live === undefined) ctx.addIssue({ code: 'custom', path: ['live'], message: 'required in a live profile' });
      if (profile.sandbox !== undefined) ctx.addIssue({ code: 'custom', path: ['sandbox'], message: 'is only allowed in a sandbox profile (kind = "sandbox")' });
      if (profile.ports.sandbox !== undefined) ctx.addIssue({ code: 'custom', path: ['ports', 'sandbox'], message: 'is only allowed in a sandbox profile' });
      if (profile.live !== undefined && !profile.execution_targets.some((target) => target.target_id === profile.live?.target_id)) {
        ctx.addIssue({ code: 'custom', path: ['live', 'target_id'], message: 'must name one of execution_targets' });
      }
    }
    for (const key of ['temporal', 'temporal_ui'] as const) {
      if (profile.workflow_engine.mode === 'managed_local' && profile.ports[key] === undefined) {
        ctx.addIssue({ code: 'custom', path: ['ports', key], message: 'required with workflow_engine.mode = "managed_local"' });
      }
      if (profile.workflow_engine.mode !== 'managed_local' && profile.ports[key] !== undefined) {
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
    profile.execution_targets.forEach((target, index) => {
      if (profile.execution_targets.findIndex((other) => other.target_id === target.target_id) !== index) {
        ctx.addIssue({ code: 'custom', path: ['execution_targets', index, 'target_id'], message: 'is listed twice' });
      }
    });
  });

export type Profile = z.output<typeof profileSchema>;
