import { describe, expect, it } from 'vitest';
import { errorResult, safeText, serverVersion } from '../../src/agent/mcp-server.js';
import { INTERNAL_ERROR, parseImageUri, RESOURCE_NOT_FOUND, resourceReadError } from '../../src/agent/image-resource.js';
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

describe('image resources (issue 24 item 9)', () => {
  const id = `exe_${'ab'.repeat(16)}`;
  it('a URI names an image only in its exact lexec form', () => {
    expect(parseImageUri(`lexec://executions/${id}/images/0`)).toEqual({ executionId: id, ordinal: 0 });
    expect(parseImageUri(`lexec://executions/${id}/images/3`)).toEqual({ executionId: id, ordinal: 3 });
    for (const uri of [`lexec://executions/${id}/images/01`, `lexec://executions/${id}/images/-1`, `lexec://executions/${id}/images/0?x=1`, `lexec://executions/exe_1/images/0`, `LEXEC://executions/${id}/images/0`, 'file:///etc/passwd', 'https://example.invalid/x', '']) {
      expect(parseImageUri(uri), uri).toBeNull();
    }
  });

  it('an unknown execution or image is -32002 without the URI; a stack failure is -32603 in the tools\' words', () => {
    const describeSafely = (error: unknown) => {
      const meta = errorResult(error)._meta['lexec/error'] as { code: string; message: string };
      return { code: meta.code, message: meta.message };
    };
    for (const code of ['executor_not_found', 'image_not_found']) {
      const answer = resourceReadError(new UserError(code, 'The executor at http://127.0.0.1:7410 does not know that execution.', { nextStep: 'Check it.' }), describeSafely);
      expect([answer.code, answer.message]).toEqual([RESOURCE_NOT_FOUND, expect.stringMatching(/^Resource not found: /)]);
      expect(answer.message).not.toMatch(/127\.0\.0\.1|<url>/);
    }
    const down = resourceReadError(new UserError('executor_unreachable', 'The executor at http://127.0.0.1:7410 does not answer.', { nextStep: 'Check it.' }), describeSafely);
    expect([down.code, down.message]).toEqual([INTERNAL_ERROR, "executor_unreachable: The stack's executor does not answer."]);
    const bug = resourceReadError(new Error('boom at /srv/x'), describeSafely);
    expect(bug.code).toBe(INTERNAL_ERROR);
    expect(bug.message).not.toMatch(/boom|\/srv/);
  });

  it('an execution the executor does not know is worded without its URL for the tools too', () => {
    const error = new UserError('executor_not_found', 'The executor at http://127.0.0.1:7410 does not know that execution (404).', { nextStep: 'Check the executor at http://127.0.0.1:7410.' });
    expect(errorResult(error)._meta['lexec/error']).toMatchObject({ code: 'executor_not_found', message: "The stack's executor has no execution with that id." });
  });
});

describe('serverInfo version', () => {
  it('carries the product version, contract version, full commit and build kind as semver build metadata', () => {
    const commit = 'a'.repeat(40);
    expect(serverVersion({ product: 'lexec', product_version: 'v0.3.0', contract_version: 'v4.5', commit, build_kind: 'release' })).toBe(`v0.3.0+contract.v4.5.commit.${commit}.release`);
  });
});
