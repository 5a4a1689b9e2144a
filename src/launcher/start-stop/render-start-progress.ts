import type { StartEvent, StartProgress, StartStep, StartStepOutcome } from './start-events.js';
import type { Output } from '../../terminal/output.js';

/*
 * Progress of `stack start` on stderr, worded here from the steps and events the service reports
 * as data (start-events.ts): listr2's animated task list when stderr is a terminal
 * with colour on (and not --json), one plain line per finished step otherwise (pipes, CI,
 * --json, --color never). listr2 is loaded only in the first case.
 */

/** A step's title, as shown while it runs. */
function stepTitle(step: StartStep): string {
  switch (step.kind) {
    case 'stop_orphans':
      return `stopping ${step.count} process(es) left by a killed supervisor`;
    case 'active_generation':
      return 'active generation';
    case 'preflight':
      return 'preflight: ports free, doctor';
    case 'supervisor':
      return 'supervisor';
    case 'component_ready':
      return `${step.component} ready`;
    case 'take_down':
      return 'stopping what was started';
    case 'handoff':
      return 'handoff';
    case 'stop_stack':
      return 'stopping the stack';
  }
}

/** What a finished step came to, after its title; undefined when the title says it all. */
function stepDone(step: StartStep, outcome: StartStepOutcome | undefined): string | undefined {
  if (step.kind === 'component_ready') return step.endpoint;
  if (step.kind === 'handoff') return step.handoff_file;
  switch (outcome?.kind) {
    case undefined:
      return undefined;
    case 'generation':
      return `${outcome.generation_id}${outcome.activated ? ' (rendered and activated)' : ''}`;
    case 'preflight':
      return outcome.warnings.length === 0 ? 'no warning' : `warnings: ${outcome.warnings.join(', ')} (see \`lexec stack doctor\`)`;
    case 'supervisor':
      return `pid ${outcome.pid}`;
  }
}

function doneTitle(step: StartStep, outcome: StartStepOutcome | undefined): string {
  const done = stepDone(step, outcome);
  return `${stepTitle(step)}${done === undefined ? '' : `: ${done}`}`;
}

/** The lines an event between steps prints on stderr. */
function startEventLines(event: StartEvent): string[] {
  switch (event.kind) {
    case 'profile_created':
      return [`created profile "${event.profile}" from profiles.example/sandbox.toml (${event.source})`];
    case 'already_running':
      return [`profile "${event.profile}" is already running (supervisor pid ${event.supervisor_pid})`];
    case 'foreground':
      return [`running in the foreground: Ctrl-C stops the stack of profile "${event.profile}"`];
    case 'profile_drift': {
      const { drift, active_generation_id: active } = event;
      if (drift.kind === 'does_not_render') {
        // Reported for a running stack only: a stopped one is refused with the same issues.
        const keys = drift.issues.length > 0 ? `: ${drift.issues.map((issue) => issue.path).join(', ')}` : '';
        return [
          `warning: profile.toml no longer renders (${drift.code}${keys}); the running stack keeps generation ${active}, but the next start after a stop will refuse until it is fixed`,
          ...drift.issues.map((issue) => `  ${issue.path}: ${issue.message}`),
        ];
      }
      // No file changed but components are affected: the manifest's ports or sandbox settings, or
      // the lexec build itself (its lineage is part of every generation).
      const what = `changed files: ${drift.changed_files.join(', ') || 'none'}; components affected: ${drift.affected_components.join(', ') || 'none'}`;
      const kept = event.stack === 'starting' ? 'which is started as it is' : 'which keeps running';
      return [
        `warning: profile.toml now renders generation ${drift.rendered_generation_id} (${what}), not the active ${active}, ${kept}. To apply the change: \`lexec stack render\`, \`lexec stack stop\`, \`lexec stack activate --generation ${drift.rendered_generation_id}\`, \`lexec stack start\``,
      ];
    }
  }
}

function elapsed(since: number): string {
  const ms = Date.now() - since;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function plainProgress(output: Output): StartProgress {
  return {
    async step(step, work, outcome) {
      const since = Date.now();
      try {
        const value = await work();
        output.diagnostics.line(`${output.diagnostics.style.ok('✔')} ${doneTitle(step, outcome?.(value))} ${output.diagnostics.style.dim(`(${elapsed(since)})`)}`);
        return value;
      } catch (error) {
        output.diagnostics.line(`${output.diagnostics.style.error('✖')} ${stepTitle(step)} ${output.diagnostics.style.dim(`(${elapsed(since)})`)}`);
        throw error;
      }
    },
    event(event) {
      for (const line of startEventLines(event)) output.diagnostics.line(line);
    },
  };
}

async function listrProgress(output: Output): Promise<StartProgress> {
  const { Listr, ListrLogger, ProcessOutput } = await import('listr2');
  // listr2 writes to stdout by default; stdout is reserved for --json documents.
  const logger = new ListrLogger({ useIcons: true, toStderr: [], processOutput: new ProcessOutput(process.stderr, process.stderr) });
  return {
    async step(step, work, outcome) {
      let value: Awaited<ReturnType<typeof work>> | undefined;
      const since = Date.now();
      await new Listr(
        [
          {
            title: stepTitle(step),
            task: async (_context, task) => {
              value = await work();
              task.title = `${doneTitle(step, outcome?.(value))} ${output.diagnostics.style.dim(`(${elapsed(since)})`)}`;
            },
          },
        ],
        { exitOnError: true, registerSignalListeners: false, rendererOptions: { logger, collapseErrors: true, showErrorMessage: false } },
      ).run();
      return value as Awaited<ReturnType<typeof work>>;
    },
    event(event) {
      for (const line of startEventLines(event)) output.diagnostics.line(line);
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
