import type { Hook } from '@oclif/core';
import { UsageError } from '../errors.js';
import { reportCommandError, scanGlobalFlags } from '../cli/lexec-command.js';
import { createOutput } from '../cli/output.js';

/** Reports an unknown command through the same handler as every other CLI error (exit 2). */
const commandNotFound: Hook.CommandNotFound = async function commandNotFound(options) {
  const flags = scanGlobalFlags(options.argv ?? []);
  const output = await createOutput({ jsonMode: flags.json, color: flags.color, env: process.env, streams: process });
  const error = new UsageError('unknown_command', 'Unknown command.', {
    nextStep: `Run ${options.config.bin} --help to list the commands.`,
  });
  reportCommandError(output, '', error);
};

export default commandNotFound;
