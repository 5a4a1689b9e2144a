import type { ExecutorConfig } from './config/executor-config-schema.js';

export const PROVIDER_CATALOG_SCHEMA_VERSION = 1;

/**
 * The sanitised provider catalog, schema version 1 (spec §2): for the shipped image-provider
 * contract, the approved targets with model, presets and rational USD pricing, the policy
 * versions, and four independent facts. It never holds secret-store coordinates or values and
 * is computed without calling the provider.
 */
export function providerCatalog(config: ExecutorConfig, credentialReferencePresent: boolean) {
  const configured = config.providers.mode !== 'disabled' && config.execution_targets.length > 0;
  return {
    catalog_schema_version: PROVIDER_CATALOG_SCHEMA_VERSION,
    contract: { provider: 'fal', protocol: 'fal_queue', contract_version: 1 },
    providers_mode: config.providers.mode,
    targets: config.execution_targets.map((target) => ({
      target_id: target.target_id,
      label: target.label ?? null,
      model: target.model,
      presets: target.presets,
      max_image_count: target.max_image_count,
      // Whether submissions carry the correlation seed (docs/configuration.md); never a secret.
      send_seed: target.send_seed,
      pricing: {
        currency: target.pricing.currency,
        unit: target.pricing.unit,
        by_image_size: target.pricing.by_image_size,
      },
      policy_versions: { pricing: target.pricing.version, target: 'v1' },
    })),
    facts: {
      configured,
      credential_reference_present: credentialReferencePresent,
      production_validated: false,
      production_validated_reason: 'not_performed',
      live_qualified: false,
      live_qualified_reason: 'not_performed',
    },
  };
}
export type ProviderCatalog = ReturnType<typeof providerCatalog>;

/** The active, operator-approved execution choices (`GET /v2/execution-targets`). */
export function activeTargets(config: ExecutorConfig) {
  return config.providers.mode === 'disabled' ? [] : config.execution_targets;
}
