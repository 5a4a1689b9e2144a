import { join } from 'node:path';
import { rotateExecutorCredential, sharedCredentialSteps } from '../executor/credentials/rotate-executor-credential.js';
import { generationDir } from '../launcher/generations/generation-store.js';
import type { ActiveStack } from './locate-stack.js';
import type { ExecutorRotation, SharedExecutorSteps } from './stack-credential-rotation.js';

/**
 * The executor's part of `stack credentials rotate`: its caller or reconciliation capability,
 * rotated at the running executor's own database with the configuration of the generation the
 * stack runs (src/executor/credentials/rotate-executor-credential.ts).
 */
export const rotateAtExecutor: ExecutorRotation = async (stack, role, graceSeconds) => {
  const configPath = join(generationDir(stack.paths, stack.handoff.generation_id), 'executor.json');
  const rotated = await rotateExecutorCredential({ configPath, role, graceSeconds });
  return {
    credential_id: rotated.credential.credential_id,
    replaced_credential_id: rotated.previous?.credential_id ?? '',
    old_accepted_until: rotated.previous?.expires_at ?? null,
    outcome: 'rotated',
    credential_file: rotated.credential_file,
  };
};

/**
 * The executor's steps for the stack's metrics capability, which its ledger accepts too (a stack
 * that runs no executor — a ledger host — has none).
 */
export async function metricsAtExecutor(stack: ActiveStack): Promise<SharedExecutorSteps | null> {
  if (stack.handoff.executor === undefined) return null;
  return sharedCredentialSteps(join(generationDir(stack.paths, stack.handoff.generation_id), 'executor.json'), 'metrics');
}
