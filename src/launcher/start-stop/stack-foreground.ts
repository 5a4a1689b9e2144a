import { lexecHome, profilePaths } from '../home/stack-home.js';
import type { StartProgress } from './start-request.js';
import { stopStack, supervisorStillRunning } from './stack-stop.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ForegroundEnd {
  /** What ended the foreground wait: a signal to the launcher (which then stopped the stack), or the supervisor exiting (e.g. `stack stop` elsewhere). */
  readonly ended_by: 'SIGINT' | 'SIGTERM' | 'supervisor_exited';
}

/**
 * `stack start --foreground`: after a successful start, stay attached until Ctrl-C (SIGINT) or
 * SIGTERM, then stop the stack like `stack stop`; or until the supervisor exits on its own. The
 * supervisor still runs in its own session, so the terminal's Ctrl-C reaches only this process,
 * which then stops the children in order instead of all of them dying at once.
 */
export async function holdInForeground(request: { env: NodeJS.ProcessEnv; profile: string; progress: StartProgress }): Promise<ForegroundEnd> {
  const paths = profilePaths(lexecHome(request.env), request.profile);
  request.progress.note(`running in the foreground: Ctrl-C stops the stack of profile "${paths.name}"`);
  const received: { signal: 'SIGINT' | 'SIGTERM' | null } = { signal: null };
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    received.signal ??= signal;
  };
  const onInt = () => {
    onSignal('SIGINT');
  };
  const onTerm = () => {
    onSignal('SIGTERM');
  };
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    while (received.signal === null && (await supervisorStillRunning(paths))) await sleep(250);
    const signal = received.signal;
    if (signal === null) return { ended_by: 'supervisor_exited' };
    await request.progress.step('stopping the stack', () => stopStack({ env: request.env, profileFlag: paths.name }));
    return { ended_by: signal };
  } finally {
    process.removeListener('SIGINT', onInt);
    process.removeListener('SIGTERM', onTerm);
  }
}
