// The webhook receivers of `bench/ledger-cycles/run.mjs --webhooks`, in a process of their own
// (forked by run.mjs, talking over its IPC channel): like a team's real receivers, their work is
// not on the bench client's event loop. `/prompt` answers 200 and notes when each event arrived
// (arrival minus the event's `at`); `/hang` never answers. Messages: it sends `{ origin }` once
// listening on 127.0.0.1 port 0; asked `arrivals` it answers `{ arrivals: [[event_id, ms], …] }`;
// asked `close` it drops the hanging requests, closes and exits.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';
import process from 'node:process';

const arrivals = new Map();
const hanging = new Set();
const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const at = Date.now();
    if (request.url === '/hang') {
      hanging.add(response);
      return;
    }
    const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (!arrivals.has(event.event_id)) arrivals.set(event.event_id, at - Date.parse(event.at));
    response.writeHead(200).end();
  });
});

server.listen(0, '127.0.0.1', () => {
  process.send({ origin: `http://127.0.0.1:${server.address().port}` });
});

process.on('message', (message) => {
  if (message === 'arrivals') process.send({ arrivals: [...arrivals] });
  if (message === 'close') {
    for (const response of hanging) response.destroy();
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
// The bench gone (killed, crashed): so are its receivers.
process.on('disconnect', () => process.exit(0));
