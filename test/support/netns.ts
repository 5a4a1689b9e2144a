import { afterAll, beforeAll } from 'vitest';
import { createNetnsLab, type NetnsLab } from './netns-core.ts';

/*
 * The network-namespace lab for test files (issue 29 item 4). Everything but netnsLab() lives in
 * ./netns-core.ts (no vitest there, so benchmarks can load it too; the lab itself is described
 * there) and is re-exported from here unchanged.
 */

export * from './netns-core.ts';

/**
 * A lab for a test file: built in beforeAll, torn down in afterAll (and at exit or on a signal,
 * whatever happens). Read `lab()` inside tests and hooks only.
 */
export function netnsLab(count: number): () => NetnsLab {
  let built: NetnsLab | undefined;
  beforeAll(() => {
    built = createNetnsLab(count);
  });
  afterAll(() => {
    built?.teardown();
  });
  return () => {
    if (built === undefined) throw new Error('the lab is not built (netnsLab builds it in beforeAll)');
    return built;
  };
}
