import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/*
 * The order the suite's files start in (vitest.config.ts `sequence.sequencer`): the longest
 * first. Four workers take the next file as each one frees, so the run ends when its last file
 * does; a long file that starts late is the run's tail. vitest orders by the durations in its
 * cache (node_modules/.vite/vitest), but a clean clone (CI: `npm ci`) has none, and vitest then
 * starts the largest files first — which put the crash-point and fault matrices (a 4-line file
 * each, 2-3 minutes each) last of all, alone on the machine at the end of the run.
 *
 * A file's expected duration is vitest's cached one when there is one (this checkout's last run
 * of it), otherwise the committed figure in file-durations.json (a whole-suite run's, refreshed
 * with `node test/support/write-file-durations.mjs` after one); a file in neither (a new file)
 * starts first, as vitest starts files it knows nothing of. Ties keep vitest's own order.
 */

const COMMITTED = JSON.parse(readFileSync(new URL('./file-durations.json', import.meta.url), 'utf8')) as { seconds: Record<string, number> };

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const expectedMs = (spec: TestSpecification): number => {
      const cached = this.ctx.cache.getTestSpecificationResult(spec)?.duration;
      if (cached !== undefined) return cached;
      const committed = COMMITTED.seconds[relative(spec.project.config.root, spec.moduleId).split('\\').join('/')];
      return committed === undefined ? Number.POSITIVE_INFINITY : committed * 1000;
    };
    const keyed = base.map((spec, index) => ({ spec, index, ms: expectedMs(spec) }));
    keyed.sort((a, b) => (a.ms === b.ms ? a.index - b.index : b.ms - a.ms));
    return keyed.map(({ spec }) => spec);
  }
}
