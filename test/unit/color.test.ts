import { describe, expect, it } from 'vitest';
import { colorLevel, resolveColor, type ColorChoice } from '../../src/terminal/color.js';

type Case = [choice: ColorChoice, env: Record<string, string>, isTTY: boolean, expected: boolean, why: string];

// The documented precedence: --color > non-empty NO_COLOR > FORCE_COLOR > TERM=dumb > TTY.
const cases: Case[] = [
  ['always', { NO_COLOR: '1', TERM: 'dumb' }, false, true, 'explicit always beats NO_COLOR, TERM=dumb and a pipe'],
  ['never', { FORCE_COLOR: '3' }, true, false, 'explicit never beats FORCE_COLOR and a terminal'],
  ['auto', {}, true, true, 'a terminal gets colour'],
  ['auto', {}, false, false, 'a pipe or redirect gets none'],
  ['auto', { NO_COLOR: '1' }, true, false, 'a non-empty NO_COLOR turns colour off on a terminal'],
  ['auto', { NO_COLOR: '' }, true, true, 'an empty NO_COLOR is ignored'],
  ['auto', { NO_COLOR: '1', FORCE_COLOR: '1' }, true, false, 'NO_COLOR beats FORCE_COLOR'],
  ['auto', { FORCE_COLOR: '1' }, false, true, 'FORCE_COLOR colours a pipe'],
  ['auto', { FORCE_COLOR: '1', TERM: 'dumb' }, false, true, 'FORCE_COLOR beats TERM=dumb'],
  ['auto', { FORCE_COLOR: '0' }, true, false, 'FORCE_COLOR=0 turns colour off on a terminal'],
  ['auto', { FORCE_COLOR: 'false' }, true, false, 'FORCE_COLOR=false turns colour off'],
  ['auto', { FORCE_COLOR: '' }, false, true, 'an empty FORCE_COLOR forces basic colour'],
  ['auto', { TERM: 'dumb' }, true, false, 'TERM=dumb turns colour off on a terminal'],
  ['auto', { TERM: 'xterm-256color' }, true, true, 'an ordinary TERM on a terminal gets colour'],
];

describe('resolveColor', () => {
  it.each(cases)('%s %j tty=%s → %s (%s)', (choice, env, isTTY, expected) => {
    expect(resolveColor({ choice, env, isTTY })).toBe(expected);
  });
});

describe('colorLevel', () => {
  it('uses FORCE_COLOR=1..3 as the depth', () => {
    expect(colorLevel({ FORCE_COLOR: '3' }, 1)).toBe(3);
    expect(colorLevel({ FORCE_COLOR: '2' }, 3)).toBe(2);
  });

  it('uses the detected depth otherwise, never less than basic colour', () => {
    expect(colorLevel({}, 2)).toBe(2);
    expect(colorLevel({}, 0)).toBe(1);
    expect(colorLevel({ FORCE_COLOR: 'true' }, 3)).toBe(3);
  });
});
