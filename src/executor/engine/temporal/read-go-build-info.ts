import { open, type FileHandle } from 'node:fs/promises';
import { findGoBuildInfo, GO_BUILD_INFO_MAGIC, parseGoBuildInfo, type GoBuildInfo } from './go-build-info.js';

/*
 * Finds a Go binary's build information on disk without reading the whole file: the Temporal
 * CLI is about 250 MB. In an ELF binary the linker gives the blob its own section,
 * `.go.buildinfo`, so the section headers (at the end of the file) say exactly which few KiB to
 * read. Other formats (Mach-O on macOS), or an ELF file without that section, get a streaming
 * scan for the magic in fixed-size chunks, bounded by MAX_SCAN_BYTES.
 */

const ELF_MAGIC = Buffer.from('\x7fELF', 'latin1');
/** The `.go.buildinfo` section is a few KiB; more than this is not one. */
const MAX_SECTION_BYTES = 1024 * 1024;
const SCAN_CHUNK_BYTES = 4 * 1024 * 1024;
/** A scan gives up after this much: larger than any Temporal CLI binary so far (~250 MB). */
const MAX_SCAN_BYTES = 1024 * 1024 * 1024;
/** Enough for the blob's header and both strings (the CLI's module list is ~15 KiB). */
const BLOB_READ_BYTES = 1024 * 1024;

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await file.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

interface ElfLayout {
  readonly is64: boolean;
  readonly little: boolean;
  readonly sectionsAt: number;
  readonly entrySize: number;
  readonly count: number;
  readonly namesIndex: number;
}

/** The section-header table's place, from the ELF file header; null when it cannot be used. */
function elfLayout(header: Buffer): ElfLayout | null {
  if (header.length < 64 || !header.subarray(0, 4).equals(ELF_MAGIC)) return null;
  const is64 = header[4] === 2;
  const little = header[5] === 1;
  const u16 = (at: number) => (little ? header.readUInt16LE(at) : header.readUInt16BE(at));
  const u32 = (at: number) => (little ? header.readUInt32LE(at) : header.readUInt32BE(at));
  const u64 = (at: number) => Number(little ? header.readBigUInt64LE(at) : header.readBigUInt64BE(at));
  const layout = is64
    ? { is64, little, sectionsAt: u64(0x28), entrySize: u16(0x3a), count: u16(0x3c), namesIndex: u16(0x3e) }
    : { is64, little, sectionsAt: u32(0x20), entrySize: u16(0x2e), count: u16(0x30), namesIndex: u16(0x32) };
  // count 0 / index 0xffff: extended numbering (over 65279 sections), never produced by the Go linker.
  const usable = layout.sectionsAt > 0 && layout.count > 0 && layout.namesIndex < layout.count && layout.entrySize >= (is64 ? 64 : 40);
  return usable ? layout : null;
}

/** name offset, file offset and size of section header `index` in `table`. */
function sectionAt(table: Buffer, layout: ElfLayout, index: number): { name: number; offset: number; size: number } {
  const base = index * layout.entrySize;
  const u32 = (at: number) => (layout.little ? table.readUInt32LE(base + at) : table.readUInt32BE(base + at));
  const u64 = (at: number) => Number(layout.little ? table.readBigUInt64LE(base + at) : table.readBigUInt64BE(base + at));
  return layout.is64 ? { name: u32(0), offset: u64(24), size: u64(32) } : { name: u32(0), offset: u32(16), size: u32(20) };
}

/** The file range of the `.go.buildinfo` section; null when the file has no such section. */
async function elfBuildInfoRange(file: FileHandle, layout: ElfLayout): Promise<{ offset: number; size: number } | null> {
  const table = await readAt(file, layout.sectionsAt, layout.count * layout.entrySize);
  if (table.length < layout.count * layout.entrySize) return null;
  const names = sectionAt(table, layout, layout.namesIndex);
  const nameTable = await readAt(file, names.offset, Math.min(names.size, MAX_SECTION_BYTES));
  for (let index = 0; index < layout.count; index += 1) {
    const section = sectionAt(table, layout, index);
    const end = nameTable.indexOf(0, section.name);
    if (end !== -1 && nameTable.toString('latin1', section.name, end) === '.go.buildinfo') return { offset: section.offset, size: section.size };
  }
  return null;
}

/** Reads the file chunk by chunk until a chunk (with a magic-sized overlap) holds a decodable blob. */
async function scanForBuildInfo(file: FileHandle): Promise<GoBuildInfo | null> {
  const overlap = GO_BUILD_INFO_MAGIC.length - 1;
  for (let position = 0; position < MAX_SCAN_BYTES; position += SCAN_CHUNK_BYTES - overlap) {
    const chunk = await readAt(file, position, SCAN_CHUNK_BYTES);
    // The magic also occurs as a plain string in binaries that link debug/buildinfo: try each hit.
    for (let at = chunk.indexOf(GO_BUILD_INFO_MAGIC); at !== -1; at = chunk.indexOf(GO_BUILD_INFO_MAGIC, at + 1)) {
      // The blob may run past this chunk: decode it from a read that starts at the magic.
      const info = parseGoBuildInfo(await readAt(file, position + at, BLOB_READ_BYTES));
      if (info !== null) return info;
    }
    if (chunk.length < SCAN_CHUNK_BYTES) return null;
  }
  return null;
}

/** The Go build information of the binary at `path`; null when it is not a Go binary (or carries none). */
export async function readGoBuildInfo(path: string): Promise<GoBuildInfo | null> {
  const file = await open(path, 'r');
  try {
    const layout = elfLayout(await readAt(file, 0, 64));
    const range = layout === null ? null : await elfBuildInfoRange(file, layout);
    if (range === null) return await scanForBuildInfo(file);
    return findGoBuildInfo(await readAt(file, range.offset, Math.min(range.size, MAX_SECTION_BYTES)));
  } finally {
    await file.close();
  }
}
