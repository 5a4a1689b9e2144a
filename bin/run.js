#!/usr/bin/env node
// Entry point of the `lexec` binary. Kept to syntax every Node.js release can parse, because
// its first job is to refuse a Node.js that is too old with one clear line instead of a stack
// trace from deep inside a dependency. Everything else is loaded lazily after the check.
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}

// lexec gives a non-empty NO_COLOR precedence over FORCE_COLOR (docs/cli-output.md). Node.js
// warns on stderr that it does the opposite whenever both are set; for lexec that warning is
// wrong and it pollutes output that scripts read, so exactly that one warning is dropped.
const NODE_COLOR_WARNING = "The 'NO_COLOR' env is ignored due to the 'FORCE_COLOR' env being set.";
const emitWarning = process.emitWarning;
process.emitWarning = function emitWarningExceptColorPrecedence(warning, ...rest) {
  const text = typeof warning === 'string' ? warning : warning && warning.message;
  if (text === NODE_COLOR_WARNING) return;
  return emitWarning.call(this, warning, ...rest);
};

const { runCli } = await import('../dist/cli/run-cli.js');
await runCli(import.meta.url);
