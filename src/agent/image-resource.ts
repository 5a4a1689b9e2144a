import { UserError } from '../errors.js';

/*
 * The MCP resource behind a `delivery: "links"` image: `lexec://executions/{id}/images/{n}`, read
 * with `resources/read` (docs/agent.md). What a read answers when it cannot give the image is a
 * JSON-RPC error, not a tool result, so it gets its own small mapping here: the MCP spec's
 * resource-not-found code (-32002, "Resources" → "Error Handling", protocol 2024-11-05 through
 * 2025-11-25, all the SDK negotiates) for any URI that names no image lexec has — a foreign URI,
 * a malformed one, an unknown execution or ordinal — and -32603 for a failure of the stack. The
 * message never repeats the URI: a client may send anything there, a pasted secret included.
 */

export const IMAGE_URI_TEMPLATE = 'lexec://executions/{execution_id}/images/{ordinal}';

/** MCP's resource-not-found error code (the spec's "Resources" error handling). */
export const RESOURCE_NOT_FOUND = -32002;
/** JSON-RPC's internal error. */
export const INTERNAL_ERROR = -32603;

const IMAGE_URI = /^lexec:\/\/executions\/(exe_[0-9a-f]{32})\/images\/(0|[1-9][0-9]{0,2})$/;

/** The execution and ordinal a URI names, or null when it names no lexec image. */
export function parseImageUri(uri: string): { executionId: string; ordinal: number } | null {
  const match = IMAGE_URI.exec(uri);
  return match === null ? null : { executionId: match[1] ?? '', ordinal: Number(match[2]) };
}

/**
 * A JSON-RPC error a request handler throws: the SDK's dispatcher answers with its numeric `code`
 * and its `message` as they are (the SDK's McpError would prefix "MCP error <code>:" and the
 * client prefixes it again).
 */
export class ResourceReadError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = 'ResourceReadError';
    this.code = code;
  }
}

/** Codes of the stack's refusals that mean "no such execution or image". */
const NOT_FOUND_CODES = new Set(['executor_not_found', 'image_not_found']);

export function resourceNotFound(): ResourceReadError {
  return new ResourceReadError(
    RESOURCE_NOT_FOUND,
    `Resource not found: no image of an execution has that URI. get_images lists an execution's images and their URIs (${IMAGE_URI_TEMPLATE}).`,
  );
}

/**
 * The error a failed read answers with. `describe` gives an error's safe code and message (the
 * tools' own wording, URLs and paths removed).
 */
export function resourceReadError(error: unknown, describe: (error: unknown) => { code: string; message: string }): ResourceReadError {
  if (error instanceof UserError && NOT_FOUND_CODES.has(error.code)) return resourceNotFound();
  const { code, message } = describe(error);
  return new ResourceReadError(INTERNAL_ERROR, `${code}: ${message}`);
}
