import type { Output } from '../terminal/output.js';
import type { RotateStackCredentialsResult } from './stack-credential-rotation.js';

/** `stack credentials rotate`, for people: one line per role, and what the old capabilities still do. */
export function renderStackRotation(result: RotateStackCredentialsResult, output: Output): void {
  output.line(`${output.style.ok('✔')} rotated ${result.rotated.length} credential${result.rotated.length === 1 ? '' : 's'} of profile "${result.profile}"`);
  for (const role of result.rotated) {
    const how = role.outcome === 'finished' ? 'an interrupted rotation finished' : `replaces ${role.replaced_credential_id}`;
    output.line(`  ${role.role.padEnd(15)} ${role.credential_id} (${how})`);
  }
  output.line(
    result.grace_seconds === 0
      ? '  the old capabilities are refused from now on.'
      : `  the old capabilities keep working for ${result.grace_seconds} s, then they are refused.`,
  );
}
