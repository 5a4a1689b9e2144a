import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findDuplicateKeys, jsonErrorLocation, readJsonDocument } from '../../src/config/read-json-document.js';
import { UserError } from '../../src/errors.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { nestedJson, shapeLevels } from '../support/nested-json.js';

describe('jsonErrorLocation', () => {
  it.each([
    ['{"a": x}', 'line 1, column 7 (InvalidSymbol)'],
    ['{\n  "a": 1,\n}', 'line 3, column 1 (PropertyNameExpected)'],
    ['{"a": 1} // note', 'line 1, column 10 (InvalidCommentToken)'],
    ['{"a": 1}\n{"b": 2}', 'line 2, column 1 (EndOfFileExpected)'],
    ['', 'line 1, column 1 (ValueExpected)'],
  ])('locates the first syntax error in %j', async (text, where) => {
    expect(await jsonErrorLocation(text)).toBe(where);
  });
});

describe('findDuplicateKeys', () => {
  it('names every repeated key by path, at any depth', async () => {
    const text = '{"a":1,"b":{"c":1,"c":2},"list":[{"x":1},{"x":1,"x":3}],"a":2}';
    expect(await findDuplicateKeys(text)).toEqual([
      { path: 'b.c', message: 'appears more than once in its object' },
      { path: 'list[1].x', message: 'appears more than once in its object' },
      { path: 'a', message: 'appears more than once in its object' },
    ]);
  });

  it('accepts the same key in different objects', async () => {
    expect(await findDuplicateKeys('{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}')).toEqual([]);
  });
});

describe('readJsonDocument', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await makeTempDir();
  });
  afterEach(async () => {
    await removeDir(dir);
  });

  it('reads a document with a byte-order mark', async () => {
    const path = join(dir, 'c.json');
    await writeFile(path, '\uFEFF{"a": 1}');
    expect(await readJsonDocument(path, 'configuration file')).toEqual({ a: 1 });
  });

  it('refuses a repeated key rather than silently keeping the last value', async () => {
    const path = join(dir, 'c.json');
    await writeFile(path, '{"providers": {"spend_ceiling": 1, "spend_ceiling": 1000000}}');
    const error = await readJsonDocument(path, 'configuration file').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UserError);
    expect(error).toMatchObject({ code: 'config_duplicate_keys', issues: [{ path: 'providers.spend_ceiling' }] });
  });

  it('refuses a document nested thousands deep, well-formed or not, with the path of its first too-deep value (not a stack overflow)', async () => {
    const path = join(dir, 'c.json');
    for (const text of [nestedJson(shapeLevels('mixed', 5000, 'providers')), '['.repeat(50_000)]) {
      await writeFile(path, text);
      const error = await readJsonDocument(path, 'configuration file').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(UserError);
      expect(error).toMatchObject({ code: 'config_too_deep', issues: [{ path: expect.stringMatching(/^(providers|\[0\])/) as unknown }] });
    }
  });

  it('refuses a file over 1 MiB without parsing it', async () => {
    const path = join(dir, 'c.json');
    await writeFile(path, `{"a":"${'x'.repeat(1024 * 1024)}"}`);
    await expect(readJsonDocument(path, 'configuration file')).rejects.toMatchObject({ code: 'config_too_large' });
  });
});
