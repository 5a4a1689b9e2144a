import type { StartProgress } from '../launcher/start-stop/start-request.js';
import type { Output } from '../terminal/output.js';

/*
 * Progress of `stack start` on stderr: listr2's animated task list when stderr is a terminal
 * with colour on (and not --json), one plain line per finished step otherwise (pipes, CI,
 * --json, --color never). listr2 is loaded only in the first case.
 */

function elapsed(since: number): string {
  const ms = Date.now() - since;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function plainProgress(output: Output): StartProgress {
  return {
    async step(title, work, done) {
      const since = Date.now();
      try {
        const value = await work();
        output.diagnostics.line(`${output.diagnostics.style.ok('✔')} ${title}${done === undefined ? '' : `: ${done(value)}`} ${output.diagnostics.style.dim(`(${elapsed(since)})`)}`);
        return value;
      } catch (error) {
        output.diagnostics.line(`${output.diagnostics.style.error('✖')} ${title} ${output.diagnostics.style.dim(`(${elapsed(since)})`)}`);
        throw error;
      }
    },
    note(text) {
      output.diagnostics.line(text);
    },
  };
}

async function listrProgress(output: Output): Promise<StartProgress> {
  const { Listr, ListrLogger, ProcessOutput } = await import('listr2');
  // listr2 writes to stdout by default; stdout is reserved for --json documents.
  const logger = new ListrLogger({ useIcons: true, toStderr: [], processOutput: new ProcessOutput(process.stderr, process.stderr) });
  return {
    async step(title, work, done) {
      let value: Awaited<ReturnType<typeof work>> | undefined;
      const since = Date.now();
      await new Listr(
        [
          {
            title,
            task: async (_context, task) => {
              value = await work();
              task.title = `${title}${done === undefined ? '' : `: ${done(value)}`} ${output.diagnostics.style.dim(`(${elapsed(since)})`)}`;
            },
          },
        ],
        { exitOnError: true, registerSignalListeners: false, rendererOptions: { logger, collapseErrors: true, showErrorMessage: false } },
      ).run();
      return value as Awaited<ReturnType<typeof work>>;
    },
    note(text) {
      output.diagnostics.line(text);
    },
  };
}

export async function createStartProgress(output: Output): Promise<StartProgress> {
  const stderr = process.stderr as { isTTY?: boolean; columns?: number };
  // A terminal of unknown width (some pseudo-terminals report 0 columns) gets plain lines: the
  // task list would otherwise wrap after every character.
  const terminal = stderr.isTTY === true && (stderr.columns ?? 0) > 0;
  return terminal && !output.jsonMode && output.diagnostics.color ? listrProgress(output) : plainProgress(output);
}
