import { z } from 'zod';
import { IMAGE_SIZE_PRESETS, MAX_IMAGES_PER_EXECUTION } from '../executor/config/executor-config-schema.js';
import { UNITS_SCALE } from '../domain/money.js';
import { MAX_PROMPT_CHARS } from '../executor/domain/execution-request.js';

/*
 * The tools `lexec agent mcp` offers (docs/agent.md): names, descriptions, input and output
 * schemas. These are a public contract with every agent that uses lexec; a test freezes them,
 * so a change here is a deliberate, documented one. Amounts are exact integers of micro-units
 * (units_scale 6) carried as decimal strings, never as floats.
 */

const units = z.string().regex(/^\d+$/).describe('An exact amount in micro-units (1000000 = 1 USD), as a decimal string.');

/** An exact amount: integer micro-units, their scale, the currency and the same amount for people. */
export const moneySchema = z.object({
  amount_units: units,
  units_scale: z.literal(UNITS_SCALE),
  currency: z.string(),
  display: z.string().describe('The same amount as exact decimal text, e.g. "0.003000 USD".'),
});
export type Money = z.output<typeof moneySchema>;

const executionId = z
  .string()
  .regex(/^exe_[0-9a-f]{32}$/, 'must be an execution id (exe_ and 32 hex digits)')
  .describe('An execution id as returned by generate_images (exe_…).');
const authorizationId = z.uuid({ error: 'must be an authorization id (a UUID)' }).describe('A spend authorization id as returned by generate_images.');
const imageSize = z.enum(IMAGE_SIZE_PRESETS).describe('Image size preset; list_targets shows which ones a target prices.');
const imageCount = z.int().min(1).max(MAX_IMAGES_PER_EXECUTION).describe(`Number of images (1-${MAX_IMAGES_PER_EXECUTION}, at most the target's limit).`);
const targetId = z.string().min(1).max(200).describe('Execution target id from list_targets; needed only when the stack offers more than one.');
const delivery = z
  .enum(['auto', 'inline', 'links'])
  .describe('How images come back: inline image content, resource links to read with resources/read, or auto (inline unless large).');

export const imageSchema = z.object({
  ordinal: z.int(),
  media_type: z.string(),
  size_bytes: z.int(),
  sha256: z.string(),
  uri: z.string().describe('lexec://executions/<execution_id>/images/<ordinal>: readable with resources/read.'),
  delivered: z.enum(['inline', 'link']),
});
export type AgentImage = z.output<typeof imageSchema>;

/** Added in issue 26 (additive): a partial delivery is told apart from a full one. */
const deliverySchema = z
  .object({
    requested: z.int(),
    delivered: z.int(),
    billed: z.int().nullable().describe('Images the exact amount settled pays for (null when it prices no whole count).'),
    partial: z.boolean().describe('True when the job succeeded with fewer images than asked: only the delivered images are billed.'),
  })
  .nullable()
  .describe('Images delivered against those asked, once the execution succeeded (null before, or for an execution lexec cannot price again).');

export const TOOLS = {
  list_targets: {
    title: 'List image targets',
    description:
      'The image generation targets this lexec stack is approved to spend on: their image size presets, how many images one call may ask for, and the exact price of one image at each size. Free: nothing is reserved or spent.',
    input: z.strictObject({}),
    output: z.object({
      targets: z.array(
        z.object({
          target_id: z.string(),
          label: z.string().nullable(),
          provider: z.string(),
          model: z.string(),
          pricing_version: z.string(),
          default_image_size: z.string(),
          image_count: z.object({ min: z.int(), max: z.int() }),
          image_sizes: z.array(
            z.object({
              image_size: z.string(),
              unit_price: z.object({ numerator: z.string(), denominator: z.string(), currency: z.string(), per: z.literal('image') }),
              one_image: moneySchema,
            }),
          ),
        }),
      ),
    }),
  },
  quote: {
    title: 'Quote an image job',
    description:
      "The exact cost of a job (target, size, count) under the stack's own pricing, and what the spend policy would decide if it were requested now: automatic, needs a human's approval, or refused. Free: nothing is reserved or spent.",
    input: z.strictObject({ image_count: imageCount.optional(), image_size: imageSize.optional(), target_id: targetId.optional() }),
    output: z.object({
      target_id: z.string(),
      image_size: z.string(),
      image_count: z.int(),
      cost: moneySchema,
      policy_outcome: z.enum(['automatic', 'needs_human_approval', 'refused']),
      refusal_reason: z.enum(['per_authorization_cap_exceeded', 'daily_cap_exceeded', 'target_not_allowed', 'budget_exceeded']).nullable(),
      /** With budget_exceeded: the calendar budget that would refuse it (agent.month, target:<id>, installation.day, …). */
      refusing_budget: z.string().nullable().describe('With refusal_reason budget_exceeded: the calendar budget that would refuse it (e.g. agent.month, installation.day), else null.'),
      remaining_today: moneySchema,
    }),
  },
  generate_images: {
    title: 'Generate images (spends money)',
    description:
      "Generates images under the operator's spend policy: requests a spend authorization for the exact cost, runs the job and returns the images with the exact amount settled. If the policy needs a human's approval it returns at once with status awaiting_approval, the authorization id and the command a human runs; call again with authorization_id (and the same prompt, size and count) once approved. If the job outlasts wait_seconds it returns status running with the execution id; call again with execution_id to resume. Resuming never spends twice.",
    input: z.strictObject({
      prompt: z.string().min(1).max(MAX_PROMPT_CHARS).optional().describe(`What to generate (1-${MAX_PROMPT_CHARS} characters). Required unless execution_id is given.`),
      image_count: imageCount.optional(),
      image_size: imageSize.optional(),
      target_id: targetId.optional(),
      authorization_id: authorizationId.optional().describe('Resume with this authorization (after a human approved it) instead of requesting a new one.'),
      execution_id: executionId.optional().describe('Resume following this execution (after a call returned running or was interrupted).'),
      wait_seconds: z.int().min(1).max(600).optional().describe('Longest time this call waits for the job before returning status running (default 50).'),
      delivery: delivery.optional(),
    }),
    output: z.object({
      status: z.enum(['succeeded', 'awaiting_approval', 'running']),
      authorization_id: z.string().nullable(),
      authorization_status: z.string().nullable(),
      approve_command: z.string().nullable().describe('While awaiting_approval: the command a human runs to approve. The agent cannot approve.'),
      execution_id: z.string().nullable(),
      execution_state: z.string().nullable(),
      quoted: moneySchema.nullable(),
      spent: moneySchema.nullable().describe('The exact amount the ledger settled (can be less than quoted, never more).'),
      images: z.array(imageSchema),
      delivery: deliverySchema,
      next_step: z.string().nullable(),
    }),
  },
  get_execution: {
    title: 'Show an execution',
    description: 'Where an execution stands: its state, the exact amount settled once it succeeded, and how many images it produced.',
    input: z.strictObject({ execution_id: executionId }),
    output: z.object({
      execution_id: z.string(),
      state: z.string(),
      phase: z.string().nullable(),
      state_reason: z.string().nullable(),
      spent: moneySchema.nullable(),
      image_count: z.int(),
      delivery: deliverySchema,
      recommended_action: z.object({ code: z.string(), description: z.string() }),
    }),
  },
  get_images: {
    title: "Get an execution's images",
    description: 'The images of a succeeded execution, as image content or resource links (delivery).',
    input: z.strictObject({ execution_id: executionId, delivery: delivery.optional() }),
    output: z.object({ execution_id: z.string(), images: z.array(imageSchema) }),
  },
  spending: {
    title: 'Show my spend policy and spending',
    description:
      "This agent's spend policy (per-authorization cap, daily cap, approval threshold), what it spent and holds in the policy's rolling 24-hour window, and what remains; and each calendar budget over it (its day, week or month, a target's monthly cap, the installation's) with what remains in the current period. Free.",
    input: z.strictObject({}),
    output: z.object({
      per_authorization_cap: moneySchema,
      daily_cap: moneySchema,
      approval_threshold: moneySchema,
      window: z.literal('rolling_24h'),
      spent: moneySchema,
      held: moneySchema,
      remaining: moneySchema,
      as_of: z.string(),
      budgets: z.array(
        z.object({
          name: z.string(),
          period: z.string(),
          period_end: z.string(),
          limit: moneySchema,
          spent: moneySchema,
          held: moneySchema,
          remaining: moneySchema,
        }),
      ),
    }),
  },
} as const;

export type ToolName = keyof typeof TOOLS;
export type ToolInput<N extends ToolName> = z.output<(typeof TOOLS)[N]['input']>;
export type ToolOutput<N extends ToolName> = z.output<(typeof TOOLS)[N]['output']>;
