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

const { runCli } = await import('../dist/cli/run-cli.js');
await runCli(import.meta.url);
