import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { UserError } from '../../src/errors.js';
import { parseProfile } from '../../src/launcher/profiles/profile-store.js';
import { PACKAGE_ROOT } from './cli.js';
import { freePorts } from './free-ports.js';

/*
 * The shipped example profiles (profiles.example/*.toml) as test input: their text, as mutable
 * tables, and written into a LEXEC_HOME on ports that are free right now. A profile's ports are
 * fixed by design (they cannot be 0), so they are ports reserved for this test worker
 * (free-ports.ts): nothing else can take one before the stack binds it.
 */

export const EXAMPLES_DIR = join(PACKAGE_ROOT, 'profiles.example');

export type TomlTable = Record<string, unknown>;

/** The shipped example profiles, by file name (`sandbox.toml`, …). */
export function exampleNames(): string[] {
  return readdirSync(EXAMPLES_DIR).filter((name) => name.endsWith('.toml')).sort();
}

/** An example's text as shipped (`sandbox` or `sandbox.toml`). */
export function exampleText(name: string): string {
  return readFileSync(join(EXAMPLES_DIR, name.endsWith('.toml') ? name : `${name}.toml`), 'utf8');
}

/** An example profile as a mutable table; `toToml` writes it back. */
export function exampleTable(name: string): TomlTable {
  return parse(exampleText(name));
}

export function toToml(table: TomlTable): string {
  return stringify(table);
}

/** The table at a dotted path (`ports`, `execution_targets.0.pricing`). */
export function tableAt(table: TomlTable, path: string): TomlTable {
  let current: unknown = table;
  for (const key of path.split('.')) current = (current as Record<string, unknown>)[key];
  return current as TomlTable;
}

export interface ProfileOnFreePorts {
  readonly text: string;
  /** The port chosen for each of the example's [ports] (ledger, executor and, in a sandbox example, sandbox). */
  readonly ports: Readonly<Record<string, number>>;
}

/**
 * An example profile with each of its [ports] replaced by a port free right now; `edit` may
 * change the table further before it is written back as TOML.
 */
export async function profileOnFreePorts(example: string, edit: (table: TomlTable) => void = () => undefined): Promise<ProfileOnFreePorts> {
  const table = exampleTable(example);
  const names = Object.keys(tableAt(table, 'ports'));
  const free = await freePorts(names.length);
  const ports = Object.fromEntries(names.map((name, index) => [name, free[index] ?? 0]));
  table.ports = { ...ports };
  edit(table);
  return { text: toToml(table), ports };
}

// A type literal, not an interface, so that Object.values() of it is number[].
export type StackPorts = { readonly ledger: number; readonly executor: number; readonly sandbox: number };

/** The sandbox example (or another sandbox-kind example, e.g. `external-temporal`) on free ports, with the three ports chosen. */
export async function sandboxProfile(edit?: (table: TomlTable) => void, example = 'sandbox'): Promise<{ readonly text: string; readonly ports: StackPorts }> {
  const { text, ports } = await profileOnFreePorts(example, edit);
  const { ledger, executor, sandbox } = ports;
  if (ledger === undefined || executor === undefined || sandbox === undefined) throw new Error('the sandbox example no longer has ledger, executor and sandbox [ports]');
  return { text, ports: { ledger, executor, sandbox } };
}

/** The sandbox example on free ports, as text. */
export async function sandboxProfileText(edit?: (table: TomlTable) => void): Promise<string> {
  return (await sandboxProfile(edit)).text;
}

/** Writes `<home>/profiles/<name>/profile.toml` (the profile directory 0700, as the launcher makes it). */
export async function writeProfile(home: string, name: string, text: string): Promise<string> {
  const dir = join(home, 'profiles', name);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'profile.toml');
  await writeFile(path, text);
  return path;
}

/** The refusal `parseProfile` answers `text` with, read from `source`; a profile it accepts fails the test. */
export async function profileRefusal(text: string, source: string): Promise<UserError> {
  try {
    await parseProfile(text, source);
  } catch (error) {
    if (error instanceof UserError) return error;
    throw error;
  }
  throw new Error('expected the profile to be refused');
}

/** The sandbox example with `[ledger] <key> = value`, parsed: the profile, or the issues it is refused with. */
export async function sandboxWithLedgerSetting(key: string, value: unknown) {
  const table = exampleTable('sandbox');
  tableAt(table, 'ledger')[key] = value;
  try {
    return { profile: await parseProfile(toToml(table), 'profile.toml'), issues: [] };
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return { profile: null, issues: error.issues };
  }
}
