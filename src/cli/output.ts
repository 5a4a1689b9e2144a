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

/**
 * Where a command's output goes. Human text and progress go to stderr; under `--json` stdout
 * carries exactly one JSON document and nothing else, never with ANSI sequences in it.
 */
export interface Output {
  readonly jsonMode: boolean;
  readonly color: boolean;
  readonly style: Styler;
  /** One line of human text on stderr. */
  line(text?: string): void;
  /** The one JSON document of this invocation, on stdout. */
  json(document: unknown): void;
}

export interface OutputStreams {
  readonly stdout: NodeJS.WritableStream;
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

async function colorStyler(env: OutputOptions['env'], stderr: OutputStreams['stderr']): Promise<Styler> {
  // Loaded only when colour is on, so plain and JSON invocations never pay for it.
  const [{ Chalk }, { createSupportsColor }] = await Promise.all([import('chalk'), import('supports-color')]);
  const detected = createSupportsColor(stderr as unknown as WriteStream, { sniffFlags: false });
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
  const color = resolveColor({ choice: options.color, env: options.env, isTTY: streams.stderr.isTTY === true });
  const style = color ? await colorStyler(options.env, streams.stderr) : plain;
  let jsonWritten = false;
  return {
    jsonMode: options.jsonMode,
    color,
    style,
    line(text = '') {
      streams.stderr.write(`${text}\n`);
    },
    json(document) {
      if (jsonWritten) throw new BugError('a command tried to print a second JSON document');
      jsonWritten = true;
      streams.stdout.write(`${serializeJsonDocument(document)}\n`);
    },
  };
}
