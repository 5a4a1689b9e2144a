/*
 * The build information the Go linker embeds in every binary (what `go version -m` prints),
 * decoded from bytes. Pure: no files; read-go-build-info.ts finds the bytes.
 *
 * Why lexec reads it: a Temporal CLI built with `go install` (as this project's toolchain does)
 * is not stamped with its release, so `temporal --version` says 0.0.0-DEV; the module version
 * the Go toolchain recorded for github.com/temporalio/cli is then the only trustworthy answer.
 *
 * Layout (Go ≥ 1.18, src/debug/buildinfo/buildinfo.go): a 32-byte header — the 14-byte magic,
 * one byte pointer size, one byte flags — and, when flags & 2, two uvarint-length-prefixed
 * strings right after it: the Go version and the module information. The module information is
 * framed by two 16-byte sentinels (cmd/go modload infoStart/infoEnd) around tab-separated lines:
 * `path\t<main package>`, `mod\t<module>\t<version>\t<sum>`, `dep\t…`, `build\t…`.
 */

/** `\xff Go buildinf:` */
export const GO_BUILD_INFO_MAGIC = Buffer.from('\xff Go buildinf:', 'latin1');
const HEADER_SIZE = 32;
const POINTER_SIZE_OFFSET = 14;
const FLAGS_OFFSET = 15;
/** Flag bit: the strings follow the header inline (Go ≥ 1.18); older binaries hold pointers instead. */
const FLAG_INLINE_STRINGS = 0x2;
const SENTINEL_SIZE = 16;
/** A build-info string longer than this is not one (the Temporal CLI's is about 15 KiB). */
const MAX_STRING_BYTES = 1024 * 1024;

export interface GoModule {
  readonly path: string;
  /** As recorded, e.g. `v1.5.1`, or `(devel)` for a build from a source tree. */
  readonly version: string;
}

export interface GoBuildInfo {
  /** e.g. `go1.25.4`. */
  readonly goVersion: string;
  /** The main package, e.g. `github.com/temporalio/cli/cmd/temporal`; null when not recorded. */
  readonly path: string | null;
  /** The module holding the main package; null for a binary built outside module mode. */
  readonly main: GoModule | null;
}

/** One uvarint-prefixed string at `offset`: its bytes and the offset after it; null when it does not fit. */
function readPrefixedString(bytes: Uint8Array, offset: number): { value: Uint8Array; next: number } | null {
  let length = 0;
  let shift = 0;
  let position = offset;
  for (;;) {
    const byte = bytes[position];
    if (byte === undefined || shift > 28) return null;
    position += 1;
    length += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) break;
    shift += 7;
  }
  if (length > MAX_STRING_BYTES || position + length > bytes.length) return null;
  return { value: bytes.subarray(position, position + length), next: position + length };
}

/** The main module and main package named by module information text (sentinels already removed). */
function parseModuleInfo(text: string): Pick<GoBuildInfo, 'path' | 'main'> {
  let path: string | null = null;
  let main: GoModule | null = null;
  for (const line of text.split('\n')) {
    const [kind, first, second] = line.split('\t');
    if (kind === 'path' && first !== undefined) path = first;
    if (kind === 'mod' && first !== undefined && second !== undefined) main = { path: first, version: second };
  }
  return { path, main };
}

/**
 * Decodes the build information blob that starts at `offset` of `bytes` (at its magic). Null
 * when there is no well-formed blob there, or it is the pre-1.18 pointer form (which would need
 * the binary's address map; lexec's pinned CLIs are all built with a newer Go).
 */
export function parseGoBuildInfo(bytes: Uint8Array, offset = 0): GoBuildInfo | null {
  const header = bytes.subarray(offset, offset + HEADER_SIZE);
  if (header.length < HEADER_SIZE || !GO_BUILD_INFO_MAGIC.equals(header.subarray(0, GO_BUILD_INFO_MAGIC.length))) return null;
  if (((header[FLAGS_OFFSET] ?? 0) & FLAG_INLINE_STRINGS) === 0) return null;
  // The magic can also occur as a plain string (binaries linking debug/buildinfo hold it): a real
  // blob has a 4- or 8-byte pointer size and names a Go toolchain (`go1.25.4`, `devel go1.26-…`).
  if (header[POINTER_SIZE_OFFSET] !== 4 && header[POINTER_SIZE_OFFSET] !== 8) return null;
  const version = readPrefixedString(bytes, offset + HEADER_SIZE);
  if (version === null || !/^(?:go|devel )/.test(Buffer.from(version.value).toString('latin1'))) return null;
  const modules = readPrefixedString(bytes, version.next);
  if (modules === null) return null;
  const framed = modules.value;
  // As debug/buildinfo does: only text framed by the two sentinels (the last ending in a newline) counts.
  const hasFrame = framed.length >= 2 * SENTINEL_SIZE + 1 && framed[framed.length - SENTINEL_SIZE - 1] === 0x0a;
  const text = hasFrame ? Buffer.from(framed.subarray(SENTINEL_SIZE, framed.length - SENTINEL_SIZE)).toString('utf8') : '';
  return { goVersion: Buffer.from(version.value).toString('utf8'), ...parseModuleInfo(text) };
}

/** The first blob found in `bytes` (searching for the magic from `from`), or null. */
export function findGoBuildInfo(bytes: Uint8Array, from = 0): GoBuildInfo | null {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = buffer.indexOf(GO_BUILD_INFO_MAGIC, from); at !== -1; at = buffer.indexOf(GO_BUILD_INFO_MAGIC, at + 1)) {
    const info = parseGoBuildInfo(buffer, at);
    if (info !== null) return info;
  }
  return null;
}

/**
 * The release of `modulePath` when it is the binary's main module: `1.5.1` for `v1.5.1`
 * (prerelease and build suffixes kept); null for another module, `(devel)`, or no module info.
 */
export function mainModuleRelease(info: GoBuildInfo | null, modulePath: string): string | null {
  if (info?.main?.path !== modulePath) return null;
  const match = /^v(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?)$/.exec(info.main.version);
  return match?.[1] ?? null;
}
