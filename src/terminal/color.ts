/** The values of the global `--color` flag. */
export const COLOR_CHOICES = ['auto', 'always', 'never'] as const;
export type ColorChoice = (typeof COLOR_CHOICES)[number];

export interface ColorInputs {
  readonly choice: ColorChoice;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether the stream that human output goes to (stderr) is a terminal. */
  readonly isTTY: boolean;
}

/**
 * Decides whether human output is coloured. The one place this is decided (spec §8 Operations 8,
 * ARCHITECTURE.md "CLI conventions"): an explicit `--color always|never` wins; under `auto` a
 * non-empty `NO_COLOR` turns colour off, then `FORCE_COLOR` turns it on (or off for `0` and
 * `false`), then `TERM=dumb` turns it off, and otherwise colour follows whether the stream is
 * a terminal — so pipes and redirects get none.
 */
export function resolveColor({ choice, env, isTTY }: ColorInputs): boolean {
  if (choice === 'always') return true;
  if (choice === 'never') return false;
  if ((env.NO_COLOR ?? '') !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  if (env.TERM === 'dumb') return false;
  return isTTY;
}

/**
 * The colour depth (1 = 16 colours, 2 = 256, 3 = truecolor) once colour is on. `FORCE_COLOR=1..3`
 * picks it explicitly; otherwise the terminal's detected depth, never less than basic colour.
 */
export function colorLevel(env: Readonly<Record<string, string | undefined>>, detected: number): 1 | 2 | 3 {
  const forced = Number.parseInt(env.FORCE_COLOR ?? '', 10);
  const level = forced >= 1 && forced <= 3 ? forced : detected;
  return level >= 3 ? 3 : level === 2 ? 2 : 1;
}
