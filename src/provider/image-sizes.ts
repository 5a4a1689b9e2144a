/** Image size presets of the provider contract (fal queue protocol `image_size`). */
export const IMAGE_SIZE_PRESETS = ['square_hd', 'square', 'portrait_4_3', 'portrait_16_9', 'landscape_4_3', 'landscape_16_9'] as const;
export type ImageSizePreset = (typeof IMAGE_SIZE_PRESETS)[number];

/** Most images one provider submission may ask for. */
export const MAX_IMAGES_PER_EXECUTION = 4;

/**
 * Pixel sizes of the fal `image_size` presets (width × height). The record type makes the
 * compiler insist on one entry per preset above.
 */
export const IMAGE_SIZES: Readonly<Record<ImageSizePreset, { readonly width: number; readonly height: number }>> = {
  square_hd: { width: 1024, height: 1024 },
  square: { width: 512, height: 512 },
  portrait_4_3: { width: 768, height: 1024 },
  portrait_16_9: { width: 576, height: 1024 },
  landscape_4_3: { width: 1024, height: 768 },
  landscape_16_9: { width: 1024, height: 576 },
};
