import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from './cli.js';

/** CLI tests run the real built binary; refuse to run them against a missing build. */
export default function checkBuild(): void {
  for (const file of ['dist/cli/run-cli.js', 'oclif.manifest.json']) {
    if (!existsSync(join(PACKAGE_ROOT, file))) throw new Error(`${file} is missing: run \`npm run build\` (npm test does it first).`);
  }
}
