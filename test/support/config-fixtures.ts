import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LIVE_SPEND_ACKNOWLEDGEMENT } from '../../src/executor/config/executor-config-schema.js';
import { PACKAGE_ROOT } from './cli.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const TEMPLATES_DIR = join(PACKAGE_ROOT, 'templates');

/** The shipped executor configuration examples, by file name. */
export function shippedExecutorTemplates(): string[] {
  return readdirSync(TEMPLATES_DIR).filter((name) => name.startsWith('executor.') && name.endsWith('.json'));
}

export function readTemplate(name: string): JsonObject {
  return JSON.parse(readFileSync(join(TEMPLATES_DIR, name), 'utf8')) as JsonObject;
}

/** The main shipped example (sandbox provider, embedded engine, explicit credentials). */
export function sandboxConfig(): JsonObject {
  return readTemplate('executor.example.json');
}

/** A complete live configuration: all five live requirements present. */
export function liveConfig(): JsonObject {
  const config = sandboxConfig();
  config.providers = {
    mode: 'live',
    target_id: 'lexec:target:v1:flux-schnell',
    credential: { store: 'keychain', service: 'lexec', account: 'fal-api-key' },
    spend_ceiling: { amount_units: '25000000', units_scale: 6, currency: 'USD' },
    acknowledgement: LIVE_SPEND_ACKNOWLEDGEMENT,
  };
  return config;
}

/** A complete configuration for an external Temporal cluster and managed credentials. */
export function externalEngineConfig(): JsonObject {
  const config = sandboxConfig();
  config.workflow_engine = {
    mode: 'external',
    address: 'grpc://temporal.internal.example:7233',
    namespace: 'lexec',
    task_queue: 'lexec-executions',
    ui_url: 'http://temporal.internal.example:8233',
  };
  config.credentials = { mode: 'managed', state_dir: '/var/lib/lexec/credentials' };
  config.providers = { mode: 'disabled' };
  return config;
}

/** Every object inside `value` with its path (array indexes as numbers). */
export function objectPaths(value: Json, path: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((item, index) => objectPaths(item, [...path, index]));
  if (value === null || typeof value !== 'object') return [];
  return [path, ...Object.entries(value).flatMap(([key, item]) => objectPaths(item, [...path, key]))];
}

/** The value at `path`, which must exist. */
export function at(root: Json, path: readonly (string | number)[]): Json {
  let node: Json = root;
  for (const segment of path) node = (node as Record<string | number, Json>)[segment] as Json;
  return node;
}

export function formatPath(path: readonly (string | number)[]): string {
  return path.map((segment, index) => (typeof segment === 'number' ? `[${segment}]` : index === 0 ? segment : `.${segment}`)).join('');
}
