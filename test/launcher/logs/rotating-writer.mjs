// A log writer that rotates like the supervisor does (launcher brief: logs/<c>.log active,
// .1 … .4 retained, 1 newest): it keeps its file open, renames .3→.4 … active→.1 and opens a
// new active file. Used by the `stack logs --follow` test as a real, separate process.
// Usage: node rotating-writer.mjs <logsDir> <component> <executionA> <executionB>
import { closeSync, openSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const [logsDir, component, executionA, executionB] = process.argv.slice(2);
const active = join(logsDir, `${component}.log`);
let fd = openSync(active, 'a');

function line(seq) {
  const execution = seq % 2 === 0 ? executionA : executionB;
  return `${JSON.stringify({ level: 30, time: new Date().toISOString(), event: 'writer_line', seq, execution_id: execution })}\n`;
}

function rotate() {
  closeSync(fd);
  for (let generation = 3; generation >= 1; generation -= 1) {
    try {
      renameSync(`${active}.${generation}`, `${active}.${generation + 1}`);
    } catch {
      // not there yet
    }
  }
  renameSync(active, `${active}.1`);
  fd = openSync(active, 'a');
}

async function write(from, to, pause) {
  for (let seq = from; seq <= to; seq += 1) {
    writeSync(fd, line(seq));
    if (pause > 0) await sleep(pause);
  }
}

await write(1, 9, 10);
// A line written in two parts, with a pause longer than the follower's poll between them.
const split = line(10);
writeSync(fd, split.slice(0, 20));
await sleep(600);
writeSync(fd, split.slice(20));
await write(11, 30, 10);
rotate();
await write(31, 60, 5);
// Two rotations without a pause: a follower polling between them sees both at once.
rotate();
await write(61, 65, 0);
rotate();
await write(66, 70, 0);
await sleep(400);
rotate();
await write(71, 80, 10);
closeSync(fd);
process.stdout.write('done\n');
