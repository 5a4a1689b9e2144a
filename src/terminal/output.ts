import { stripVTControlCharacters } from 'node:util';
import type { WriteStream } from 'node:tty';
import { bigintAsString } from '../domain/canonical-json.js';
import { BugError } from '../errors.js';
import { colorLevel, resolveColor, type ColorChoice } from './color.js';

/** Styles for human text. Identity functions when colour is off. */
export interface Styler {
  readonly ok: (text: string) => string;
  readonly error: (text: string) => string;
  readonly warn: (text: string) => string;
  readonly dim: (text: string) => string;
  readonly bold: (text: string) => string;
}

/** Progress, warnings and diagnostics: stderr, coloured by stderr's own terminal test. */
export interface Diagnostics {
  readonly color: boolean;
  readonly style: Styler;
  /** One line on stderr. */
  line(text?: string): void;
}

/**
 * Where a command's output goes (docs/cli-output.md "Streams"). Its result — human text, or
 * under `--json` exactly one JSON document and nothing else — goes to stdout, so `lexec stack
 * status | grep executor` and `$(lexec version)` work; progress, warnings and diagnostics go to
 * stderr (`diagnostics`). Each stream is coloured only by its own terminal test, and the JSON
 * document never carries ANSI sequences.
 */
export interface Output {
  readonly jsonMode: boolean;
  /** Colour of the human result on stdout. */
  readonly color: boolean;
  readonly style: Styler;
  /** One line of the human result, on stdout. Never under --json (stdout holds one document there). */
  line(text?: string): void;
  /** The one JSON document of this invocation, on stdout. */
  json(document: unknown): void;
  /**
   * One record of a JSON Lines result, on stdout (`stack logs --json`, the one command whose
   * result is a stream: docs/cli-output.md "JSON Lines"). Never mixed with `json`.
   */
  jsonLine(record: unknown): void;
  readonly diagnostics: Diagnostics;
}

export interface OutputStreams {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface OutputOptions {
  readonly jsonMode: boolean;
  readonly color: ColorChoice;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly streams: OutputStreams;
}

const plain: Styler = {
  ok: (text) => text,
  error: (text) => text,
  warn: (text) => text,
  dim: (text) => text,
  bold: (text) => text,
};

/**
 * Serialises a JSON document for stdout: bigint amounts become decimal strings (never floats),
 * and every string is stripped of terminal control sequences, so no ANSI can reach a `--json`
 * consumer whatever a message was built from.
 */
export function serializeJsonDocument(document: unknown): string {
  return JSON.stringify(document, (key, value: unknown) => (typeof value === 'string' ? stripVTControlCharacters(value) : bigintAsString(key, value)));
}

async function colorStyler(env: OutputOptions['env'], stream: OutputStreams['stderr']): Promise<Styler> {
  // Loaded only when colour is on, so plain and JSON invocations never pay for it.
  const [{ Chalk }, { createSupportsColor }] = await Promise.all([import('chalk'), import('supports-color')]);
  const detected = createSupportsColor(stream as unknown as WriteStream, { sniffFlags: false });
  const chalk = new Chalk({ level: colorLevel(env, detected === false ? 0 : detected.level) });
  return {
    ok: (text) => chalk.green(text),
    error: (text) => chalk.red(text),
    warn: (text) => chalk.yellow(text),
    dim: (text) => chalk.dim(text),
    bold: (text) => chalk.bold(text),
  };
}

export async function createOutput(options: OutputOptions): Promise<Output> {
  const { streams } = options;
  // The result is never coloured under --json; stdout then holds only the JSON document.
  const color = !options.jsonMode && resolveColor({ choice: options.color, env: options.env, isTTY: streams.stdout.isTTY === true });
  const diagnosticsColor = resolveColor({ choice: options.color, env: options.env, isTTY: streams.stderr.isTTY === true });
  const style = color ? await colorStyler(options.env, streams.stdout) : plain;
  const diagnosticsStyle = diagnosticsColor ? await colorStyler(options.env, streams.stderr) : plain;
  let jsonWritten = false;
  return {
    jsonMode: options.jsonMode,
    color,
    style,
    line(text = '') {
      if (options.jsonMode) throw new BugError('a command tried to print human text under --json');
      streams.stdout.write(`${text}\n`);
    },
    json(document) {
      if (jsonWritten) throw new BugError('a command tried to print a second JSON document');
      jsonWritten = true;
      streams.stdout.write(`${serializeJsonDocument(document)}\n`);
    },
    jsonLine(record) {
      if (!options.jsonMode) throw new BugError('a command tried to print a JSON line without --json');
      if (jsonWritten) throw new BugError('a command tried to print a JSON line after its JSON document');
      streams.stdout.write(`${serializeJsonDocument(record)}\n`);
    },
    diagnostics: {
      color: diagnosticsColor,
      style: diagnosticsStyle,
      line(text = '') {
        streams.stderr.write(`${text}\n`);
      },
    },
  };
}
