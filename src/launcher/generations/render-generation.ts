import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import type { BuildInfo } from '../../build-info.js';
import { parseExecutorConfig } from '../../executor/config/parse-executor-config.js';
import { bigintAsString, canonicalJson } from '../../domain/canonical-json.js';
import { isLoopbackHost } from '../../config/schema-parts.js';
import { BugError, UserError } from '../../errors.js';
import { ledgerConfigSchema, LEDGER_CONFIG_SCHEMA_VERSION } from '../../ledger/ledger-config.js';
import { PROFILE_KINDS, type Profile } from '../profiles/profile-schema.js';
import type { ProfilePaths } from '../home/stack-home.js';

/*
 * Rendering: a profile plus the binary's lineage become a generation — the runtime files every
 * component is started with, and a manifest naming them with their hashes. Pure: no file is read
 * or written here (generation-store.ts does that). The generation id is derived from everything
 * rendered except the time, so the same inputs always give the same id.
 */

export const MANIFEST_VERSION = 1 as const;
export const STACK_COMPONENTS = ['ledger', 'executor', 'sandbox'] as const;
export type StackComponent = (typeof STACK_COMPONENTS)[number];
export const RUNTIME_FILES = ['ledger.json', 'executor.json'] as const;
export type RuntimeFile = (typeof RUNTIME_FILES)[number];

const sha256 = z.string().regex(/^[0-9a-f]{64}$/);
export const generationIdSchema = z.string().regex(/^g[0-9a-f]{16}$/, 'must be a generation id such as g3f9a0c1d2e4b5a6f');

export const manifestSchema = z.strictObject({
  manifest_version: z.literal(MANIFEST_VERSION),
  generation_id: generationIdSchema,
  profile: z.string(),
  kind: z.enum(PROFILE_KINDS),
  rendered_at: z.iso.datetime(),
  lineage: z.strictObject({
    product_version: z.string(),
    contract_version: z.string(),
    commit: z.string(),
    build_kind: z.enum(['release', 'development']),
  }),
  files: z.array(z.strictObject({ name: z.enum(RUNTIME_FILES), component: z.enum(STACK_COMPONENTS), sha256 })),
  components: z.strictObject({
    /**
     * This host's own ledger (all-in-one and ledger host). `endpoint` and `ca_file` only when the
     * profile sets `[ledger.http]` (absent: http://127.0.0.1:port, no CA).
     */
    ledger: z.strictObject({ port: z.number().int(), endpoint: z.string().optional(), ca_file: z.string().optional() }).optional(),
    /** Absent on a ledger host. */
    executor: z.strictObject({
      port: z.number().int(),
      workflow_engine: z.string(),
      /** managed_local: the Temporal child the executor starts (absent in older manifests and other modes). */
      temporal: z.strictObject({ port: z.number().int(), ui_port: z.number().int() }).optional(),
    }).optional(),
    sandbox: z.strictObject({ port: z.number().int(), complete_after_ms: z.number().int() }).optional(),
  }),
  /** An executor host's remote ledger (docs/deployment.md "Roles"); absent when the host runs its own. */
  remote_ledger: z.strictObject({ url: z.string(), ca_file: z.string().optional() }).optional(),
});
export type GenerationManifest = z.output<typeof manifestSchema>;

export interface RenderedGeneration {
  readonly id: string;
  readonly manifest: GenerationManifest;
  /** The runtime files of the components this role runs (a ledger host has no executor.json, an executor host no ledger.json). */
  readonly files: Readonly<Partial<Record<RuntimeFile, string>>>;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function jsonFile(value: unknown): string {
  return `${JSON.stringify(value, bigintAsString, 2)}\n`;
}

const loopback = (port: number): string => `http://127.0.0.1:${port}`;

/**
 * Where this host's own ledger is reached, and the CA its clients verify it against: from
 * `[ledger.http]` (https with `tls`; the host in brackets when it is an IPv6 address), else
 * http://127.0.0.1:port. The same for every client on this host: nothing reaches a ledger that
 * listens on its lab or LAN address through loopback.
 */
export function ownLedgerEndpoint(profile: Profile): { endpoint: string; ca_file: string | null } {
  const http = profile.ledger.http;
  const port = profile.ports.ledger ?? 0;
  if (http === undefined) return { endpoint: loopback(port), ca_file: null };
  const host = http.host ?? '127.0.0.1';
  const named = isIP(host) === 6 ? `[${host}]` : host;
  return { endpoint: `${http.tls === undefined ? 'http' : 'https'}://${named}:${port}`, ca_file: http.tls?.ca_file ?? null };
}

/** The ledger an executor of this profile talks to: the remote one ([ledger] url), else its own (loopback, or `[ledger.http]`). */
function ledgerSection(profile: Profile, build: BuildInfo): Record<string, unknown> {
  const { url, ca_file: caFile } = profile.ledger;
  if (url === undefined) {
    const own = ownLedgerEndpoint(profile);
    return { endpoint: own.endpoint, product_version: build.product_version, ...(own.ca_file === null ? {} : { ca_file: own.ca_file }) };
  }
  return { endpoint: url, product_version: build.product_version, ...(caFile === undefined ? {} : { ca_file: caFile }) };
}

/** The ledger server's `http` section: loopback, or `[ledger.http]`'s host and TLS. */
function ledgerListen(profile: Profile): Record<string, unknown> {
  const http = profile.ledger.http;
  const host = http?.host ?? '127.0.0.1';
  return {
    host,
    port: profile.ports.ledger,
    ...(isLoopbackHost(host) ? {} : { allow_non_loopback: true }),
    ...(http?.tls === undefined ? {} : { tls: { certificate_file: http.tls.certificate_file, key_file: http.tls.key_file } }),
  };
}

function executorConfig(profile: Profile, paths: ProfilePaths, build: BuildInfo): unknown {
  const engine = profile.workflow_engine;
  if (engine === undefined) throw new BugError('an executor configuration rendered for a profile without an executor');
  return {
    schema_version: 3,
    http: { host: '127.0.0.1', port: profile.ports.executor },
    ledger: ledgerSection(profile, build),
    credentials: { mode: 'managed', state_dir: paths.executorCredentialsDir },
    storage: { database_path: paths.executorDatabase, artifact_root: paths.artifactRoot, catalog_path: paths.catalogPath },
    workflow_engine:
      engine.mode === 'managed_local'
        ? { ...engine, data_dir: paths.temporalDataDir, log_dir: paths.logsDir, port: profile.ports.temporal, ui_port: profile.ports.temporal_ui }
        : engine,
    providers:
      profile.kind === 'live' && profile.live !== undefined
        ? { mode: 'live', ...profile.live }
        : { mode: 'sandbox', base_url: loopback(profile.ports.sandbox ?? 0) },
    execution_targets: profile.execution_targets,
    // Rendered only when the profile sets it, so a profile without it renders as before.
    ...(profile.orphan_claims === undefined ? {} : { orphan_claims: profile.orphan_claims }),
    // A development build can only run with the allowance on; a release build never renders it.
    development_allowance: build.build_kind === 'development',
  };
}

function ledgerConfig(profile: Profile, paths: ProfilePaths): unknown {
  return {
    schema_version: LEDGER_CONFIG_SCHEMA_VERSION,
    http: ledgerListen(profile),
    database_path: paths.ledgerDatabase,
    admin_capability_path: paths.ledgerAdminCapability,
    contract_level: 'v4.5',
    authorization_ttl_seconds: profile.ledger.authorization_ttl_seconds ?? 3600,
    default_policy: profile.ledger.default_policy,
    // Rendered only when the profile sets it, so a profile without it renders as before.
    ...(profile.ledger.time_zone === undefined ? {} : { time_zone: profile.ledger.time_zone }),
    ...(profile.ledger.webhook_delivered_retention_days === undefined ? {} : { webhook_delivery: { delivered_retention_days: profile.ledger.webhook_delivered_retention_days } }),
  };
}

/** The manifest's own-ledger entry; `endpoint` and `ca_file` only with `[ledger.http]`, so a profile without it renders the same id as before. */
function ownLedgerComponent(profile: Profile, port: number): { port: number; endpoint?: string; ca_file?: string } {
  if (profile.ledger.http === undefined) return { port };
  const own = ownLedgerEndpoint(profile);
  return { port, endpoint: own.endpoint, ...(own.ca_file === null ? {} : { ca_file: own.ca_file }) };
}

/**
 * Renders a profile. The rendered files are checked with the components' own schemas (and the
 * executor's cross-section rules) before anything is returned: a generation that its component
 * would refuse at start is never produced.
 */
export function renderGeneration({ profile, paths, build, now }: { profile: Profile; paths: ProfilePaths; build: BuildInfo; now: Date }): RenderedGeneration {
  const runsExecutor = profile.kind !== 'ledger';
  const runsLedger = profile.ledger.url === undefined;
  const files: Partial<Record<RuntimeFile, string>> = {};
  const described: GenerationManifest['files'] = [];
  if (runsLedger) {
    const ledgerDocument = JSON.parse(jsonFile(ledgerConfig(profile, paths))) as unknown;
    if (!ledgerConfigSchema.safeParse(ledgerDocument).success) throw new BugError('the rendered ledger configuration does not pass its own schema');
    files['ledger.json'] = jsonFile(ledgerDocument);
    described.push({ name: 'ledger.json', component: 'ledger', sha256: hash(files['ledger.json']) });
  }
  if (runsExecutor) {
    const executorDocument = JSON.parse(jsonFile(executorConfig(profile, paths, build))) as unknown;
    const executor = parseExecutorConfig(executorDocument);
    if (!executor.ok) {
      throw new UserError('profile_not_renderable', `The profile ${paths.source} renders an executor configuration the executor would refuse.`, {
        nextStep: 'Fix the profile keys behind the configuration fields listed, then render again.',
        issues: executor.issues.map((issue) => ({ path: `executor.json: ${issue.path}`, message: issue.message })),
      });
    }
    files['executor.json'] = jsonFile(executorDocument);
    described.push({ name: 'executor.json', component: 'executor', sha256: hash(files['executor.json']) });
  }
  const engine = profile.workflow_engine;
  const identity = {
    manifest_version: MANIFEST_VERSION,
    profile: paths.name,
    kind: profile.kind,
    lineage: { product_version: build.product_version, contract_version: build.contract_version, commit: build.commit, build_kind: build.build_kind },
    files: described,
    components: {
      ...(runsLedger && profile.ports.ledger !== undefined ? { ledger: ownLedgerComponent(profile, profile.ports.ledger) } : {}),
      ...(runsExecutor && engine !== undefined && profile.ports.executor !== undefined
        ? {
            executor: {
              port: profile.ports.executor,
              workflow_engine: engine.mode,
              ...(profile.ports.temporal !== undefined && profile.ports.temporal_ui !== undefined ? { temporal: { port: profile.ports.temporal, ui_port: profile.ports.temporal_ui } } : {}),
            },
          }
        : {}),
      ...(profile.kind === 'sandbox' && profile.ports.sandbox !== undefined
        ? { sandbox: { port: profile.ports.sandbox, complete_after_ms: profile.sandbox?.complete_after_ms ?? 300 } }
        : {}),
    },
    // Rendered only for an executor host, so an all-in-one profile renders the same id as before.
    ...(profile.ledger.url === undefined ? {} : { remote_ledger: { url: profile.ledger.url, ...(profile.ledger.ca_file === undefined ? {} : { ca_file: profile.ledger.ca_file }) } }),
  };
  const id = `g${hash(canonicalJson(identity)).slice(0, 16)}`;
  const manifest: GenerationManifest = { ...identity, generation_id: id, rendered_at: now.toISOString() };
  return { id, manifest, files };
}

/** The address a generation's component listens on: its own ledger's `[ledger.http] host`, else 127.0.0.1. */
export function listenHostOf(manifest: GenerationManifest, component: string): string {
  return endpointHost(component === 'ledger' ? manifest.components.ledger?.endpoint : undefined);
}

/** The address a listener with this endpoint binds (an IPv6 one unbracketed); 127.0.0.1 without one. */
export function endpointHost(endpoint: string | undefined): string {
  if (endpoint === undefined) return '127.0.0.1';
  const host = new URL(endpoint).hostname;
  return host.startsWith('[') ? host.slice(1, -1) : host;
}

/** Components a generation starts, in start order (stop is the reverse). */
export function generationComponents(manifest: GenerationManifest): StackComponent[] {
  return STACK_COMPONENTS.filter((component) => manifest.components[component] !== undefined);
}

export interface GenerationChange {
  readonly changed_files: RuntimeFile[];
  readonly affected_components: StackComponent[];
}

/**
 * What moving from `from` (the active generation, or none) to `to` changes: the runtime files
 * whose content differs and the components that must restart for it. A new binary lineage
 * affects every component.
 */
export function compareGenerations(from: GenerationManifest | null, to: GenerationManifest): GenerationChange {
  const before = new Map((from?.files ?? []).map((file) => [file.name, file.sha256]));
  const changedFiles = to.files.filter((file) => before.get(file.name) !== file.sha256).map((file) => file.name);
  const affected = new Set<StackComponent>(to.files.filter((file) => changedFiles.includes(file.name)).map((file) => file.component));
  if (from === null || canonicalJson(from.lineage) !== canonicalJson(to.lineage)) for (const component of generationComponents(to)) affected.add(component);
  for (const component of STACK_COMPONENTS) {
    if (canonicalJson(from?.components[component] ?? null) !== canonicalJson(to.components[component] ?? null)) affected.add(component);
  }
  return { changed_files: changedFiles, affected_components: STACK_COMPONENTS.filter((component) => affected.has(component)) };
}
