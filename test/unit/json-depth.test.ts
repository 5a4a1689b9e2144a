import { describe, expect, it } from 'vitest';
import { jsonDepthIssue, MAX_JSON_DEPTH } from '../../src/config/json-depth.js';
import { nestedJson, shapeLevels, tooDeepPath, type Shape } from '../support/nested-json.js';

const SHAPES: Shape[] = ['object', 'array', 'mixed'];

describe('jsonDepthIssue (issue 24 item 7)', () => {
  it.each(SHAPES)('%s nesting: up to the bound passes, one level more is named by the path of its first too-deep value', (shape) => {
    expect(jsonDepthIssue(nestedJson(shapeLevels(shape, MAX_JSON_DEPTH)))).toBeNull();
    const deeper = shapeLevels(shape, MAX_JSON_DEPTH + 1);
    expect(jsonDepthIssue(nestedJson(deeper))).toEqual({ path: tooDeepPath(deeper, MAX_JSON_DEPTH), message: `is nested more than ${String(MAX_JSON_DEPTH)} levels deep` });
  });

  it('walks 100,000 levels without recursion and names the path at the bound, not the deepest one', () => {
    const levels = shapeLevels('mixed', 100_000);
    const issue = jsonDepthIssue(nestedJson(levels));
    expect(issue?.path).toBe(tooDeepPath(levels, MAX_JSON_DEPTH));
    expect(issue?.path).toMatch(/^a\[0\]\.a\[0\]/);
    // Unbalanced text (the parser refuses it afterwards) is no reason to stop counting.
    expect(jsonDepthIssue('['.repeat(100_000))?.path).toBe('[0]'.repeat(MAX_JSON_DEPTH));
  });

  it('counts siblings: the path holds the index and the key of the value that goes too deep', () => {
    const levels = [{ kind: 'object' as const, key: 'evidence', siblings: 2 }, { kind: 'array' as const, key: '', siblings: 3 }, ...shapeLevels('object', MAX_JSON_DEPTH, 'x')];
    expect(jsonDepthIssue(nestedJson(levels))?.path).toBe(`evidence[3]${'.x'.repeat(MAX_JSON_DEPTH - 2)}`);
    // The outermost object is level 1, so `b`'s innermost array is level 4.
    expect(jsonDepthIssue('{"a":[1,2],"b":[[[1]]],"c":{"d":{}}}', 4)).toBeNull();
    expect(jsonDepthIssue('{"a":[1,2],"b":[[[1]]],"c":{"d":{}}}', 3)?.path).toBe('b[0][0]');
  });

  it('brackets, braces, commas and quotes inside strings are text, not structure', () => {
    const text = JSON.stringify({ note: '[[[[{{{{",\\"[', deeper: [{ 'key,[{': '}]' }] });
    expect(jsonDepthIssue(text, 3)).toBeNull();
    expect(jsonDepthIssue(text, 2)?.path).toBe('deeper[0]');
  });

  it('a key that is not a plain name (it could be a pasted secret) is shown as [?], never echoed', () => {
    const secret = 'lexec_agent_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const levels = shapeLevels('object', MAX_JSON_DEPTH + 1, secret);
    const issue = jsonDepthIssue(nestedJson(levels));
    expect(issue?.path).toBe('[?]'.repeat(MAX_JSON_DEPTH));
    expect(JSON.stringify(issue)).not.toContain('AAAA');
    expect(jsonDepthIssue(`{"\\u00zz":${'['.repeat(MAX_JSON_DEPTH)}`)?.path).toBe(`[?]${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`);
  });
});
