import type { FieldIssue } from '../../errors.js';
import type { StackComponent } from '../generations/render-generation.js';

/*
 * What `stack start` (and its foreground wait) reports while it works, as data: the steps it
 * takes, what each came to, and the events between them. The start renderer
 * (render-start-progress.ts) words them; services know nothing of terminals or sentences.
 */

/** The profile source renders a generation other than the active one (or no longer renders). */
export type ProfileDrift =
  | { readonly kind: 'renders_differently'; readonly rendered_generation_id: string; readonly changed_files: readonly string[]; readonly affected_components: readonly string[] }
  | { readonly kind: 'does_not_render'; readonly code: string; readonly issues: readonly FieldIssue[] };

/** One step of a start, with the facts its progress line names. */
export type StartStep =
  | { readonly kind: 'stop_orphans'; readonly count: number }
  | { readonly kind: 'active_generation' }
  | { readonly kind: 'preflight' }
  | { readonly kind: 'supervisor' }
  | { readonly kind: 'component_ready'; readonly component: StackComponent; readonly endpoint: string }
  | { readonly kind: 'take_down' }
  | { readonly kind: 'handoff'; readonly handoff_file: string }
  | { readonly kind: 'stop_stack' };

/** What a finished step came to, for the steps whose outcome is only known once they are done. */
export type StartStepOutcome =
  | { readonly kind: 'generation'; readonly generation_id: string; readonly activated: boolean }
  | { readonly kind: 'preflight'; readonly warnings: readonly string[] }
  | { readonly kind: 'supervisor'; readonly pid: number };

/** What a start reports between its steps. */
export type StartEvent =
  | { readonly kind: 'profile_created'; readonly profile: string; readonly source: string }
  | { readonly kind: 'already_running'; readonly profile: string; readonly supervisor_pid: number }
  /**
   * profile.toml now renders something else than the active generation (or, for a running stack
   * only, nothing): a stack `starting` starts the active generation as it is; a stack `joined` keeps
   * running it (a stopped stack whose profile does not render is refused instead).
   */
  | { readonly kind: 'profile_drift'; readonly active_generation_id: string; readonly drift: ProfileDrift; readonly stack: 'starting' | 'joined' }
  | { readonly kind: 'foreground'; readonly profile: string };

/** How the command shows progress (render-start-progress.ts). */
export interface StartProgress {
  step<T>(step: StartStep, work: () => Promise<T>, outcome?: (value: T) => StartStepOutcome): Promise<T>;
  event(event: StartEvent): void;
}
