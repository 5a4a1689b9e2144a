import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BuildInfo } from '../../build-info.js';
import { toFieldIssues } from '../../config/zod-issues.js';
import { faultSetSchema, type FaultBook } from './sandbox-faults.js';
import { BODY_TOO_LARGE, decodeJson, readBody, sendJson } from './sandbox-http.js';
import type { SandboxState } from './sandbox-state.js';

/*
 * The sandbox's control API under `/__sandbox/` (docs/sandbox-provider.md, "Control API"): lexec's
 * own conventions (`{"error":{…}}` bodies naming field paths, never values), loopback only,
 * never delayed or failed by a fault.
 */

export interface ControlDependencies {
  readonly state: SandboxState;
  readonly faults: FaultBook;
  readonly logger: Logger;
  readonly buildInfo: BuildInfo;
}

const PATHS = new Set(['/__sandbox/health', '/__sandbox/version', '/__sandbox/submissions', '/__sandbox/faults']);

async function putFaults(deps: ControlDependencies, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const body = await readBody(request);
  if (body === BODY_TOO_LARGE) {
    sendJson(response, 413, { error: { code: 'payload_too_large' } });
    return;
  }
  const decoded = decodeJson(body);
  const parsed = decoded.ok ? faultSetSchema.safeParse(decoded.value, { reportInput: true }) : undefined;
  if (parsed?.success !== true) {
    // The current faults stay as they were.
    const issues = parsed === undefined ? [{ path: '(body)', message: 'must be a JSON document' }] : toFieldIssues(parsed.error.issues);
    sendJson(response, 400, { error: { code: 'invalid_request', fields: issues.map((issue) => issue.path), issues } });
    return;
  }
  deps.faults.replace(parsed.data.faults);
  deps.logger.info({ event: 'sandbox_faults_set', count: parsed.data.faults.length, kinds: parsed.data.faults.map((fault) => fault.kind) });
  sendJson(response, 200, { faults: deps.faults.list() });
}

/** Answers one control request; returns the route template that is logged. */
export async function handleControl(deps: ControlDependencies, method: string, path: string, request: IncomingMessage, response: ServerResponse): Promise<string> {
  const template = `${method} ${path}`;
  switch (template) {
    case 'GET /__sandbox/health':
      sendJson(response, 200, { status: 'ok' });
      break;
    case 'GET /__sandbox/version':
      sendJson(response, 200, deps.buildInfo);
      break;
    case 'GET /__sandbox/submissions':
      sendJson(response, 200, { submissions: deps.state.submissions() });
      break;
    case 'GET /__sandbox/faults':
      sendJson(response, 200, { faults: deps.faults.list() });
      break;
    case 'PUT /__sandbox/faults':
      await putFaults(deps, request, response);
      break;
    case 'DELETE /__sandbox/faults':
      deps.faults.clear();
      deps.logger.info({ event: 'sandbox_faults_set', count: 0, kinds: [] });
      sendJson(response, 200, { faults: [] });
      break;
    default:
      if (PATHS.has(path)) {
        sendJson(response, 405, { error: { code: 'method_not_allowed' } });
        return template;
      }
      sendJson(response, 404, { error: { code: 'not_found' } });
      return 'unmatched';
  }
  return template;
}
