import type { ArtifactView, ExecutorClient } from '../../executor/client/executor-client.js';
import { askThroughRestart } from './admission.js';

/*
 * Collecting a succeeded execution's images: its artifacts in order, and each one's bytes — both
 * reads asked again while the executor restarts (askThroughRestart), as the follow waits for it.
 */

/** How a client waits between tries: `pause` may throw (a deadline, an interrupt, a cancelled call). */
export interface ReadAgain {
  readonly now: () => number;
  readonly pause: (ms: number) => Promise<void>;
}

/** The execution's artifacts, by ordinal. */
export async function jobArtifacts(executor: ExecutorClient, executionId: string, again: ReadAgain): Promise<ArtifactView[]> {
  return (await askThroughRestart(() => executor.artifacts(executionId), again)).sort((a, b) => a.ordinal - b.ordinal);
}

/** One artifact's bytes (the executor checks them against the artifact's digest). */
export function jobImage(executor: ExecutorClient, executionId: string, artifact: ArtifactView, again: ReadAgain): Promise<Buffer> {
  return askThroughRestart(() => executor.content(executionId, artifact), again);
}
