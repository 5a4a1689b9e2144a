import { serializeJson } from '../http/json-server.js';
import { executionDetail } from './execution-view.js';
import type { ExecutionStore } from './store/execution-store.js';

/** How many serialised answers are kept (about 1.2 KiB each). */
export const ANSWER_CACHE_ENTRIES = 4096;

/**
 * The serialised `{"execution": <detail>}` answer of `GET /v1/executions/{id}` and
 * `POST /v2/executions`, kept per execution together with the store revision it was built at
 * and served again only while the execution is still at that revision: any write to the
 * execution (state, attempts, receipt, artifacts) makes the next answer a fresh one. The answer
 * is always built from rows read at the revision it is kept under — never from a row read
 * earlier — so a kept answer can never be older than the database. A bounded LRU.
 */
export function createExecutionAnswers(store: ExecutionStore, capacity = ANSWER_CACHE_ENTRIES) {
  const kept = new Map<string, { readonly revision: number; readonly text: string }>();

  return {
    /** The answer's JSON text, or undefined when there is no such execution. */
    text(executionId: string): string | undefined {
      const revision = store.revision(executionId);
      const entry = kept.get(executionId);
      kept.delete(executionId);
      if (entry !== undefined && entry.revision === revision) {
        kept.set(executionId, entry);
        return entry.text;
      }
      // Read and serialised synchronously right after taking the revision: nothing can write
      // in between, so the text belongs to exactly that revision.
      const execution = executionDetail(store, executionId);
      if (execution === undefined) return undefined;
      const text = serializeJson({ execution });
      kept.set(executionId, { revision, text });
      if (kept.size > capacity) kept.delete(kept.keys().next().value as string);
      return text;
    },
  };
}
