import { describe, expect, it } from 'vitest';
// @ts-expect-error -- plain JavaScript module without type declarations, kept syntax-compatible with old Node.js
import { nodeVersionProblem, REQUIRED_NODE_MAJOR } from '../../bin/node-version.js';
import pkg from '../../package.json' with { type: 'json' };

const problem = nodeVersionProblem as (version: string) => string | null;

describe('nodeVersionProblem', () => {
  it('matches the engines field of package.json', () => {
    expect(pkg.engines.node).toBe(`>=${String(REQUIRED_NODE_MAJOR)}`);
  });

  it.each(['22.0.0', '22.12.1', '24.9.0', '26.1.0'])('accepts Node.js %s', (version) => {
    expect(problem(version)).toBeNull();
  });

  it.each(['20.20.2', '18.19.0', '21.7.3', ''])('refuses Node.js %j with one line naming the required version', (version) => {
    const message = problem(version);
    expect(message).toContain('requires Node.js >= 22');
    expect(message).not.toContain('\n');
  });
});
