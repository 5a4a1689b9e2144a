import { execute } from '@oclif/core';

/** Runs the lexec CLI. `entryUrl` is the URL of bin/run.js, from which oclif finds package.json. */
export async function runCli(entryUrl: string): Promise<void> {
  await execute({ dir: entryUrl });
}
