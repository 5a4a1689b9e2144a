import { Flags } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { UsageError } from '../../errors.js';
import type { AgentSessionEnded } from '../../agent/serve-agent-mcp.js';

export default class AgentMcp extends LexecCommand<AgentSessionEnded> {
  static override summary = "Serve the agent tools over MCP on stdio: AI agents generate images under the operator's spend policy.";
  static override description =
    "Run by an MCP host (Claude Desktop, Claude Code, Cursor, VS Code…), not by hand: stdout carries only MCP messages, diagnostics go to stderr. Finds the selected profile's running stack through its handoff and acts as the profile's local agent; it reads only the agent and executor caller capabilities, so it can request spend but never approve it. Tools: list_targets, quote, generate_images, get_execution, get_images, spending (docs/agent.md). Manual mode: --url and --token-file (the ledger and an agent capability) with --executor-url and --executor-token-file (the executor and a caller capability).";
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --profile sandbox',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /srv/lexec/agent.capability --executor-url http://127.0.0.1:7410 --executor-token-file /srv/lexec/caller.capability',
  ];
  static override flags = {
    ...profileFlags,
    url: Flags.string({ summary: 'Manual mode: the ledger base URL (instead of a profile\'s stack).' }),
    'token-file': Flags.string({ summary: 'Manual mode: absolute path of the agent capability file.' }),
    'executor-url': Flags.string({ summary: 'Manual mode: the executor base URL.' }),
    'executor-token-file': Flags.string({ summary: 'Manual mode: absolute path of the executor caller capability file.' }),
    'ca-file': Flags.string({ summary: 'Manual mode: absolute path of the team CA certificate (ca.pem from `lexec stack tls init`) the https:// ledger and executor must prove themselves against.' }),
  };

  protected override async execute(output: Output): Promise<AgentSessionEnded> {
    const { flags } = await this.parse(AgentMcp);
    if (output.jsonMode) {
      throw new UsageError('usage_error', '`lexec agent mcp` speaks MCP on stdout; --json does not apply to it.', { nextStep: 'Run it without --json, from an MCP host (docs/agent.md).' });
    }
    const { serveAgentMcp } = await import('../../agent/serve-agent-mcp.js');
    return serveAgentMcp({
      env: process.env,
      profile: flags.profile,
      url: flags.url,
      tokenFile: flags['token-file'],
      executorUrl: flags['executor-url'],
      executorTokenFile: flags['executor-token-file'],
      caFile: flags['ca-file'],
    });
  }

  protected override renderHuman(result: AgentSessionEnded, output: Output): void {
    // stdout is the MCP channel: even after the session, the closing line goes to stderr.
    output.diagnostics.line(`lexec agent mcp: session ended (${result.reason})`);
  }
}
