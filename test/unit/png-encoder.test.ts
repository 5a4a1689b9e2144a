import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { IMAGE_SIZES } from '../../src/provider/image-sizes.js';
import { encodePng, PNG_SIGNATURE } from '../../src/provider/sandbox/png-encoder.js';
import { renderSandboxImage, sandboxImagePixels } from '../../src/provider/sandbox/sandbox-image.js';
import { crc32Reference, decodePng } from '../support/png.js';

describe('PNG encoder', () => {
  it('writes signature, IHDR (width, height, 8-bit RGB, no interlace), IDAT and IEND with valid CRCs', () => {
    const rows = [Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255]), Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9])];
    const png = encodePng({ width: 3, height: 2, rows });
    expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    const decoded = decodePng(png);
    expect(decoded.chunks.map((chunk) => chunk.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect(decoded.chunks.every((chunk) => chunk.crcValid)).toBe(true);
    expect({ width: decoded.width, height: decoded.height, bitDepth: decoded.bitDepth, colourType: decoded.colourType, interlace: decoded.interlace }).toEqual({
      width: 3,
      height: 2,
      bitDepth: 8,
      colourType: 2,
      interlace: 0,
    });
    // Each scanline: filter byte 0, then the row's bytes exactly.
    expect(decoded.raw).toEqual(Buffer.concat([Buffer.from([0]), rows[0] ?? Buffer.alloc(0), Buffer.from([0]), rows[1] ?? Buffer.alloc(0)]));
  });

  it('uses a CRC-32 that agrees with an independent table implementation', () => {
    const sample = Buffer.from('IHDR and some bytes');
    expect(crc32(sample)).toBe(crc32Reference(sample));
    expect(crc32Reference(Buffer.from('123456789'))).toBe(0xcbf43926);
  });

  it('refuses sizes out of range and rows of the wrong length or count', () => {
    expect(() => encodePng({ width: 0, height: 1, rows: [Buffer.alloc(0)] })).toThrow(RangeError);
    expect(() => encodePng({ width: 1.5, height: 1, rows: [Buffer.alloc(3)] })).toThrow(RangeError);
    expect(() => encodePng({ width: 2, height: 1, rows: [Buffer.alloc(3)] })).toThrow(RangeError);
    expect(() => encodePng({ width: 1, height: 2, rows: [Buffer.alloc(3)] })).toThrow(RangeError);
  });
});

describe('sandbox images', () => {
  it.each(Object.entries(IMAGE_SIZES))('%s decodes to its preset size with one filter-0 scanline per row', (_preset, { width, height }) => {
    const decoded = decodePng(renderSandboxImage({ seed: 7, index: 0, width, height }));
    expect([decoded.width, decoded.height]).toEqual([width, height]);
    expect(decoded.chunks.every((chunk) => chunk.crcValid)).toBe(true);
    const stride = width * 3 + 1;
    expect(decoded.raw.length).toBe(stride * height);
    for (let y = 0; y < height; y += 1) expect(decoded.raw[y * stride]).toBe(0);
  });

  it('carries exactly the pixels it was built from', () => {
    const spec = { seed: 99, index: 2, width: 576, height: 1024 };
    const decoded = decodePng(renderSandboxImage(spec));
    const stride = spec.width * 3 + 1;
    sandboxImagePixels(spec).rows.forEach((row, y) => {
      expect(decoded.raw.subarray(y * stride + 1, (y + 1) * stride).equals(row)).toBe(true);
    });
  });

  it('is deterministic: same seed and index give identical bytes; another index or seed gives other bytes', () => {
    const spec = { seed: 123_456, index: 1, width: 512, height: 512 };
    const first = renderSandboxImage(spec);
    expect(renderSandboxImage({ ...spec }).equals(first)).toBe(true);
    expect(renderSandboxImage({ ...spec, index: 0 }).equals(first)).toBe(false);
    expect(renderSandboxImage({ ...spec, seed: 123_457 }).equals(first)).toBe(false);
  });

  it('encodes a 1024×1024 image well under 100 ms', () => {
    const spec = { seed: 1, index: 0, width: 1024, height: 1024 };
    renderSandboxImage(spec); // warm-up
    const timings = Array.from({ length: 5 }, () => {
      const started = performance.now();
      renderSandboxImage(spec);
      return performance.now() - started;
    });
    // Best of five: the budget is about the encoder, not about a busy test machine.
    expect(Math.min(...timings)).toBeLessThan(100);
  });
});
