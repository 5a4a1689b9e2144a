// Baseline server for bench/executor-admission: the executor's HTTP stack and SQLite durability
// with almost nothing on top, so the benchmark can say how close admission comes to "one durable
// write" and a replay to "one read".
//
//   node bench/executor-admission/baseline-server.mjs <absolute database path>
//
// Same as the real servers (`lexec ledger serve`, `lexec executor serve`):
//   - the HTTP stack is lexec's own createJsonServer (Fastify, JSON bodies only, body limit, bigint
//     serialiser, error handler, one `http_request` JSON log line per request);
//   - the logger is pino writing synchronously to stderr (fd 2), with the same base fields shape
//     and ISO timestamps;
//   - the database is opened with lexec's openDatabase: WAL, synchronous=FULL (every commit is
//     fsynced before the answer), foreign keys, busy timeout, bigint integers, migrations.
// Routes (no credential check: the benchmark client still sends an Authorization header):
//   POST /insert       one INSERT of a small row in its own (immediate) transaction  -> 201 {"row":{"id"}}
//   GET  /select/:id   one SELECT by primary key                                    -> 200 {"row":{…}} or 404
// Listens on 127.0.0.1, port 0, and logs `baseline_started` with the port; stops on SIGTERM/SIGINT.
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { createJsonServer } from '../../dist/http/json-server.js';
import { openDatabase } from '../../dist/storage/open-database.js';

const databasePath = process.argv[2];
if (databasePath === undefined || !databasePath.startsWith('/')) {
  process.stderr.write('usage: node bench/executor-admission/baseline-server.mjs <absolute database path>\n');
  process.exit(2);
}

const MIGRATIONS = [
  {
    version: 1,
    name: 'baseline_rows',
    up: 'CREATE TABLE rows (id TEXT PRIMARY KEY, payload TEXT NOT NULL, created_at INTEGER NOT NULL)',
  },
];

const logger = pino({ base: { service: 'baseline' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
const db = openDatabase(databasePath, MIGRATIONS);
const insertRow = db.prepare('INSERT INTO rows (id, payload, created_at) VALUES (?, ?, ?)');
const selectRow = db.prepare('SELECT id, payload, created_at FROM rows WHERE id = ?');
const insert = db.transaction((id, payload, at) => insertRow.run(id, payload, at));

const app = createJsonServer({ logger });

app.post('/insert', async (request, reply) => {
  const payload = typeof request.body?.payload === 'string' ? request.body.payload : '';
  const id = `row_${randomUUID()}`;
  insert.immediate(id, payload, Date.now());
  return reply.code(201).send({ row: { id } });
});

app.get('/select/:id', async (request, reply) => {
  const row = selectRow.get(request.params.id);
  if (row === undefined) return reply.code(404).send({ error: { code: 'not_found' } });
  return { row };
});

await app.listen({ host: '127.0.0.1', port: 0 });
logger.info({ event: 'baseline_started', host: '127.0.0.1', port: app.server.address().port });

const signal = await new Promise((resolve) => {
  process.once('SIGINT', () => resolve('SIGINT'));
  process.once('SIGTERM', () => resolve('SIGTERM'));
});
logger.info({ event: 'baseline_stopping', signal });
await app.close();
db.close();
logger.info({ event: 'baseline_stopped', signal });
