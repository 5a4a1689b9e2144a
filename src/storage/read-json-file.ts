import { readFile } from 'node:fs/promises';
import { errorCode } from '../errors.js';

/*
 * Reading back the small files lexec writes for itself (a generation's manifest, the handoff,
 * supervisor.json, the active pointer, the profile selection). A file that is not there is an
 * ordinary answer ("never written", "withdrawn"), not an error; every other failure to read it
 * (permissions, a directory in its place) is thrown as it is. What a document must look like is
 * the caller's: each has its own schema and its own "damaged" error.
 */

/** A file's UTF-8 text, or null when there is no such file. */
export async function readFileIfPresent(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw error;
  }
}

/** A JSON file as found: not there, there but not JSON (torn or edited), or its parsed document. */
export type JsonFile = { readonly kind: 'missing' } | { readonly kind: 'not_json' } | { readonly kind: 'json'; readonly document: unknown };

export async function readJsonFile(path: string): Promise<JsonFile> {
  const text = await readFileIfPresent(path);
  if (text === null) return { kind: 'missing' };
  try {
    return { kind: 'json', document: JSON.parse(text) as unknown };
  } catch {
    // JSON.parse's message quotes the text, which is never repeated: the caller says "damaged".
    return { kind: 'not_json' };
  }
}
