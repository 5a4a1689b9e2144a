import type { Hook } from '@oclif/core';
import { UsageError } from '../errors.js';
import { reportCommandError, scanGlobalFlags } from '../cli/lexec-command.js';
import { createOutput } from '../terminal/output.js';

/** Commands people try that lexec deliberately does not have, and what to run instead. */
const INSTEAD: Readonly<Record<string, string>> = {
  'stack restart': 'There is no `stack restart` (spec: an unchanged unhealthy stack is stopped, then started): run `lexec stack stop`, then `lexec stack start`.',
};

/** Edit distance between two short strings (commands), for "did you mean". */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The next step for an unknown command: a known alternative, the nearest command, or the help. */
export function unknownCommandStep(typed: string, commands: readonly string[], bin: string): string {
  const instead = INSTEAD[typed];
  if (instead !== undefined) return instead;
  const scored = commands.map((command) => ({ command, distance: editDistance(typed, command) })).sort((a, b) => a.distance - b.distance || a.command.localeCompare(b.command));
  const best = scored[0];
  if (best !== undefined && best.distance <= Math.max(2, Math.floor(typed.length / 4))) return `Did you mean \`${bin} ${best.command}\`? Run ${bin} --help to list the commands.`;
  return `Run ${bin} --help to list the commands.`;
}

/** Reports an unknown command through the same handler as every other CLI error (exit 2). */
const commandNotFound: Hook.CommandNotFound = async function commandNotFound(options) {
  const flags = scanGlobalFlags(options.argv ?? []);
  const output = await createOutput({ jsonMode: flags.json, color: flags.color, env: process.env, streams: process });
  const typed = options.id.replaceAll(':', ' ');
  const commands = options.config.commands.filter((command) => !command.hidden).map((command) => command.id.replaceAll(':', ' '));
  const error = new UsageError('unknown_command', 'Unknown command.', { nextStep: unknownCommandStep(typed, commands, options.config.bin) });
  reportCommandError(output, '', error);
};

export default commandNotFound;
