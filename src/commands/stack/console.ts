import { Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderConsoleReady, renderConsoleStopped, renderNewLogin, renderOpenFailed } from '../../console/render-console.js';
import { serveConsole, type ConsoleStopped } from '../../console/serve-console.js';

export default class StackConsole extends LexecCommand<ConsoleStopped> {
  static override summary = "Serve the operator console for the profile's running stack on 127.0.0.1: executions, images, spend, approvals, reconciliations.";
  static override description =
    'Prints the console address and a one-time login link on stdout at once (--json: one document, and one more per SIGUSR1), then serves the profile resolved at start until Ctrl-C, SIGTERM or SIGHUP (exit 0). The link works once, within 10 minutes; `kill -USR1 <pid>` prints a new one. A session lives in one browser tab and ends after 30 minutes without a request, 12 hours after its login, or at sign-out. The console acts with the stack\'s own capabilities, server-side; none reaches the browser. Details: docs/console.md.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --port 0 --open', '<%= config.bin %> <%= command.id %> --profile sandbox --json'];
  static override flags = {
    ...profileFlags,
    port: Flags.string({ default: '7480', summary: 'Port on 127.0.0.1, 0 for any free port.' }),
    open: Flags.boolean({
      default: false,
      summary: "Open the login link in the platform's browser (xdg-open / open).",
      description: "The link, token included, is then on the opener's command line, which other local users can read in /proc while it runs; the token works once and for 10 minutes. Without --open, copy the link from this command's output.",
    }),
  };

  protected override async execute(output: Output): Promise<ConsoleStopped> {
    const { flags } = await this.parse(StackConsole);
    const stop = new AbortController();
    const onSignal = () => {
      stop.abort();
    };
    // SIGHUP too: the terminal went away, and nobody is left to read a new login link.
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    for (const signal of signals) process.once(signal, onSignal);
    try {
      return await serveConsole({
        env: process.env,
        profile: flags.profile,
        port: wholeNumberFlag(flags.port, '--port', 0, 65_535),
        open: flags.open,
        signal: stop.signal,
        onReady: (address) => {
          renderConsoleReady(address, process.pid, output);
        },
        onNewLogin: (loginUrl) => {
          renderNewLogin(loginUrl, output);
        },
        onOpenFailed: (failure) => {
          renderOpenFailed(failure, output);
        },
      });
    } finally {
      for (const signal of signals) process.off(signal, onSignal);
    }
  }

  /** Everything was printed while serving. */
  protected override renderJsonLines(): void {
    return undefined;
  }

  protected override renderHuman(result: ConsoleStopped, output: Output): void {
    renderConsoleStopped(result, output);
  }
}
