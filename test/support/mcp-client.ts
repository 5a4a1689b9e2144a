import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { TOOLS, type ToolName, type ToolOutput } from '../../src/agent/agent-tools.js';
import { BIN } from './cli.js';

/*
 * A real MCP client (the official SDK's `Client`) that spawns `lexec agent mcp` over stdio, as an
 * MCP host does, and keeps everything the server wrote on stderr for the secrecy checks.
 */

export interface AgentSession {
  readonly client: Client;
  /** What the server process wrote on stderr so far. */
  stderr(): string;
  /** Calls a tool; progress notifications are collected into `progress`. */
  call(name: string, args?: Record<string, unknown>, options?: { timeoutMs?: number; signal?: AbortSignal; progress?: Progress[] }): Promise<CallToolResult>;
  close(): Promise<void>;
}

export async function startAgentSession(options: { env: Record<string, string>; args?: readonly string[] }): Promise<AgentSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'agent', 'mcp', ...(options.args ?? [])],
    env: { PATH: process.env.PATH ?? '', HOME: options.env.LEXEC_HOME ?? '', ...options.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'lexec-test-host', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (error) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    throw new Error(`lexec agent mcp did not start: ${String(error)}\n${stderr}`, { cause: error });
  }
  return {
    client,
    stderr: () => stderr,
    call: async (name, args = {}, call = {}) => {
      const result = await client.callTool({ name, arguments: args }, undefined, {
        timeout: call.timeoutMs ?? 120_000,
        ...(call.signal === undefined ? {} : { signal: call.signal }),
        ...(call.progress === undefined ? {} : { onprogress: (progress: Progress) => call.progress?.push(progress) }),
      });
      return result as CallToolResult;
    },
    close: () => client.close(),
  };
}

/** The structured content of a successful call, read with the tool's output schema (fails the test on an error result). */
export function structured<N extends ToolName>(name: N, result: CallToolResult): ToolOutput<N> {
  if (result.isError === true) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
  return TOOLS[name].output.parse(result.structuredContent) as ToolOutput<N>;
}

/** The `lexec/error` facts of an error result. */
export function toolError(result: CallToolResult): { code: string; message: string; next_step: string; fields: { path: string; message: string }[]; text: string } {
  if (result.isError !== true) throw new Error(`expected a tool error, got ${JSON.stringify(result.structuredContent)}`);
  const meta = result._meta?.['lexec/error'] as { code: string; message: string; next_step: string; fields: { path: string; message: string }[] };
  const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
  return { ...meta, text };
}
