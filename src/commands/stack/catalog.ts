import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { stackCatalog, type CatalogResult } from '../../launcher/catalog/stack-catalog.js';

/** Why the credential fact is false, by where it came from (docs/stack-logs.md "Catalog"). */
const CREDENTIAL_BASIS_NOTE: Record<CatalogResult['credential_reference_basis'], string | null> = {
  executor_startup: 'the running executor did not resolve it at startup',
  not_resolved: 'not resolved: only a running executor of this generation resolves it',
  not_applicable: 'no credential reference outside live mode',
};

export default class StackCatalog extends LexecCommand<CatalogResult> {
  static override summary = "Show the sanitised provider catalog of the profile's active generation.";
  static override description =
    'Computed locally from the active generation by the executor\'s own catalog code: never calls the provider, never claims live qualification, and keeps the four facts (configured, credential reference present, production validated, live qualified) independent.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --profile live --json'];
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<CatalogResult> {
    const { flags } = await this.parse(StackCatalog);
    return stackCatalog({ env: process.env, profileFlag: flags.profile });
  }

  protected override renderHuman(result: CatalogResult, output: Output): void {
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
}
