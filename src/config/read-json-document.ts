import { readFile, stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { errorCode, UsageError, UserError, type FieldIssue } from '../errors.js';
import { duplicateKeyIssues } from './duplicate-keys.js';
import { jsonDepthIssue, MAX_JSON_DEPTH } from './json-depth.js';

/** Largest configuration document lexec reads; real ones are a few KiB. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Where the first JSON syntax error is, as "line L, column C" plus the parser's error kind.
 * JSON.parse's own message is never shown: it quotes the document, which may hold private values.
 */
export async function jsonErrorLocation(text: string): Promise<string> {
  const { parse, printParseErrorCode } = await import('jsonc-parser');
  const errors: import('jsonc-parser').ParseError[] = [];
  parse(text, errors, { allowTrailingComma: false, disallowComments: true, allowEmptyContent: false });
  const first = errors[0];
  if (first === undefined) return 'an unknown position';
  const before = text.slice(0, first.offset);
  const line = before.split('\n').length;
  const column = first.offset - before.lastIndexOf('\n');
  return `line ${line}, column ${column} (${printParseErrorCode(first.error)})`;
}

/** Paths of keys that appear twice in one object (see duplicate-keys.ts); loads the parser lazily. */
export async function findDuplicateKeys(text: string): Promise<FieldIssue[]> {
  const { visit } = await import('jsonc-parser');
  return duplicateKeyIssues(text, visit);
}

/**
 * Reads and parses the JSON document at `path` (what: "configuration file"). Only reads: no
 * file or directory is created. Every failure is a UserError naming the path.
 */
export async function readJsonDocument(path: string, what: string): Promise<unknown> {
  if (!isAbsolute(path)) {
    throw new UsageError('config_path_not_absolute', `The ${what} path must be absolute; got a relative path.`, {
      nextStep: 'Pass the full path, for example --config "$PWD/executor.json".',
    });
  }
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) {
      throw new UserError('config_not_a_file', `The ${what} ${path} is not a regular file.`, {
        nextStep: `Point --config at the JSON ${what} itself.`,
      });
    }
    size = info.size;
  } catch (error) {
    if (error instanceof UserError) throw error;
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') {
      throw new UserError('config_not_found', `The ${what} ${path} does not exist.`, {
        nextStep: 'Check the path, or copy templates/executor.example.json there and edit it.',
      });
    }
    throw new UserError('config_unreadable', `The ${what} ${path} cannot be read (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check the permissions of the file and of its directories.',
    });
  }
  if (size > MAX_CONFIG_BYTES) {
    throw new UserError('config_too_large', `The ${what} ${path} is larger than ${MAX_CONFIG_BYTES} bytes.`, {
      nextStep: `Check that --config names the ${what}, not another file.`,
    });
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UserError('config_unreadable', `The ${what} ${path} cannot be read (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check the permissions of the file and of its directories.',
    });
  }
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  // Before the parse: the syntax-error locator and the duplicate-key scan recurse per level.
  const tooDeep = jsonDepthIssue(body);
  if (tooDeep !== null) {
    throw new UserError('config_too_deep', `The ${what} ${path} nests objects or arrays more than ${String(MAX_JSON_DEPTH)} levels deep.`, {
      nextStep: `Check that the path names the ${what}; real ones nest a few levels.`,
      issues: [tooDeep],
    });
  }
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch {
    const where = await jsonErrorLocation(body);
    throw new UserError('config_not_json', `The ${what} ${path} is not valid JSON: syntax error at ${where}.`, {
      nextStep: 'Fix the JSON syntax at that position (a JSON validator or `node -e` can help).',
      issues: [{ path: '(document)', message: `invalid JSON at ${where}` }],
    });
  }
  const duplicates = await findDuplicateKeys(body);
  if (duplicates.length > 0) {
    throw new UserError('config_duplicate_keys', `The ${what} ${path} repeats a key within one object.`, {
      nextStep: 'Keep one entry for each key listed (JSON parsers disagree on which duplicate wins).',
      issues: duplicates,
    });
  }
  return document;
}
