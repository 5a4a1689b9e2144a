import { containsSecretShape } from '../../domain/secret-text.js';
import { MAX_PROMPT_CHARS } from '../../executor/domain/execution-request.js';

/*
 * What a paid job asks the executor to run: the prompt checks every client makes before any
 * authorization is requested (the executor would refuse the request anyway, leaving a hold), and
 * the execution request body — built here once, for `lexec run`, the agent and the tests.
 */

/** Why a prompt cannot be sent; each client words it for its own surface. */
export type PromptProblem = 'blank' | 'too_long' | 'secret';

export function promptProblem(prompt: string): PromptProblem | null {
  if (prompt.trim() === '') return 'blank';
  if (prompt.length > MAX_PROMPT_CHARS) return 'too_long';
  if (containsSecretShape(prompt)) return 'secret';
  return null;
}

export interface JobIntent {
  readonly tokenId: string;
  readonly prompt: string;
  readonly targetId: string;
  readonly imageSize: string;
  readonly imageCount: number;
}

/** The execution request (schema version 2, input schema version 1) for one job. */
export function executionRequestBody(intent: JobIntent) {
  return {
    schema_version: 2,
    spend_auth_token_id: intent.tokenId,
    input: { prompt: intent.prompt, image_count: intent.imageCount, image_size: intent.imageSize },
    input_schema_version: 1,
    target_id: intent.targetId,
  };
}
