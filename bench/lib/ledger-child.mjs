import { BenchError } from './harness.mjs';

const TAIL_CHARS = 2000;

/**
 * Follows a spawned `lexec ledger serve` child (stderr piped): records how it exits, keeps the
 * tail of its stderr for error messages — read to the end so the pipe never fills, its JSON lines
 * parsed only until the ledger starts — and resolves `started` with the port once it logs
 * `ledger_started`; refused with a BenchError when it fails to spawn, exits or stays silent for
 * `timeoutMs` first. `label` names it in messages ("the ledger", "the tls ledger").
 */
export function followLedger(child, { label, timeoutMs }) {
  const ledger = { child, stderr: '', exit: null, exited: null, started: null, tail };
  function tail() {
    const text = ledger.stderr.trim();
    return text === '' ? '' : `\n${label} stderr (last lines):\n${text.length > TAIL_CHARS ? text.slice(text.indexOf('\n', text.length - TAIL_CHARS) + 1) : text}`;
  }
  ledger.exited = new Promise((done) => child.once('exit', (code, signal) => done((ledger.exit = { code, signal }))));
  ledger.started = new Promise((started, refused) => {
    let port = null;
    let scanned = 0;
    const timer = setTimeout(() => refused(new BenchError(`${label} did not log ledger_started within ${timeoutMs / 1000} s.${tail()}`)), timeoutMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      ledger.stderr += chunk;
      if (port === null) {
        let newline;
        while ((newline = ledger.stderr.indexOf('\n', scanned)) !== -1) {
          const line = ledger.stderr.slice(scanned, newline);
          scanned = newline + 1;
          try {
            const doc = JSON.parse(line);
            if (doc.event === 'ledger_started' && Number.isInteger(doc.port)) {
              port = doc.port;
              clearTimeout(timer);
              started(port);
              break;
            }
          } catch {
            // Not a JSON line (e.g. a crash trace): kept in the tail for the error message.
          }
        }
      }
      if (port !== null && ledger.stderr.length > 2 * TAIL_CHARS) ledger.stderr = ledger.stderr.slice(-TAIL_CHARS);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      refused(new BenchError(`could not spawn ${label}: ${error.message}`));
    });
    void ledger.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      if (port === null) refused(new BenchError(`${label} exited before it started (${signal ?? `exit ${code}`}).${tail()}`));
    });
  });
  return ledger;
}
