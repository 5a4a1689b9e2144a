import { Flags } from '@oclif/core';
import { sinceFlag, wholeNumberFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderFollowedLines, renderFollowedTail, renderLogsJsonLines, renderLogsResult } from '../../launcher/logs/render-logs.js';
import { followStackLogs, LOG_LEVELS, LOG_COMPONENT_CHOICES, MAX_LOG_LINES, MIN_LOG_LINES, readStackLogs, type LogsRequest, type LogsResult } from '../../launcher/logs/stack-logs.js';
import { untilInterrupted } from '../../process/until-interrupted.js';

export default class StackLogs extends LexecCommand<LogsResult> {
  static override summary = "Print the last lines of a component's log (or all, merged by time), across rotated files.";
  static override description =
    'Reads the local log files of the profile (works whether the stack runs or not). Without --execution-id, executor admission rejections (which carry no execution id) are listed first. Lines go to stdout. --json prints JSON Lines (one record per line: admission rejections, then log lines; also with --follow). Payload lines never carry colour or control sequences.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --component executor --lines 200',
    '<%= config.bin %> <%= command.id %> --component all --lines 50 --follow',
    '<%= config.bin %> <%= command.id %> --component executor --execution-id exe_0123456789abcdef0123456789abcdef --json',
    '<%= config.bin %> <%= command.id %> --follow --json | jq -c \'select(.type == "line" and .parsed.level >= 50)\'',
  ];
  static override flags = {
    ...profileFlags,
    component: Flags.option({ options: LOG_COMPONENT_CHOICES, default: 'all' as const, summary: 'Whose log: ledger, executor, sandbox, supervisor, or all (merged by time).' })(),
    lines: Flags.string({ default: '100', summary: `How many lines, ${MIN_LOG_LINES} to ${MAX_LOG_LINES}.` }),
    'execution-id': Flags.string({ summary: "Only the executor's lines of this execution (exe_…)." }),
    follow: Flags.boolean({ default: false, summary: 'Keep printing new lines, across rotations, until Ctrl-C (with --json: more JSON Lines records).' }),
    level: Flags.option({ options: ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const, summary: 'Only lines at this level or above (lines that are not JSON are left out).' })(),
    since: Flags.string({ summary: 'Only lines from this time on: a duration back from now (30s, 15m, 2h, 7d) or an ISO 8601 time.' }),
    raw: Flags.boolean({ default: false, summary: 'Print each log line as written (JSON) instead of the readable form `time LEVEL component event key=value …`.' }),
  };

  private followed = false;
  /** `--raw`: the lines as written, not the readable form. */
  private raw = false;

  protected override async execute(output: Output): Promise<LogsResult> {
    const { flags } = await this.parse(StackLogs);
    this.raw = flags.raw;
    const request: LogsRequest = {
      env: process.env,
      profileFlag: flags.profile,
      component: flags.component,
      lines: wholeNumberFlag(flags.lines, '--lines', MIN_LOG_LINES, MAX_LOG_LINES),
      executionId: flags['execution-id'],
      minLevel: flags.level === undefined ? null : LOG_LEVELS[flags.level],
      since: flags.since === undefined ? null : sinceFlag(flags.since, Date.now()),
    };
    if (!flags.follow) return readStackLogs(request);
    this.followed = true;
    return untilInterrupted((signal) =>
      followStackLogs(request, {
        signal,
        onTail: (result) => {
          renderFollowedTail(result, output, this.raw);
        },
        onLines: (lines) => {
          renderFollowedLines(request, lines, output, this.raw);
        },
      }),
    );
  }

  protected override renderJsonLines(result: LogsResult, output: Output): void {
    // Followed: every record was printed as it came.
    if (!this.followed) renderLogsJsonLines(result, result.lines, output);
  }

  protected override renderHuman(result: LogsResult, output: Output): void {
    renderLogsResult(result, output, { raw: this.raw, followed: this.followed });
  }
}
