// The one command of the minimal fixture CLI: parse, then write one line of JSON to stdout.
import { Command } from '@oclif/core';

export default class Hello extends Command {
  static summary = 'Print one line of JSON.';

  async run() {
    await this.parse(Hello);
    process.stdout.write(`${JSON.stringify({ hello: 'world' })}\n`);
  }
}
