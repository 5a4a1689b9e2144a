import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ReadResourceRequestSchema, type CallToolResult, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { z } from 'zod';
import type { BuildInfo } from '../build-info.js';
import { UserError } from '../errors.js';
import { formatFieldPath } from '../config/field-path.js';
import type { AgentTarget, ConnectAgent } from '../stack-client/connect-agent.js';
import { getExecution, getImages, listTargets, quote, readImage, spending, type ToolAnswer, type ToolContext } from './agent-service.js';
import { agentWording } from './agent-wording.js';
import { generateImages } from './generate-images.js';
import { TOOLS, type ToolInput, type ToolName } from './agent-tools.js';
import { IMAGE_URI_TEMPLATE, parseImageUri, RESOURCE_NOT_FOUND, resourceNotFound, resourceReadError } from './image-resource.js';

/*
 * The MCP server of `lexec agent mcp` (docs/agent.md). Tools are registered with the SDK's
 * `registerTool` (their zod schemas are what `tools/list` shows); calls are dispatched here so
 * that every failure — a bad argument included — is one kind of answer: an `isError` result
 * whose text starts with a stable code, lists the field paths at fault and ends with a next
 * step, with the same facts in `_meta["lexec/error"]`. This is the surface's one error handler.
 * Nothing a tool answers, reports as progress or writes to stderr carries a capability, a
 * path, a URL or a submitted value (a prompt); `safeText` strips URLs and paths from every
 * message as a second line of defence behind messages written without them.
 */

export interface AgentMcpOptions {
  readonly connect: ConnectAgent;
  readonly buildInfo: BuildInfo;
  /** One diagnostic line for stderr (never protocol output). */
  readonly log: (line: string) => void;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

type Handler = (target: AgentTarget, input: never, context: ToolContext) => Promise<ToolAnswer<unknown>>;

/** Each tool's service function; the input has been parsed with the tool's own schema. */
const HANDLERS: Record<ToolName, Handler> = {
  list_targets: (target) => listTargets(target),
  quote: (target, input: ToolInput<'quote'>) => quote(target, input),
  generate_images: (target, input: ToolInput<'generate_images'>, context) => generateImages(target, input, context),
  get_execution: (target, input: ToolInput<'get_execution'>) => getExecution(target, input),
  get_images: (target, input: ToolInput<'get_images'>, context) => getImages(target, input, context),
  spending: (target) => spending(target),
};

/**
 * The version a host sees in `serverInfo`: the product version with the contract version, the
 * full source commit and the build kind as semver build metadata, so one string says everything
 * `lexec version --json` says (v0.3.0+contract.v4.5.commit.<40 hex>.development).
 */
export function serverVersion(info: BuildInfo): string {
  return `${info.product_version}+contract.${info.contract_version}.commit.${info.commit}.${info.build_kind}`;
}

export function createAgentMcpServer(options: AgentMcpOptions): McpServer {
  const { buildInfo } = options;
  const server = new McpServer(
    { name: 'lexec', title: 'lexec: spend-controlled image generation', version: serverVersion(buildInfo) },
    {
      instructions:
        "lexec runs paid image generation under the operator's spend policy. Call list_targets or quote first (free), then generate_images. Amounts are exact micro-units (1000000 = 1 USD). If generate_images answers awaiting_approval, a human must approve: show them the approve_command and call again with authorization_id once approved. If it answers running, call again with execution_id. Resuming never spends twice.",
    },
  );

  for (const [name, tool] of Object.entries(TOOLS)) {
    server.registerTool(
      name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output, annotations: annotationsOf(name as ToolName) },
      // Never called: calls are dispatched below (the SDK's dispatcher would answer bad arguments without a code).
      () => ({ content: [], isError: true }),
    );
  }

  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    if (!(name in TOOLS)) return errorResult(new UserError('unknown_tool', 'There is no tool of that name.', { nextStep: 'tools/list lists the tools.' }));
    const tool = TOOLS[name as ToolName];
    const started = Date.now();
    try {
      const parsed = tool.input.safeParse(request.params.arguments ?? {});
      if (!parsed.success) throw argumentError(parsed.error);
      const answer = await HANDLERS[name as ToolName](await options.connect(), parsed.data as never, toolContext(options, extra));
      const structured = tool.output.parse(answer.result) as Record<string, unknown>;
      options.log(`tool ${name}: ok in ${Date.now() - started} ms`);
      return resultOf(structured, answer);
    } catch (error) {
      const result = errorResult(error);
      const { code } = result._meta['lexec/error'] as { code: string };
      options.log(`tool ${name}: ${code} in ${Date.now() - started} ms`);
      if (!(error instanceof UserError)) options.log(`tool ${name}: internal error: ${safeText(error instanceof Error ? error.name : 'unknown')}`);
      return result;
    }
  });

  server.registerResource(
    'image',
    new ResourceTemplate(IMAGE_URI_TEMPLATE, { list: undefined }),
    { title: 'An image of an execution', description: 'One image a generate_images or get_images call returned as a link.', mimeType: 'image/png' },
    // Never called: reads are dispatched below (the SDK's dispatcher echoes an unknown URI back).
    () => ({ contents: [] }),
  );

  // Every read that gives no image is -32002 (the MCP spec's resource not found) or -32603 (the
  // stack failed), never with the URI in the message (image-resource.ts).
  server.server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const image = parseImageUri(request.params.uri);
    if (image === null) throw resourceNotFound();
    try {
      const read = await readImage(await options.connect(), image.executionId, image.ordinal);
      return { contents: [{ uri: request.params.uri, mimeType: read.mediaType, blob: read.bytes.toString('base64') }] };
    } catch (error) {
      const answer = resourceReadError(error, describe);
      options.log(`resources/read: ${answer.code === RESOURCE_NOT_FOUND ? 'not found' : describe(error).code}`);
      throw answer;
    }
  });
  return server;
}

function annotationsOf(name: ToolName) {
  const free = name !== 'generate_images';
  return { readOnlyHint: free, destructiveHint: false, idempotentHint: free, openWorldHint: !free };
}

function toolContext(options: AgentMcpOptions, extra: Extra): ToolContext {
  const token = extra._meta?.progressToken;
  let progress = 0;
  return {
    signal: extra.signal,
    progress: (message) => {
      const line = safeText(message);
      options.log(`progress: ${line}`);
      if (token === undefined) return;
      progress += 1;
      extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message: line } }).catch(() => {
        // The host went away: the call ends at its next safe point.
      });
    },
  };
}

function resultOf(structured: Record<string, unknown>, answer: ToolAnswer<unknown>): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text: JSON.stringify(structured) }];
  for (const image of answer.images) {
    const { view } = image;
    if (image.bytes === null) {
      content.push({ type: 'resource_link', uri: view.uri, name: `image ${view.ordinal}`, mimeType: view.media_type, description: `${view.size_bytes} bytes, sha256 ${view.sha256}` });
    } else {
      content.push({ type: 'image', data: image.bytes.toString('base64'), mimeType: view.media_type });
    }
  }
  return { content, structuredContent: structured };
}

/** A bad argument: every issue's field path, the schema's own words, never the value given. */
function argumentError(error: z.ZodError): UserError {
  const issues = error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: formatFieldPath([...issue.path, key]), message: 'unknown argument' }))
      : [{ path: issue.path.length === 0 ? '(arguments)' : formatFieldPath(issue.path), message: issueMessage(issue) }],
  );
  const paths = [...new Set(issues.map((issue) => issue.path))].join(', ');
  return new UserError('invalid_argument', `Invalid arguments: ${paths}.`, { nextStep: 'Correct the fields listed; the tool\'s input schema (tools/list) says what each one takes.', issues });
}

function issueMessage(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${issue.expected}`;
    case 'too_small':
      return issue.origin === 'string' ? `must be at least ${String(issue.minimum)} characters` : `must be at least ${String(issue.minimum)}`;
    case 'too_big':
      return issue.origin === 'string' ? `must be at most ${String(issue.maximum)} characters` : `must be at most ${String(issue.maximum)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map(String).join(', ')}`;
    default:
      return safeText(issue.message);
  }
}

/** Removes anything that looks like a URL, an absolute path or a capability from a message. */
export function safeText(text: string): string {
  return text
    .replace(/lexec_[a-z]+_[A-Za-z0-9_-]{20,}/g, '<capability>')
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s`'")]+/gi, (match) => (match.startsWith('lexec://') ? match : '<url>'))
    .replace(/(^|[\s(`'"=])\/[^\s`'")]+/g, '$1<path>');
}

function describe(error: unknown): { code: string; message: string; nextStep: string; fields: { path: string; message: string }[] } {
  if (error instanceof UserError) {
    const { message, nextStep } = agentWording(error);
    return {
      code: error.code,
      message: safeText(message),
      nextStep: safeText(nextStep),
      fields: error.issues.map((issue) => ({ path: issue.path, message: safeText(issue.message) })),
    };
  }
  return {
    code: 'internal_error',
    message: 'lexec failed unexpectedly while answering; nothing was spent by this failure itself.',
    nextStep: 'Call get_execution for any execution id already returned; report the error to the operator (the MCP host log has the server\'s stderr).',
    fields: [],
  };
}

/** The surface's one error handler: a tool error result with a stable code and a next step. */
export function errorResult(error: unknown): CallToolResult & { _meta: Record<string, unknown> } {
  const described = describe(error);
  const lines = [`error ${described.code}: ${described.message}`];
  for (const field of described.fields) lines.push(`  ${field.path}: ${field.message}`);
  lines.push(`next step: ${described.nextStep}`);
  return {
    isError: true,
    content: [{ type: 'text', text: lines.join('\n') }],
    _meta: { 'lexec/error': { code: described.code, message: described.message, next_step: described.nextStep, fields: described.fields } },
  };
}
