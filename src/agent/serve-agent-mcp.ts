import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { readBuildInfo } from '../build-info.js';
import { prepareAgentConnection, type AgentConnectionRequest } from '../stack-client/connect-agent.js';
import { UsageError, UserError } from '../errors.js';
import { createAgentMcpServer, safeText } from './mcp-server.js';

/*
 * The composition root of `lexec agent mcp`: prove the stack can be reached (a selected profile
 * without an active handoff fails here, before any protocol), then serve the MCP tools on stdio
 * until the host closes stdin or sends SIGINT/SIGTERM. Diagnostics are lines on stderr.
 */

export interface AgentSessionEnded {
  readonly reason: 'stdin_closed' | 'SIGINT' | 'SIGTERM';
}

export async function serveAgentMcp(request: AgentConnectionRequest): Promise<AgentSessionEnded> {
  const log = (line: string) => process.stderr.write(`lexec agent mcp: ${line}\n`);
  const { connect, profile } = await prepareAgentConnection(request).catch((error: unknown) => {
    // The host shows stderr to people who did not start the stack: no paths or URLs there either.
    if (!(error instanceof UserError)) throw error;
    const options = { nextStep: safeText(error.nextStep), issues: error.issues.map((issue) => ({ path: issue.path, message: safeText(issue.message) })) };
    throw error instanceof UsageError ? new UsageError(error.code, safeText(error.message), options) : new UserError(error.code, safeText(error.message), { ...options, exitCode: error.exitCode });
  });
  const server = createAgentMcpServer({ connect, buildInfo: readBuildInfo(), log });
  const transport = new StdioServerTransport();
  const ended = new Promise<AgentSessionEnded>((resolve) => {
    const stop = (reason: AgentSessionEnded['reason']) => () => {
      resolve({ reason });
    };
    process.stdin.once('end', stop('stdin_closed'));
    process.stdin.once('close', stop('stdin_closed'));
    process.once('SIGINT', stop('SIGINT'));
    process.once('SIGTERM', stop('SIGTERM'));
  });
  await server.connect(transport);
  log(profile === null ? 'serving (manual mode)' : `serving the stack of profile "${profile}"`);
  const result = await ended;
  await server.close();
  return result;
}
