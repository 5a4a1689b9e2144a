import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findGoBuildInfo, GO_BUILD_INFO_MAGIC, mainModuleRelease, parseGoBuildInfo } from '../../src/executor/engine/temporal/go-build-info.js';
import { readGoBuildInfo } from '../../src/executor/engine/temporal/read-go-build-info.js';
import { readTemporalCliVersion } from '../../src/executor/engine/temporal/temporal-cli-version.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { PINNED_TEMPORAL_VERSION } from '../support/temporal.js';

/*
 * The real CLI comes from LEXEC_TEMPORAL_CLI (scripts/test.sh sets it; by hand:
 * export LEXEC_TEMPORAL_CLI="$(../shared/tools/temporal-cli-bin)"). That binary is built with
 * `go install`, so its `--version` says 0.0.0-DEV and only its Go build info names the release.
 */
const realCli = process.env.LEXEC_TEMPORAL_CLI;
const pinned = process.env.LEXEC_TEMPORAL_CLI_VERSION ?? PINNED_TEMPORAL_VERSION;

/** cmd/go's sentinels around the module text (modload infoStart / infoEnd). */
const INFO_START = Buffer.from('3077af0c9274080241e1c107e6d618e6', 'hex');
const INFO_END = Buffer.from('f932433186182072008242104116d8f2', 'hex');

function uvarint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** A build-info blob as the Go ≥ 1.18 linker lays it out. */
function blob(options: { modules: string; goVersion?: string; flags?: number; framed?: boolean }): Buffer {
  const header = Buffer.alloc(32);
  GO_BUILD_INFO_MAGIC.copy(header);
  header[14] = 8;
  header[15] = options.flags ?? 2;
  const version = Buffer.from(options.goVersion ?? 'go1.25.4');
  const text = Buffer.from(options.modules);
  const modules = options.framed === false ? text : Buffer.concat([INFO_START, text, INFO_END]);
  return Buffer.concat([header, uvarint(version.length), version, uvarint(modules.length), modules]);
}

const deps = Array.from({ length: 20 }, (_, n) => `dep\texample.com/dep${n}\tv0.${n}.0\th1:abc=`).join('\n');
const cliModules = `path\tgithub.com/temporalio/cli/cmd/temporal\nmod\tgithub.com/temporalio/cli\tv1.5.1\th1:0RZ=\n${deps}\nbuild\t-compiler=gc\n`;

describe('Go build info, decoded from bytes', () => {
  it('reads the Go version, the main package and the main module (module text longer than one varint byte)', () => {
    const info = parseGoBuildInfo(blob({ modules: cliModules }));
    expect(info).toEqual({
      goVersion: 'go1.25.4',
      path: 'github.com/temporalio/cli/cmd/temporal',
      main: { path: 'github.com/temporalio/cli', version: 'v1.5.1' },
    });
    expect(mainModuleRelease(info, 'github.com/temporalio/cli')).toBe('1.5.1');
  });

  it('finds the blob after other bytes, skipping magics that are only strings', () => {
    const asText = Buffer.concat([GO_BUILD_INFO_MAGIC, Buffer.from('not a header')]);
    const headerWithoutGo = Buffer.concat([GO_BUILD_INFO_MAGIC, Buffer.from([8, 2]), Buffer.alloc(40)]);
    const bytes = Buffer.concat([Buffer.alloc(1000, 7), asText, Buffer.alloc(77), headerWithoutGo, blob({ modules: cliModules })]);
    expect(findGoBuildInfo(bytes)?.main?.version).toBe('v1.5.1');
  });

  it('gives no release for another main module, a source-tree build, or no module text', () => {
    const other = parseGoBuildInfo(blob({ modules: 'path\tx/cmd\nmod\texample.com/x\tv1.0.0\t\n' }));
    expect(mainModuleRelease(other, 'github.com/temporalio/cli')).toBeNull();
    const devel = parseGoBuildInfo(blob({ modules: 'path\tgithub.com/temporalio/cli/cmd/temporal\nmod\tgithub.com/temporalio/cli\t(devel)\t\n' }));
    expect(mainModuleRelease(devel, 'github.com/temporalio/cli')).toBeNull();
    expect(parseGoBuildInfo(blob({ modules: cliModules, framed: false }))?.main).toBeNull();
  });

  it('refuses the pre-1.18 pointer layout and truncated blobs', () => {
    expect(parseGoBuildInfo(blob({ modules: cliModules, flags: 0 }))).toBeNull();
    const whole = blob({ modules: cliModules });
    expect(parseGoBuildInfo(whole.subarray(0, whole.length - 10))).toBeNull();
    expect(parseGoBuildInfo(whole.subarray(0, 20))).toBeNull();
  });
});

describe('readTemporalCliVersion', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await makeTempDir('lexec-temporal-version-');
  });
  afterEach(async () => {
    await removeDir(dir);
  });

  async function script(name: string, body: string | Buffer, mode = 0o755): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, body);
    await chmod(path, mode);
    return path;
  }

  const realCliCase = `reads the go-install-built CLI's release (${pinned}) from its ELF build info, since --version says 0.0.0-DEV`;
  it.skipIf(realCli === undefined)(realCli === undefined ? `${realCliCase} — skipped: LEXEC_TEMPORAL_CLI is not set` : realCliCase, async () => {
    const cli = realCli ?? '';
    expect(await readTemporalCliVersion(cli)).toEqual({ state: 'ran', version: pinned, source: 'go_build_info', reported: '0.0.0-DEV' });
    expect((await readGoBuildInfo(cli))?.main).toEqual({ path: 'github.com/temporalio/cli', version: `v${pinned}` });
  });

  it('takes the version an official release prints', async () => {
    const cli = await script('temporal', '#!/bin/sh\necho "temporal version 1.4.1 (Server 1.28.0, UI 2.39.0)"\n');
    expect(await readTemporalCliVersion(cli)).toEqual({ state: 'ran', version: '1.4.1', source: 'version_output', reported: '1.4.1' });
  });

  it('reports no version for 0.0.0-DEV without build info, and finds build info by scanning a non-ELF file', async () => {
    const unstamped = await script('plain', '#!/bin/sh\necho "temporal version 0.0.0-DEV (Server 1.29.1, UI 2.42.1)"\n');
    expect(await readTemporalCliVersion(unstamped)).toEqual({ state: 'ran', version: null, source: 'version_output', reported: '0.0.0-DEV' });
    // The shell stops at `exit`; the bytes after it stand in for a Mach-O binary's data. The magic
    // straddles the scan's 4 MiB chunk boundary.
    const head = Buffer.from('#!/bin/sh\necho "temporal version 0.0.0-DEV (Server 1.29.1, UI 2.42.1)"\nexit 0\n');
    const padding = Buffer.alloc(4 * 1024 * 1024 - 5 - head.length);
    const withInfo = await script('scanned', Buffer.concat([head, padding, blob({ modules: cliModules })]));
    expect(await readTemporalCliVersion(withInfo)).toEqual({ state: 'ran', version: '1.5.1', source: 'go_build_info', reported: '0.0.0-DEV' });
  });

  it('tells a missing file, a directory, a non-executable file and a failing one apart', async () => {
    expect(await readTemporalCliVersion(join(dir, 'nothing'))).toEqual({ state: 'missing' });
    await mkdir(join(dir, 'a-dir'));
    expect(await readTemporalCliVersion(join(dir, 'a-dir'))).toEqual({ state: 'not_a_file' });
    expect(await readTemporalCliVersion(await script('plain-file', '#!/bin/sh\necho 1.4.1\n', 0o644))).toEqual({ state: 'not_executable' });
    expect(await readTemporalCliVersion(await script('failing', '#!/bin/sh\nexit 3\n'))).toEqual({ state: 'failed', reason: 'exit code 3' });
  });
});
