import type { CatalogResult } from './stack-catalog.js';
import type { Output } from '../../terminal/output.js';

/** Why the credential fact is false, by where it came from (docs/stack-logs.md "Catalog"). */
const CREDENTIAL_BASIS_NOTE: Record<CatalogResult['credential_reference_basis'], string | null> = {
  executor_startup: 'the running executor did not resolve it at startup',
  not_resolved: 'not resolved: only a running executor of this generation resolves it',
  not_applicable: 'no credential reference outside live mode',
};

/** Human form of `stack catalog`: the targets with their pricing, then the four facts, each on its own. */
export function renderCatalog(result: CatalogResult, output: Output): void {
  const { catalog } = result;
  output.line(`Provider catalog of profile ${result.profile}, generation ${output.style.bold(result.generation_id)} (schema ${catalog.catalog_schema_version}; computed locally, the provider is not called)`);
  output.line(`providers mode ${catalog.providers_mode}; contract ${catalog.contract.provider} ${catalog.contract.protocol} v${catalog.contract.contract_version}`);
  if (catalog.targets.length === 0) output.line('no execution targets');
  for (const target of catalog.targets) {
    output.line(`target ${output.style.bold(target.target_id)}${target.label === null ? '' : ` (${target.label})`}`);
    output.line(`  model ${target.model}, up to ${target.max_image_count} images; presets ${target.presets.join(', ')}`);
    const prices = Object.entries(target.pricing.by_image_size).map(([size, price]) => `${size} ${String(price.numerator)}/${String(price.denominator)}`);
    output.line(`  pricing ${target.policy_versions.pricing} (${target.pricing.currency} per ${target.pricing.unit}): ${prices.join(', ')}`);
  }
  const fact = (value: boolean, reason: string | null) => (value ? output.style.ok('yes') : `no${reason === null ? '' : ` (${reason})`}`);
  const { facts } = catalog;
  output.line('facts, each established on its own:');
  output.line(`  configured                    ${fact(facts.configured, null)}`);
  output.line(`  credential reference present  ${fact(facts.credential_reference_present, CREDENTIAL_BASIS_NOTE[result.credential_reference_basis])}`);
  output.line(`  production validated          ${fact(facts.production_validated, facts.production_validated_reason)}`);
  output.line(`  live qualified                ${fact(facts.live_qualified, facts.live_qualified_reason)}`);
}
