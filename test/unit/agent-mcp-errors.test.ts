import { describe, expect, it } from 'vitest';
import { errorResult, safeText, serverVersion } from '../../src/agent/mcp-server.js';
import { UserError } from '../../src/errors.js';

describe('agent tool errors', () => {
  it('strip URLs, absolute paths and capabilities from any message, and keep lexec:// image URIs', () => {
    const text = safeText(
      'The executor at http://127.0.0.1:7410 refused; see /home/op/.lexec/profiles/sandbox/state/handoff.json or `/tmp/x`, token lexec_agent_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcdefg; image lexec://executions/exe_1/images/0',
    );
    expect(text).toBe('The executor at <url> refused; see <path> or `<path>`, token <capability>; image lexec://executions/exe_1/images/0');
  });

  it('are isError results with a stable code, the field paths and a next step, in text and in _meta', () => {
    const error = new UserError('invalid_argument', 'Invalid arguments: image_count.', {
      nextStep: 'Correct the fields listed.',
      issues: [{ path: 'image_count', message: 'must be at most 4' }],
    });
    const result = errorResult(error);
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'error invalid_argument: Invalid arguments: image_count.\n  image_count: must be at most 4\nnext step: Correct the fields listed.' }]);
    expect(result._meta['lexec/error']).toEqual({
      code: 'invalid_argument',
      message: 'Invalid arguments: image_count.',
      next_step: 'Correct the fields listed.',
      fields: [{ path: 'image_count', message: 'must be at most 4' }],
    });
  });

  it('say nothing of an unexpected failure beyond a code: no message, no stack', () => {
    const result = errorResult(new Error('boom at /srv/secret/path with lexec_admin_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcdefg'));
    expect(result._meta['lexec/error']).toMatchObject({ code: 'internal_error' });
    expect(JSON.stringify(result)).not.toMatch(/boom|\/srv|lexec_admin_/);
  });

  it('a stack failure is worded for the agent, without the endpoint', () => {
    const error = new UserError('executor_unreachable', 'The executor at http://127.0.0.1:7410 does not answer (ECONNREFUSED).', { nextStep: 'Check the executor at http://127.0.0.1:7410.' });
    expect(errorResult(error)._meta['lexec/error']).toMatchObject({ code: 'executor_unreachable', message: "The stack's executor does not answer." });
  });
});

describe('serverInfo version', () => {
  it('carries the product version, contract version, full commit and build kind as semver build metadata', () => {
    const commit = 'a'.repeat(40);
    expect(serverVersion({ product: 'lexec', product_version: 'v0.3.0', contract_version: 'v4.5', commit, build_kind: 'release' })).toBe(`v0.3.0+contract.v4.5.commit.${commit}.release`);
  });
});
