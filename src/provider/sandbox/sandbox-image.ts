import { createHash } from 'node:crypto';
import { encodePng, type RgbImage } from './png-encoder.js';

export interface SandboxImageSpec {
  /** The request's seed (a 32-bit unsigned integer). */
  readonly seed: number;
  /** Position of the image in the request, from 0. */
  readonly index: number;
  readonly width: number;
  readonly height: number;
}

/**
 * The pixels of one sandbox image: a checkerboard of two colours with a horizontal gradient in
 * the blue channel, all chosen from SHA-256 of (seed, index). So the same seed and index always
 * give the same bytes, and two images of one request differ. Every row of a checker band is the
 * same buffer, which keeps both building and deflating a 1024×1024 image to a few milliseconds.
 */
export function sandboxImagePixels(spec: SandboxImageSpec): RgbImage {
  const { width, height } = spec;
  const digest = createHash('sha256').update(`lexec-sandbox-image:${spec.seed}:${spec.index}`).digest();
  const cell = 16 << (digest[0] ?? 0) % 3; // 16, 32 or 64 pixels
  const colours = [
    [digest[1] ?? 0, digest[2] ?? 0],
    [digest[3] ?? 0, digest[4] ?? 0],
  ] as const;
  const gradientShift = digest[5] ?? 0;

  const bandRow = (parity: number): Buffer => {
    const row = Buffer.alloc(width * 3);
    for (let x = 0; x < width; x += 1) {
      const [red, green] = colours[(Math.floor(x / cell) + parity) & 1] ?? [0, 0];
      row[x * 3] = red;
      row[x * 3 + 1] = green;
      row[x * 3 + 2] = (Math.floor((x * 256) / width) + gradientShift) & 0xff;
    }
    return row;
  };
  const even = bandRow(0);
  const odd = bandRow(1);
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y += 1) rows.push(Math.floor(y / cell) % 2 === 0 ? even : odd);
  return { width, height, rows };
}

/** The PNG bytes of one sandbox image (deterministic; see `sandboxImagePixels`). */
export function renderSandboxImage(spec: SandboxImageSpec): Buffer {
  return encodePng(sandboxImagePixels(spec));
}
