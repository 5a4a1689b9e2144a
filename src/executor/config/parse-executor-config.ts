import { posix } from 'node:path';
import type { FieldIssue } from '../../errors.js';
import { executorConfigSchema, executorConfigSections, type ExecutorConfig } from './executor-config-schema.js';
import { findRawSecrets } from '../../config/secret-scan.js';
import { toFieldIssues } from '../../config/zod-issues.js';

export type ParseResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly issues: readonly FieldIssue[] };

type Sections = { -readonly [K in keyof ExecutorConfig]?: ExecutorConfig[K] };

/** A rule that spans sections. It sees only sections that are valid on their own. */
type CrossSectionRule = (sections: Sections) => FieldIssue[];

const uniqueTargetIds: CrossSectionRule = ({ execution_targets: targets }) =>
  (targets ?? []).flatMap((target, index) =>
    targets?.findIndex((other) => other.target_id === target.target_id) === index
      ? []
      : [{ path: `execution_targets[${index}].target_id`, message: 'repeats the target id of an earlier target' }],
  );

const providersNeedTargets: CrossSectionRule = ({ providers, execution_targets: targets }) =>
  providers !== undefined && providers.mode !== 'disabled' && targets?.length === 0
    ? [{ path: 'execution_targets', message: `must list at least one target when providers.mode is ${providers.mode}` }]
    : [];

/** Live mode: the exact target must exist and be completely, positively priced. */
const liveTargetComplete: CrossSectionRule = ({ providers, execution_targets: targets }) => {
  if (providers?.mode !== 'live' || targets === undefined) return [];
  const index = targets.findIndex((target) => target.target_id === providers.target_id);
  const target = targets[index];
  if (target === undefined) return [{ path: 'providers.target_id', message: 'must name one of execution_targets (live mode needs an exact target)' }];
  const issues: FieldIssue[] = [];
  for (const name of target.presets) {
    const price = target.pricing.by_image_size[name];
    const path = `execution_targets[${index}].pricing.by_image_size.${name}`;
    if (price === undefined) issues.push({ path, message: 'required: live mode needs complete pricing (a price for every preset of the target)' });
    else if (price.numerator === 0n) issues.push({ path: `${path}.numerator`, message: 'must be positive in live mode' });
  }
  return issues;
};

/** State locations must not collide: two components writing one path loses records. */
const distinctStatePaths: CrossSectionRule = ({ storage, credentials, workflow_engine: engine }) => {
  if (storage === undefined) return [];
  const paths: [string, string][] = [
    ['storage.database_path', storage.database_path],
    ['storage.artifact_root', storage.artifact_root],
    ['storage.catalog_path', storage.catalog_path],
  ];
  if (credentials?.mode === 'managed') paths.push(['credentials.state_dir', credentials.state_dir]);
  if (engine?.mode === 'managed_local') paths.push(['workflow_engine.data_dir', engine.data_dir]);
  const issues: FieldIssue[] = [];
  paths.forEach(([field, path], index) => {
    const earlier = paths.slice(0, index).find(([, other]) => other === path);
    if (earlier) issues.push({ path: field, message: `must differ from ${earlier[0]}` });
    const inArtifactRoot = !posix.relative(storage.artifact_root, path).startsWith('..');
    if (field !== 'storage.artifact_root' && !earlier && inArtifactRoot) {
      issues.push({ path: field, message: 'must not be inside storage.artifact_root' });
    }
  });
  return issues;
};

/** A managed engine listens on 127.0.0.1 beside the executor: its ports must not be the executor's. */
const distinctEnginePorts: CrossSectionRule = ({ http, workflow_engine: engine }) => {
  if (http === undefined || engine?.mode !== 'managed_local' || http.port === 0) return [];
  return (['port', 'ui_port'] as const).flatMap((field) =>
    engine[field] === http.port ? [{ path: `workflow_engine.${field}`, message: 'must differ from http.port' }] : [],
  );
};

const CROSS_SECTION_RULES: readonly CrossSectionRule[] = [uniqueTargetIds, providersNeedTargets, liveTargetComplete, distinctStatePaths, distinctEnginePorts];

function validSections(document: Record<string, unknown>): Sections {
  const sections: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(executorConfigSections)) {
    const result = schema.safeParse(document[key]);
    if (result.success) sections[key] = result.data;
  }
  return sections;
}

/**
 * Checks a parsed JSON document against executor configuration schema version 3 and reports every
 * problem with its field path: structure (types, required and unknown fields at every depth),
 * rules that span sections, and raw secrets. Pure: no file, secret store or network is touched.
 */
export function parseExecutorConfig(document: unknown): ParseResult<ExecutorConfig> {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return { ok: false, issues: [{ path: '(document)', message: 'must be a JSON object' }] };
  }
  const record = document as Record<string, unknown>;
  const parsed = executorConfigSchema.safeParse(record, { reportInput: true });
  const sections: Sections = parsed.success ? { ...parsed.data } : validSections(record);
  const issues = [
    ...(parsed.success ? [] : toFieldIssues(parsed.error.issues)),
    ...CROSS_SECTION_RULES.flatMap((rule) => rule(sections)),
    ...findRawSecrets(record),
  ];
  if (issues.length > 0 || !parsed.success) return { ok: false, issues };
  return { ok: true, value: parsed.data };
}
