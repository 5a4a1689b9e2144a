import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/*
 * The workflow code is bundled once, at build time (scripts/build.mjs writes
 * dist/executor/engine/temporal/workflow.bundle.js, which ships in the package), never per
 * execution. A checkout run from its TypeScript sources (the tests) bundles once per process on
 * first use instead.
 */

export type WorkflowBundle = { readonly codePath: string } | { readonly code: string };

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

/** The bundle file shipped beside this module. */
export function shippedBundlePath(): string {
  return here('./workflow.bundle.js');
}

async function bundle(): Promise<string> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const workflowsPath = existsSync(here('./workflow.js')) ? here('./workflow.js') : here('./workflow.ts');
  // webpack's progress and warnings are not the executor's business; errors still throw.
  const quiet = { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet });
  return code;
}

/** Writes the bundle (build time). */
export async function writeWorkflowBundle(path = shippedBundlePath()): Promise<void> {
  await writeFile(path, await bundle());
}

let inProcess: Promise<string> | undefined;

/** The shipped bundle, or (from sources) one bundled on first use and kept for the process. */
export function workflowBundle(): Promise<WorkflowBundle> {
  const shipped = shippedBundlePath();
  if (existsSync(shipped)) return Promise.resolve({ codePath: shipped });
  inProcess ??= bundle();
  return inProcess.then((code) => ({ code }));
}
