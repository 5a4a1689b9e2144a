import { inflateSync } from 'node:zlib';

/*
 * A small, independent PNG reader for tests: it checks what a viewer would (signature, chunk
 * CRCs, IHDR, a complete zlib stream, IEND last) with its own CRC-32 table rather than the
 * zlib.crc32 the encoder uses, so an encoder bug cannot hide behind the same function.
 */

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32Reference(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

export interface PngChunk {
  readonly type: string;
  readonly data: Buffer;
  readonly crcValid: boolean;
}

export interface DecodedPng {
  readonly width: number;
  readonly height: number;
  readonly bitDepth: number;
  readonly colourType: number;
  readonly interlace: number;
  readonly chunks: readonly PngChunk[];
  /** The inflated IDAT data: `height` scanlines of a filter byte plus the pixel bytes. */
  readonly raw: Buffer;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Parses a PNG; throws on a wrong signature, a truncated chunk or trailing bytes. */
export function decodePng(bytes: Buffer): DecodedPng {
  if (!bytes.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG signature');
  const chunks: PngChunk[] = [];
  let offset = 8;
  while (offset < bytes.length) {
    if (offset + 12 > bytes.length) throw new Error('truncated chunk header');
    const length = bytes.readUInt32BE(offset);
    const end = offset + 12 + length;
    if (end > bytes.length) throw new Error('truncated chunk');
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    const crcValid = bytes.readUInt32BE(offset + 8 + length) === crc32Reference(bytes.subarray(offset + 4, offset + 8 + length));
    chunks.push({ type, data, crcValid });
    offset = end;
    if (type === 'IEND' && offset !== bytes.length) throw new Error('bytes after IEND');
  }
  const header = chunks[0];
  if (header?.type !== 'IHDR' || header.data.length !== 13) throw new Error('IHDR is not the first chunk');
  const raw = inflateSync(Buffer.concat(chunks.filter((chunk) => chunk.type === 'IDAT').map((chunk) => chunk.data)));
  return {
    width: header.data.readUInt32BE(0),
    height: header.data.readUInt32BE(4),
    bitDepth: header.data[8] ?? -1,
    colourType: header.data[9] ?? -1,
    interlace: header.data[12] ?? -1,
    chunks,
    raw,
  };
}
