import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { wholeNumberFlag } from '../../../cli/flag-values.js';
import type { Output } from '../../../terminal/output.js';
import { UsageError } from '../../../errors.js';
import type { SandboxStopped } from '../../../provider/sandbox/serve-sandbox.js';
import { renderSandboxStopped } from '../../../provider/sandbox/render-serve-sandbox.js';

function absolutePathFlag(value: string | undefined, name: string): string | undefined {
  if (value !== undefined && !value.startsWith('/')) {
    throw new UsageError('invalid_flag_value', `${name} must be an absolute path.`, { nextStep: 'Pass the full path, for example "$PWD/file".' });
  }
  return value;
}

/** A fal model id as an execution target names it (`fal-ai/flux/schnell`). */
function modelIdFlag(value: string): string {
  if (!/^[a-z0-9][a-z0-9._-]*(?:\/[a-z0-9][a-z0-9._-]*)+$/.test(value)) {
    throw new UsageError('invalid_flag_value', '--seedless-model must be a provider model id such as fal-ai/flux/schnell.', { nextStep: 'Pass the model id an execution target names.' });
  }
  return value;
}

export default class ProviderSandboxServe extends LexecCommand<SandboxStopped> {
  static override summary = 'Run the local sandbox image provider (fal queue protocol, deterministic PNGs, fault injection).';
  static override description =
    'Listens on loopback until SIGINT or SIGTERM and speaks the fal.ai queue protocol the live provider speaks: submit, status, result, cancel and media. Faults for tests are set with --latency-ms and --faults-file at start, or at runtime through the control API under /__sandbox/ (docs/sandbox-provider.md). Logs are JSON lines on stderr; the sandbox_started line carries the port.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --port 7420',
    '<%= config.bin %> <%= command.id %> --complete-after-ms 500 --submissions-log /tmp/lexec-sandbox/submissions.jsonl',
  ];
  static override flags = {
    host: Flags.string({ default: '127.0.0.1', summary: 'Loopback address to listen on (127.0.0.1, ::1 or localhost).' }),
    port: Flags.string({ default: '0', summary: 'TCP port; 0 picks a free one (read it from the sandbox_started log line).' }),
    'complete-after-ms': Flags.string({ default: '40', summary: 'Milliseconds from submit to COMPLETED (queued for the first half, in progress for the second).' }),
    'latency-ms': Flags.string({ default: '0', summary: 'Latency added to every protocol answer.' }),
    'submissions-log': Flags.string({ summary: 'Absolute path of a JSON-lines file each received submit is appended to (survives restarts).' }),
    'jobs-file': Flags.string({ summary: 'Absolute path of a file that keeps the queue requests (0600), so a restarted sandbox still answers for them, as a remote provider would.' }),
    'faults-file': Flags.string({ summary: 'Absolute path of a fault set active from the start (same JSON as PUT /__sandbox/faults).' }),
    'seedless-model': Flags.string({
      multiple: true,
      summary: 'A model id that takes no seed: a submission for it carrying one is refused (422 extra_forbidden), as a fal endpoint that forbids unknown inputs refuses it. Repeatable.',
    }),
  };

  protected override async execute(): Promise<SandboxStopped> {
    const { flags } = await this.parse(ProviderSandboxServe);
    const options = {
      host: flags.host,
      port: wholeNumberFlag(flags.port, '--port', 0, 65535),
      completeAfterMs: wholeNumberFlag(flags['complete-after-ms'], '--complete-after-ms', 0, 3_600_000),
      latencyMs: wholeNumberFlag(flags['latency-ms'], '--latency-ms', 0, 600_000),
      submissionsLogPath: absolutePathFlag(flags['submissions-log'], '--submissions-log'),
      faultsFilePath: absolutePathFlag(flags['faults-file'], '--faults-file'),
      jobsFilePath: absolutePathFlag(flags['jobs-file'], '--jobs-file'),
      seedlessModels: (flags['seedless-model'] ?? []).map(modelIdFlag),
    };
    const { serveSandbox } = await import('../../../provider/sandbox/serve-sandbox.js');
    return serveSandbox(options);
  }

  protected override renderHuman(result: SandboxStopped, output: Output): void {
    renderSandboxStopped(result, output);
  }
}
