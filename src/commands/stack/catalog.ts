import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { stackCatalog, type CatalogResult } from '../../launcher/catalog/stack-catalog.js';
import { renderCatalog } from '../../launcher/catalog/render-catalog.js';

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
    renderCatalog(result, output);
  }
}
