import type { ImageSizePreset } from '../config/executor-config-schema.js';

/**
 * Pixel sizes of the fal `image_size` presets (width × height). The record type makes the
 * compiler insist on one entry per preset named in the executor configuration schema.
 */
export const IMAGE_SIZES: Readonly<Record<ImageSizePreset, { readonly width: number; readonly height: number }>> = {
  square_hd: { width: 1024, height: 1024 },
  square: { width: 512, height: 512 },
  portrait_4_3: { width: 768, height: 1024 },
  portrait_16_9: { width: 576, height: 1024 },
  landscape_4_3: { width: 1024, height: 768 },
  landscape_16_9: { width: 1024, height: 576 },
};
