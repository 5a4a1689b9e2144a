import { Flags } from '@oclif/core';
import { agentIdFlag, rowIdFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../cli/ledger-flags.js';
import { UsageError } from '../../errors.js';
import { LEDGER_EVENT_TYPES } from '../../ledger/events/ledger-event-types.js';
import { eventLine, followLedgerEvents, readLedgerEvents, type EventsRequest, type EventsResult } from '../../ledger/client/ledger-events.js';
import type { LedgerEvent } from '../../ledger/wire/answers.js';
import type { Output } from '../../terminal/output.js';
import { plain } from '../../terminal/plain-text.js';
import { untilInterrupted } from '../../process/until-interrupted.js';

const HELP = 'Run the command with --help to see its flags.';

/** `--types`: known event types, comma-separated. */
function typesFlag(value: string): string[] {
  const types = value.split(',').map((type) => type.trim());
  const known: readonly string[] = LEDGER_EVENT_TYPES;
  if (types.some((type) => !known.includes(type))) {
    throw new UsageError('invalid_flag_value', `--types must be event types, comma-separated: ${LEDGER_EVENT_TYPES.join(', ')}.`, { nextStep: HELP });
  }
  return types;
}

export default class LedgerEvents extends LexecCommand<EventsResult> {
  static override summary = "Print the ledger's events, oldest first; --follow keeps printing new ones (admin token).";
  static override description =
    'Every change the ledger records — requests, approvals, denials, expiries, cancellations, refusals, settlements, releases, reconciliation records, suspensions — one line each: time, type, agent, target, amount in exact USD, authorization id and details. --json prints JSON Lines (one event per line; also with --follow). --follow waits for new events (a long-poll) until Ctrl-C, and across a ledger restart continues after the last event it printed. Never a prompt or a capability.';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --since 120 --types authorization.refused,approval.waiting',
    '<%= config.bin %> <%= command.id %> --follow --json | jq -c \'select(.type == "approval.waiting")\'',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability --follow',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    since: Flags.string({ summary: 'Only events after this event id (0, the default: from the first).' }),
    follow: Flags.boolean({ default: false, summary: 'Keep printing new events until Ctrl-C; survives a ledger restart.' }),
    types: Flags.string({ summary: `Only these event types, comma-separated: ${LEDGER_EVENT_TYPES.join(', ')}.` }),
    'agent-id': Flags.string({ summary: "Only this agent's events." }),
  };

  private followed = false;

  protected override async execute(output: Output): Promise<EventsResult> {
    const { flags } = await this.parse(LedgerEvents);
    const request: EventsRequest = {
      target: ledgerTarget(flags),
      since: flags.since === undefined ? 0n : rowIdFlag(flags.since, '--since', 'an event id: a whole number from 0 (as `lexec ledger events` prints them; 0 is from the first)'),
      types: flags.types === undefined ? null : typesFlag(flags.types),
      agentId: flags['agent-id'] === undefined ? null : agentIdFlag(flags['agent-id']),
    };
    if (!flags.follow) return readLedgerEvents(request);
    this.followed = true;
    return untilInterrupted((signal) =>
      followLedgerEvents(request, {
        signal,
        onEvents: (events) => {
          printEvents(events, output);
        },
        onRetry: (error, retryInMs) => {
          output.diagnostics.line(output.diagnostics.style.warn(`Warning: ${error.message} Trying again in ${(retryInMs / 1000).toString()} s.`));
        },
      }),
    );
  }

  protected override renderJsonLines(result: EventsResult, output: Output): void {
    // Followed: every event was printed as it came.
    printEvents(result.events, output);
  }

  protected override renderHuman(result: EventsResult, output: Output): void {
    if (this.followed) {
      output.diagnostics.line(output.diagnostics.style.dim('Stopped following.'));
      return;
    }
    if (result.events.length === 0) output.diagnostics.line('No events recorded after this cursor.');
    printEvents(result.events, output);
    output.diagnostics.line(output.diagnostics.style.dim(`Continue with --since ${result.next_after}.`));
  }
}

/** Events on stdout: one JSON document per line with --json, else one readable line each. */
function printEvents(events: readonly LedgerEvent[], output: Output): void {
  for (const event of events) {
    if (output.jsonMode) output.jsonLine(event);
    else output.line(plain(eventLine(event)));
  }
}
