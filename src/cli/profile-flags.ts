import { Flags } from '@oclif/core';

/**
 * The global `--profile <name>`: acts on that profile for this one command, overriding the saved
 * selection (`lexec stack select`). Without it: the selection, else the default profile `sandbox`.
 */
export const profileFlags = {
  profile: Flags.string({
    summary: 'Profile to act on for this command only (overrides `lexec stack select`; default: the selected profile, else "sandbox").',
    helpGroup: 'GLOBAL',
  }),
};
