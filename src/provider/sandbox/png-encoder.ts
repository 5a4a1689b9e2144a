import { crc32, deflateSync } from 'node:zlib';

/** The eight bytes every PNG file starts with. */
export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Bytes per pixel of the only colour type written here: 8-bit truecolour (RGB). */
const BYTES_PER_PIXEL = 3;

/** Largest side accepted; far above every preset, small enough to keep a buffer sane. */
const MAX_SIDE = 8192;

/**
 * RGB pixels, one scanline at a time: `rows` are `height` buffers of `width * 3` bytes, top to
 * bottom. A row buffer may appear several times (a repeated band costs nothing to build).
 */
export interface RgbImage {
  readonly width: number;
  readonly height: number;
  readonly rows: readonly Buffer[];
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  // The CRC covers the chunk type and data, not the length (PNG spec §5.3).
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/**
 * Encodes an 8-bit RGB, non-interlaced PNG: signature, IHDR, one IDAT (zlib stream of the
 * scanlines, each prefixed by filter type 0) and IEND. Filter 0 keeps encoding trivial; images
 * made of repeated rows and long runs still compress well because deflate finds the repeats.
 */
export function encodePng(image: RgbImage): Buffer {
  const { width, height, rows } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) {
    throw new RangeError(`PNG sides must be whole numbers from 1 to ${MAX_SIDE}`);
  }
  if (rows.length !== height) throw new RangeError('PNG image needs exactly one row per line of height');
  const rowBytes = width * BYTES_PER_PIXEL;
  const stride = rowBytes + 1;
  const raw = Buffer.alloc(stride * height);
  rows.forEach((row, y) => {
    if (row.length !== rowBytes) throw new RangeError('PNG row length must be width * 3 bytes');
    // raw[y * stride] stays 0: filter type None.
    row.copy(raw, y * stride + 1);
  });
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour
  header[10] = 0; // compression: deflate
  header[11] = 0; // filter method: adaptive (per-row type byte)
  header[12] = 0; // interlace: none
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw, { level: 6 })), chunk('IEND', Buffer.alloc(0))]);
}
