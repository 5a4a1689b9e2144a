// The authorization cycle shared by bench/ledger-cycles (one client in this process, against a
// ledger child on loopback) and bench/ledger-hosts (cycle clients in network namespaces, see
// client.mjs there): the HTTP(S) client, the set-up of an agent and its credentials, one cycle of
// five checked requests, N cycles on C loops, the read-back verification and the per-level
// figures. Plain ESM; any unexpected answer throws a BenchError naming the step and the answer.
import { Buffer } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { performance } from 'node:perf_hooks';
import { BenchError, fail } from '../lib/harness.mjs';
import { clientCpuMs, percentile } from '../lib/measure.mjs';

export const STEPS = ['request', 'approve', 'resolve', 'claim', 'settle'];
export const HOLD_UNITS = '3000';
export const BIG_CAP = '1000000000000000000';

// --- HTTP client --------------------------------------------------------------------------------

/**
 * A client of the ledger at `host:port`: node:http (or, with `ca`, node:https verifying the server
 * against that PEM CA only — never skipping verification) with a keep-alive Agent, or Node's global
 * fetch (`kind` "fetch", plain http only). `describeFailure()` adds context to a failed call's
 * message (e.g. the ledger's exit and stderr tail).
 */
export function makeClient(kind, { host = '127.0.0.1', port, ca = null, describeFailure = () => '' }) {
  const tls = ca !== null;
  const origin = `${tls ? 'https' : 'http'}://${host}:${port}`;
  const parse = (method, path, status, text) => {
    if (path === '/metrics') return { status, body: text };
    try {
      return { status, body: text === '' ? {} : JSON.parse(text) };
    } catch {
      throw new BenchError(`${method} ${path} answered ${status} with a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
    }
  };
  if (kind === 'fetch') {
    if (tls) fail('--client fetch takes no CA here; use the http client with --tls.');
    return {
      description: "Node's global fetch (undici, keep-alive)",
      origin,
      describeFailure,
      async call(method, path, token, body) {
        const headers = { authorization: `Bearer ${token}` };
        if (body !== undefined) headers['content-type'] = 'application/json';
        const response = await globalThis.fetch(`${origin}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
        return parse(method, path, response.status, await response.text());
      },
      close() {},
    };
  }
  const agent = tls ? new HttpsAgent({ keepAlive: true, maxSockets: 16, ca }) : new HttpAgent({ keepAlive: true, maxSockets: 16 });
  const send = tls ? httpsRequest : httpRequest;
  return {
    description: tls ? 'node:https with a keep-alive Agent, verifying the server against the bench CA' : 'node:http with a keep-alive Agent',
    origin,
    describeFailure,
    call(method, path, token, body) {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers = { authorization: `Bearer ${token}` };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      return new Promise((done, failed) => {
        const req = send({ host, port, method, path, headers, agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => {
            try {
              done(parse(method, path, res.statusCode, text));
            } catch (error) {
              failed(error);
            }
          });
          res.on('error', failed);
        });
        req.on('error', failed);
        req.end(payload);
      });
    },
    close() {
      agent.destroy();
    },
  };
}

/** One call that must answer `expected`; anything else aborts the benchmark with the answer. */
export async function expect(client, step, expected, method, path, token, body) {
  let answer;
  try {
    answer = await client.call(method, path, token, body);
  } catch (error) {
    if (error instanceof BenchError) throw error;
    throw new BenchError(`${step}: ${method} ${path} failed: ${error.message}${client.describeFailure()}`);
  }
  if (answer.status !== expected) {
    throw new BenchError(`${step}: ${method} ${path} answered ${answer.status}, expected ${expected}: ${JSON.stringify(answer.body).slice(0, 500)}`);
  }
  return answer.body;
}

export function expectState(step, actual, wanted, body) {
  if (actual !== wanted) fail(`${step}: the authorization is ${JSON.stringify(actual)}, expected ${JSON.stringify(wanted)}: ${JSON.stringify(body).slice(0, 500)}`);
}

// --- set-up -------------------------------------------------------------------------------------

export async function registerCredential(client, adminToken, generateCapability, capabilityDigest, kind, agentId) {
  const token = generateCapability(kind);
  await expect(client, `register ${kind} credential`, 201, 'PUT', `/credentials/cred_${randomUUID()}`, adminToken, {
    kind,
    agent_id: agentId,
    digest_sha256: capabilityDigest(token).toString('hex'),
  });
  return token;
}

/** One agent (approval threshold 0, caps far above the run) and its agent, approver and executor capabilities. */
export async function setUp(client, adminToken, capability, maxRequestsPerHour, name = 'bench-ledger-cycles') {
  const created = await expect(client, 'add agent', 201, 'POST', '/agents', adminToken, { name });
  const agentId = created.agent.agent_id;
  const policy = await expect(client, 'set policy', 200, 'PUT', `/agents/${agentId}/policy`, adminToken, {
    per_authorization_cap_units: BIG_CAP,
    daily_cap_units: BIG_CAP,
    approval_threshold_units: '0',
    units_scale: 6,
    currency: 'USD',
    ...(maxRequestsPerHour === null ? {} : { max_requests_per_hour: maxRequestsPerHour }),
  });
  if (policy.policy.approval_threshold_units !== '0') fail(`set policy: the ledger kept an approval threshold of ${policy.policy.approval_threshold_units}.`);
  const register = (kind, id) => registerCredential(client, adminToken, capability.generateCapability, capability.capabilityDigest, kind, id);
  return { agentId, agent: await register('agent', agentId), approver: await register('approver'), executor: await register('executor') };
}

// --- one cycle ----------------------------------------------------------------------------------

/** A complete precise receipt: one flux-schnell image at 3/1000 USD = 3000 micro-units. */
function receipt() {
  return {
    receipt_id: `rcpt_${randomUUID()}`,
    amount_units: HOLD_UNITS,
    units_scale: 6,
    currency: 'USD',
    provider_request_id: `req_${randomUUID()}`,
    price_model_snapshot: {
      snapshot_version: 1,
      target_id: 'lexec:target:v1:flux-schnell',
      provider: 'fal',
      model: 'fal-ai/flux/schnell',
      image_size: 'square_hd',
      image_count: 1,
      currency: 'USD',
      unit: 'image',
      pricing_version: '2026-11-01',
      unit_price: { numerator: '3', denominator: '1000' },
      rounding: 'ceil_micro_units',
    },
  };
}

export async function cycle(client, actors) {
  const times = {};
  const begin = performance.now();
  let mark = begin;
  const lap = (step) => {
    const now = performance.now();
    times[step] = now - mark;
    mark = now;
  };

  const requested = await expect(client, 'request', 201, 'POST', '/authorizations', actors.agent, {
    amount_units: HOLD_UNITS,
    units_scale: 6,
    currency: 'USD',
    purpose: 'bench-ledger-cycles',
  });
  lap('request');
  const id = requested.authorization?.token_id;
  expectState('request', requested.authorization?.status, 'requested', requested);

  const approved = await expect(client, 'approve', 200, 'POST', `/authorizations/${id}/approve`, actors.approver, {});
  lap('approve');
  expectState('approve', approved.authorization?.status, 'approved', approved);

  const resolved = await expect(client, 'resolve', 200, 'GET', `/executor/authorizations/${id}`, actors.executor);
  lap('resolve');
  expectState('resolve', resolved.authorization?.status, 'approved', resolved);

  const executionId = `exe_${randomUUID()}`;
  const claimed = await expect(client, 'claim', 200, 'POST', `/executor/authorizations/${id}/claim`, actors.executor, { execution_id: executionId });
  lap('claim');
  if (claimed.replayed !== false) fail(`claim: expected a first claim, got replayed=${JSON.stringify(claimed.replayed)}.`);
  expectState('claim', claimed.authorization?.status, 'claimed', claimed);

  const settled = await expect(client, 'settle', 200, 'POST', `/executor/authorizations/${id}/settle`, actors.executor, {
    execution_id: executionId,
    receipt: receipt(),
  });
  lap('settle');
  if (settled.replayed !== false) fail(`settle: expected a first settlement, got replayed=${JSON.stringify(settled.replayed)}.`);
  expectState('settle', settled.authorization?.status, 'settled', settled);

  times.cycle = mark - begin;
  return { id, times };
}

/**
 * Runs `count` cycles on `concurrency` independent loops; returns wall ms, CPU ms and every cycle's
 * times. `serverCpuMs()` reads the ledger's CPU time so far (null when unknown: then so is the figure),
 * `requestThreadCpuMs()` that of its request-handling (main) thread alone.
 */
export async function runCycles(client, actors, concurrency, count, ids, serverCpuMs = () => null, requestThreadCpuMs = () => null) {
  const samples = [];
  let next = 0;
  const loop = async () => {
    while (next < count) {
      next += 1;
      const { id, times } = await cycle(client, actors);
      ids.push(id);
      samples.push(times);
    }
  };
  const serverBefore = serverCpuMs();
  const threadBefore = requestThreadCpuMs();
  const clientBefore = clientCpuMs();
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, loop));
  const wallMs = performance.now() - start;
  const serverAfter = serverCpuMs();
  const threadAfter = requestThreadCpuMs();
  const serverCpu = serverBefore === null || serverAfter === null ? null : serverAfter - serverBefore;
  const threadCpu = threadBefore === null || threadAfter === null ? null : threadAfter - threadBefore;
  return { wallMs, serverCpuMs: serverCpu, requestThreadCpuMs: threadCpu, clientCpuMs: clientCpuMs() - clientBefore, samples };
}

// --- verification -------------------------------------------------------------------------------

/** Reads every id back (settled for HOLD_UNITS) and checks the agent has nothing left open. */
export async function verify(client, adminToken, agentId, ids) {
  let settled = 0;
  let next = 0;
  const loop = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      const body = await expect(client, 'verify', 200, 'GET', `/authorizations/${id}`, adminToken);
      const authorization = body.authorization;
      if (authorization?.status !== 'settled' || authorization.settlement?.amount_units !== HOLD_UNITS) {
        fail(`verify: authorization ${id} is ${JSON.stringify(authorization?.status)} with settlement ${JSON.stringify(authorization?.settlement ?? null)}; expected settled for ${HOLD_UNITS} units.`);
      }
      settled += 1;
    }
  };
  await Promise.all(Array.from({ length: 8 }, loop));
  const leftOpen = {};
  for (const status of ['requested', 'approved', 'claimed']) {
    const body = await expect(client, 'verify', 200, 'GET', `/authorizations?agent_id=${agentId}&status=${status}&limit=500`, adminToken);
    leftOpen[status] = body.authorizations.length;
  }
  const stray = Object.entries(leftOpen).filter(([, count]) => count > 0);
  if (stray.length > 0) fail(`verify: authorizations left open: ${stray.map(([status, count]) => `${count} ${status}`).join(', ')}.`);
  // The list route pages at 500; it is a cross-check of the per-id reads, not the count itself.
  const listed = await expect(client, 'verify', 200, 'GET', `/authorizations?agent_id=${agentId}&status=settled&limit=500`, adminToken);
  if (listed.authorizations.length !== Math.min(500, ids.length)) fail(`verify: the settled list has ${listed.authorizations.length} entries, expected ${Math.min(500, ids.length)}.`);
  return { settled, total: ids.length };
}


export const round2 = (value) => Math.round(value * 100) / 100;

/** The figures of one level: rate, CPU per cycle, p50/p99 of each step and of the cycle. */
export function summarise(concurrency, run) {
  const latency = {};
  for (const step of [...STEPS, 'cycle']) {
    const sorted = run.samples.map((times) => times[step]).sort((a, b) => a - b);
    latency[step] = { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  }
  const cycles = run.samples.length;
  return {
    concurrency,
    cycles,
    wallMs: run.wallMs,
    cyclesPerSecond: cycles / (run.wallMs / 1000),
    serverCpuPerCycle: run.serverCpuMs === null ? null : run.serverCpuMs / cycles,
    serverBusy: run.serverCpuMs === null ? null : run.serverCpuMs / run.wallMs,
    requestThreadCpuPerCycle: run.requestThreadCpuMs == null ? null : run.requestThreadCpuMs / cycles,
    clientCpuPerCycle: run.clientCpuMs / cycles,
    latency,
  };
}



