import { z } from 'zod';
import { PRODUCT_NAME } from '../../product.js';
import { UNITS_SCALE } from '../../domain/money.js';
import {
  absolutePath,
  credentialedEndpointUrl,
  exactVersion,
  grpcUrl,
  httpListen,
  httpUrl,
  identifier,
  loopbackHttpUrl,
  productVersion,
  secretReference,
  wholeNumber,
} from '../../config/schema-parts.js';
import { IMAGE_SIZE_PRESETS, MAX_IMAGES_PER_EXECUTION, type ImageSizePreset } from '../../provider/image-sizes.js';

/** The provider contract's presets and image count, defined with the provider (below the executor), offered here with the schema that uses them. */
export { IMAGE_SIZE_PRESETS, MAX_IMAGES_PER_EXECUTION, type ImageSizePreset } from '../../provider/image-sizes.js';

/*
 * Executor configuration, schema version 3 (spec §1 "Configuration file", "Workflow-engine
 * settings"; docs/configuration.md). Every object is strict: an unknown field anywhere is an
 * error with its path. No field holds a raw token or key; secrets are referenced by coordinates.
 */

export const EXECUTOR_CONFIG_SCHEMA_VERSION = 3;

/** The literal string an operator writes to accept that live mode spends real money. */
export const LIVE_SPEND_ACKNOWLEDGEMENT = 'I understand that live mode spends real money at the provider';

const TARGET_ID = new RegExp(`^${PRODUCT_NAME}:target:v1:[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`);

export const targetId = z
  .string({ error: 'must be a target id' })
  .regex(TARGET_ID, `must be a versioned target id: ${PRODUCT_NAME}:target:v1:<id> (<id>: 1-64 letters, digits, . _ -)`);

const preset = z.enum(IMAGE_SIZE_PRESETS, { error: `must be one of: ${IMAGE_SIZE_PRESETS.join(', ')}` });

const ledger = z.strictObject({
  endpoint: credentialedEndpointUrl,
  product_version: productVersion,
  /** The CA certificate (PEM) the ledger's https certificate is verified against (issue 29). */
  ca_file: absolutePath.optional(),
});

/**
 * `managed`: a launcher-managed stack; the caller capability and the executor→ledger credential
 * live under fixed internal names in `state_dir`, written by `credentials bootstrap-managed`.
 * `explicit`: a hand-run executor; each credential is named by secret coordinates.
 */
const credentials = z.discriminatedUnion(
  'mode',
  [
    z.strictObject({ mode: z.literal('managed'), state_dir: absolutePath }),
    z.strictObject({ mode: z.literal('explicit'), caller: secretReference, ledger: secretReference, reconciliation: secretReference.optional(), metrics: secretReference.optional() }),
  ],
  { error: 'must be {"mode":"managed",…} or {"mode":"explicit",…}' },
);

const storage = z.strictObject({
  database_path: absolutePath,
  artifact_root: absolutePath,
  catalog_path: absolutePath,
});

/**
 * The Temporal task queue the executor's worker polls and starts its runs on. Unset: the queue
 * derived from the installation's identity (`lexec-<12 hex>`, domain/installation.ts), which no
 * other installation uses; set: the operator's choice, which must then be this installation's alone.
 */
const taskQueue = identifier(200).optional();

/** The workflow engine modes, one schema each; a launcher profile reuses them (src/launcher/profiles/profile-schema.ts). */
export const embeddedEngineSchema = z.strictObject({ mode: z.literal('embedded') });
/** A managed engine's fixed loopback port (never 0: operators and the launcher must know where it is). */
const enginePort = z
  .number({ error: 'must be a TCP port number' })
  .int('must be a whole TCP port number')
  .min(1024, 'must be a TCP port from 1024 to 65535')
  .max(65535, 'must be a TCP port from 1024 to 65535');

/** The managed_local fields; a launcher profile derives data_dir, log_dir and the ports (src/launcher/profiles/profile-schema.ts). */
export const managedLocalEngineFields = z.strictObject({
  mode: z.literal('managed_local'),
  temporal_cli: z.strictObject({ path: absolutePath, version: exactVersion }),
  data_dir: absolutePath,
  /** Where the engine's output goes (`temporal.log`, rotated); default: data_dir. */
  log_dir: absolutePath.optional(),
  /** The frontend gRPC port on 127.0.0.1. */
  port: enginePort.default(7233),
  /** The web UI's port on 127.0.0.1. */
  ui_port: enginePort.default(8233),
  namespace: identifier().default('default'),
  task_queue: taskQueue,
});
export const managedLocalEngineSchema = managedLocalEngineFields.superRefine((engine, ctx) => {
  if (engine.ui_port === engine.port) ctx.addIssue({ code: 'custom', path: ['ui_port'], message: 'must differ from workflow_engine.port' });
});
export const externalEngineSchema = z.strictObject({
  mode: z.literal('external'),
  address: grpcUrl,
  namespace: identifier(),
  task_queue: taskQueue,
  ui_url: httpUrl,
});

const workflowEngine = z.discriminatedUnion('mode', [embeddedEngineSchema, managedLocalEngineSchema, externalEngineSchema], {
  error: 'must be a workflow engine: mode embedded, managed_local or external',
});

const spendCeilingSchema = z.strictObject({
  amount_units: wholeNumber({ min: 1n, what: 'the spend ceiling' }),
  units_scale: z.literal(UNITS_SCALE, { error: `must be ${UNITS_SCALE} (amounts are micro-units)` }),
  currency: z.literal('USD', { error: 'must be "USD"' }),
});

/** The absolute deadline of a provider operation, from its submission; never refreshed. */
const operationDeadline = z
  .number({ error: 'must be a whole number of seconds' })
  .int('must be a whole number of seconds')
  .min(1, 'must be at least 1')
  .max(86_400, 'must be at most 86400 (one day)')
  .default(600);

/**
 * How long one provider request (a submission, a poll, a result or a media fetch) may take to be
 * answered. A submission that times out may have been received: it is never sent again.
 */
const requestTimeout = z
  .number({ error: 'must be a whole number of seconds' })
  .int('must be a whole number of seconds')
  .min(1, 'must be at least 1')
  .max(300, 'must be at most 300')
  .default(30);

/** The shortest and the longest wait between two status polls of one provider operation. */
const pollInitial = z.number({ error: 'must be whole milliseconds' }).int('must be whole milliseconds').min(10, 'must be at least 10').max(10_000, 'must be at most 10000').default(100);
const pollMax = z.number({ error: 'must be whole milliseconds' }).int('must be whole milliseconds').min(100, 'must be at least 100').max(60_000, 'must be at most 60000').default(5_000);

/** Live mode: real spend at the provider; a launcher profile's [live] section is this without `mode`. */
export const liveProvidersSchema = z.strictObject({
  mode: z.literal('live'),
  target_id: targetId,
  credential: secretReference,
  spend_ceiling: spendCeilingSchema,
  operation_deadline_seconds: operationDeadline,
  request_timeout_seconds: requestTimeout,
  poll_initial_ms: pollInitial,
  poll_max_ms: pollMax,
  acknowledgement: z.literal(LIVE_SPEND_ACKNOWLEDGEMENT, {
    error: `must be exactly the live-spend acknowledgement: "${LIVE_SPEND_ACKNOWLEDGEMENT}"`,
  }),
});

const providers = z.discriminatedUnion(
  'mode',
  [
    z.strictObject({ mode: z.literal('disabled') }),
    z.strictObject({
      mode: z.literal('sandbox'),
      base_url: loopbackHttpUrl,
      operation_deadline_seconds: operationDeadline,
      request_timeout_seconds: requestTimeout,
      poll_initial_ms: pollInitial,
      poll_max_ms: pollMax,
    }),
    liveProvidersSchema,
  ],
  { error: 'must be providers: mode disabled, sandbox or live' },
).superRefine((value, ctx) => {
  if (value.mode !== 'disabled' && value.poll_max_ms < value.poll_initial_ms) {
    ctx.addIssue({ code: 'custom', path: ['poll_max_ms'], message: 'must be at least poll_initial_ms' });
  }
});

/** The admission's ledger request timeout (ledger-gateway.ts): the orphan bound's floor is well above it. */
const ADMISSION_LEDGER_TIMEOUT_SECONDS = 5;
export const MIN_ORPHAN_CLAIM_SECONDS = 3 * ADMISSION_LEDGER_TIMEOUT_SECONDS;
export const DEFAULT_ORPHAN_CLAIM_SECONDS = 300;

/**
 * Claims this executor made and never turned into an execution (docs/executions.md "Orphan
 * claims") are released once they are this old. Well above the admission's ledger timeout, so a
 * claim whose answer is still on its way, or an agent's prompt retry, always finds it; the default
 * leaves several minutes for an agent to retry the identical request.
 */
export const orphanClaimsSchema = z.strictObject({
  release_after_seconds: z
    .number({ error: 'must be a whole number of seconds' })
    .int('must be a whole number of seconds')
    .min(MIN_ORPHAN_CLAIM_SECONDS, `must be at least ${MIN_ORPHAN_CLAIM_SECONDS} (three times the admission's ledger timeout)`)
    .max(86_400, 'must be at most 86400 (one day)')
    .default(DEFAULT_ORPHAN_CLAIM_SECONDS),
});

const price = z.strictObject({
  numerator: wholeNumber({ min: 0n, what: 'the price numerator' }),
  denominator: wholeNumber({ min: 1n, what: 'the price denominator' }),
});

const pricing = z.strictObject({
  currency: z.literal('USD', { error: 'must be "USD"' }),
  unit: z.literal('image', { error: 'must be "image" (price per generated image)' }),
  version: identifier(64),
  by_image_size: z.partialRecord(preset, price),
});

export const executionTargetSchema = z
  .strictObject({
    target_id: targetId,
    label: z.string({ error: 'must be a string' }).min(1).max(200).optional(),
    provider: z.literal('fal', { error: 'must be "fal" (the fal queue protocol)' }),
    model: z
      .string({ error: 'must be a model id' })
      .regex(/^[a-z0-9][a-z0-9._-]*(?:\/[a-z0-9][a-z0-9._-]*)+$/, 'must be a provider model id such as fal-ai/flux/schnell'),
    presets: z.array(preset, { error: 'must be a list of image size presets' }).min(1, 'must list at least one preset'),
    max_image_count: z
      .number({ error: 'must be a whole number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(MAX_IMAGES_PER_EXECUTION, `must be at most ${MAX_IMAGES_PER_EXECUTION}`)
      .default(MAX_IMAGES_PER_EXECUTION),
    /**
     * Whether submissions carry lexec's correlation `seed` (domain/correlation.ts). Every fal
     * image model lexec ships takes an integer `seed`, so it is sent by default; a model that
     * refuses an unknown input would refuse every submission with it (each one parked for
     * reconciliation), so such a target says false. Frozen per execution at admission.
     */
    send_seed: z.boolean({ error: 'must be true or false' }).default(true),
    pricing,
  })
  .superRefine((target, ctx) => {
    target.presets.forEach((name, index) => {
      if (target.presets.indexOf(name) !== index) ctx.addIssue({ code: 'custom', path: ['presets', index], message: 'is listed twice' });
    });
    for (const name of Object.keys(target.pricing.by_image_size)) {
      if (!target.presets.includes(name as ImageSizePreset)) {
        ctx.addIssue({ code: 'custom', path: ['pricing', 'by_image_size', name], message: 'prices a preset the target does not offer' });
      }
    }
  });

/** The top-level sections; each is also parsed alone so cross-section rules can run on the valid ones. */
export const executorConfigSections = {
  schema_version: z.literal(EXECUTOR_CONFIG_SCHEMA_VERSION, { error: `must be ${EXECUTOR_CONFIG_SCHEMA_VERSION}` }),
  http: httpListen,
  ledger,
  credentials,
  storage,
  workflow_engine: workflowEngine,
  providers,
  execution_targets: z.array(executionTargetSchema, { error: 'must be a list of execution targets' }).max(100, 'must list at most 100 targets'),
  orphan_claims: orphanClaimsSchema.prefault({}),
  development_allowance: z.boolean({ error: 'must be true or false' }).default(false),
};

export const executorConfigSchema = z.strictObject(executorConfigSections);

export type ExecutorConfig = z.output<typeof executorConfigSchema>;
export type ExecutionTarget = ExecutorConfig['execution_targets'][number];
export type ProvidersConfig = ExecutorConfig['providers'];
export type WorkflowEngineConfig = ExecutorConfig['workflow_engine'];
