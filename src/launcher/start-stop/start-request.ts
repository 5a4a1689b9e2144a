/*
 * What `stack start` is asked (and how it shows progress), shared by the use case
 * (stack-start.ts), its readiness wait (stack-readiness-wait.ts) and foreground mode, so none of
 * them imports another for a type.
 */

/** How the command shows progress; services know nothing of terminals (src/cli/start-progress.ts). */
export interface StartProgress {
  step<T>(title: string, work: () => Promise<T>, done?: (value: T) => string): Promise<T>;
  note(text: string): void;
}

export interface StartRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profileFlag: string | undefined;
  readonly timeoutMs: number;
  readonly progress: StartProgress;
  readonly now: () => Date;
}
