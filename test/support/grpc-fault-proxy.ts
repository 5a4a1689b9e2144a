import {
  connect,
  constants,
  createServer,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type Http2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';

/*
 * A transparent gRPC (h2c) proxy in front of a real Temporal server, for the faults a real server
 * cannot produce on demand: a CANCELLED answer, a call that never answers, a slow answer, an
 * unreachable server. Every call that is not faulted is forwarded as it is — headers, body stream,
 * response headers, body and trailers — over one upstream HTTP/2 session, so grpc-js (the client)
 * and tonic (the worker's Rust core) both talk to the real server through it.
 */

/** What the next `times` calls of a method get (all of them when `times` is left out). */
export type GrpcFault =
  /** An immediate trailers-only answer with this gRPC status; the server never sees the call. */
  | { readonly kind: 'status'; readonly code: number; readonly message?: string; readonly times?: number }
  /** The call is accepted and never answered, until the client gives up or the proxy closes. */
  | { readonly kind: 'hang'; readonly times?: number }
  /** The call is forwarded after `ms`. */
  | { readonly kind: 'delay'; readonly ms: number; readonly times?: number };

export interface GrpcFaultProxy {
  /** `127.0.0.1:<port>`, to give a client instead of the server's address. */
  readonly address: string;
  readonly port: number;
  /** Faults the calls whose method is `method` (`DescribeTaskQueue`, or a longer path suffix such as `WorkflowService/DescribeTaskQueue`). */
  setFault(method: string, fault: GrpcFault): void;
  clearFaults(): void;
  /** How many calls of `method` arrived (faulted or not), since the proxy started. */
  calls(method: string): number;
  /** Calls open on the client side now (a hung call counts until its client cancels it). */
  openStreams(): number;
  /**
   * The server becomes unreachable: the upstream session is dropped, so calls in flight end with
   * UNAVAILABLE (14), and every new call is answered UNAVAILABLE until `resumeUpstream()`. The
   * proxy keeps listening and answers for the server, as a gRPC proxy in front of a dead server
   * does. Refusing connections would give both clients the same status, but would put their
   * reconnect backoff (grpc-js: 1 s growing to 120 s) between `resumeUpstream()` and recovery.
   */
  stopUpstream(): void;
  resumeUpstream(): void;
  /** Destroys every session and stops listening. */
  close(): Promise<void>;
}

export interface GrpcFaultProxyOptions {
  /** `host:port` of the real gRPC server. */
  readonly upstream: string;
  /** 0 (the default) lets the kernel pick a free port. */
  readonly port?: number;
}

const UNAVAILABLE = 14;
const { HTTP2_HEADER_STATUS, NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM } = constants;
// HTTP/2 forbids these (RFC 9113 §8.2.2); Node throws on them rather than forwarding.
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings']);

export async function startGrpcFaultProxy(options: GrpcFaultProxyOptions): Promise<GrpcFaultProxy> {
  const faults = new Map<string, { fault: GrpcFault; left: number }>();
  const arrivals = new Map<string, number>();
  const sessions = new Set<Http2Session>();
  const open = new Set<ServerHttp2Stream>();
  let upstream: ClientHttp2Session | undefined;
  let down = false;

  /** The one upstream session, opened again after it closed or failed. */
  function upstreamSession(): ClientHttp2Session {
    if (upstream !== undefined && !upstream.closed && !upstream.destroyed) return upstream;
    const session = connect(`http://${options.upstream}`);
    // A refused or dropped connection fails its streams, which answer UNAVAILABLE (forward below).
    session.on('error', () => undefined);
    session.on('close', () => {
      if (upstream === session) upstream = undefined;
    });
    upstream = session;
    return session;
  }

  /** Takes one use of the fault set for `path`, if any. */
  function takeFault(path: string): GrpcFault | undefined {
    for (const [method, entry] of faults) {
      if (!isMethod(path, method)) continue;
      entry.left -= 1;
      if (entry.left <= 0) faults.delete(method);
      return entry.fault;
    }
    return undefined;
  }

  function forward(downstream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    if (!isOpen(downstream)) return;
    if (down) {
      answerStatus(downstream, UNAVAILABLE, 'upstream unavailable (grpc-fault-proxy)');
      return;
    }
    const session = upstreamSession();
    let upstreamStream: ClientHttp2Stream;
    try {
      upstreamStream = session.request(requestHeaders(headers));
    } catch {
      // The session is going away (GOAWAY received, socket closing): as if the connection was lost.
      answerStatus(downstream, UNAVAILABLE, 'upstream connection lost (grpc-fault-proxy)');
      return;
    }
    upstreamStream.on('error', () => undefined);
    let trailers: OutgoingHttpHeaders | undefined;

    upstreamStream.on('response', (response, flags) => {
      if (!isOpen(downstream)) return;
      // A trailers-only answer (grpc-status in the one HEADERS frame) stays one frame: sent as
      // headers and then an empty end of stream, it would leave the client without trailers.
      if ((flags & NGHTTP2_FLAG_END_STREAM) !== 0) {
        downstream.respond(passHeaders(response), { endStream: true });
        return;
      }
      downstream.respond(passHeaders(response), { waitForTrailers: true });
      upstreamStream.pipe(downstream, { end: false });
    });
    upstreamStream.on('trailers', (received: IncomingHttpHeaders) => {
      trailers = passHeaders(received);
    });
    // A call whose upstream ended without a status (connection lost) still gets one.
    downstream.on('wantTrailers', () => {
      downstream.sendTrailers(trailers ?? statusHeaders(UNAVAILABLE, 'upstream connection lost (grpc-fault-proxy)'));
    });
    downstream.pipe(upstreamStream);

    // 'close' comes after the body and trailers were read, so this is where the answer is finished.
    upstreamStream.on('close', () => {
      if (!isOpen(downstream) || downstream.writableEnded) return;
      if (downstream.headersSent) downstream.end();
      // The connection went away: what a gRPC client sees of an unreachable server.
      else if (session.destroyed) answerStatus(downstream, UNAVAILABLE, 'upstream connection lost (grpc-fault-proxy)');
      // The server reset the stream: the client sees the same reset.
      else downstream.close(upstreamStream.rstCode);
    });
    // A client that cancels (or whose deadline passed) cancels the server's call too.
    downstream.on('close', () => {
      if (!upstreamStream.closed) upstreamStream.close(NGHTTP2_CANCEL);
    });
  }

  const server = createServer();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('error', () => undefined);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    arrivals.set(path, (arrivals.get(path) ?? 0) + 1);
    open.add(stream);
    stream.on('error', () => undefined);
    stream.on('close', () => open.delete(stream));
    const fault = takeFault(path);
    if (fault === undefined) forward(stream, headers);
    else if (fault.kind === 'status') answerStatus(stream, fault.code, fault.message ?? 'fault injected by grpc-fault-proxy');
    // Read and drop the request, so the client's send completes and only the answer is missing.
    else if (fault.kind === 'hang') stream.resume();
    else {
      const timer = setTimeout(() => { forward(stream, headers); }, fault.ms);
      stream.on('close', () => { clearTimeout(timer); });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    address: `127.0.0.1:${port}`,
    port,
    setFault(method, fault) {
      faults.set(method, { fault, left: fault.times ?? Number.POSITIVE_INFINITY });
    },
    clearFaults() {
      faults.clear();
    },
    calls(method) {
      let count = 0;
      for (const [path, n] of arrivals) if (isMethod(path, method)) count += n;
      return count;
    },
    openStreams: () => open.size,
    stopUpstream() {
      down = true;
      upstream?.destroy();
      upstream = undefined;
    },
    resumeUpstream() {
      down = false;
    },
    async close() {
      upstream?.destroy();
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => { resolve(); }));
    },
  };
}

/** Whole names only: `StartWorkflowExecution` is not `SignalWithStartWorkflowExecution`. */
function isMethod(path: string, method: string): boolean {
  return path === method || path.endsWith(`/${method}`) || path.endsWith(`.${method}`);
}

function isOpen(stream: ServerHttp2Stream): boolean {
  return !stream.closed && !stream.destroyed;
}

/** A trailers-only gRPC answer: one HEADERS frame that ends the stream. */
function answerStatus(stream: ServerHttp2Stream, code: number, message: string): void {
  if (!isOpen(stream)) return;
  // The request body is not wanted; reading it lets a client still sending finish cleanly.
  stream.resume();
  stream.respond({ [HTTP2_HEADER_STATUS]: 200, 'content-type': 'application/grpc', ...statusHeaders(code, message) }, { endStream: true });
}

function statusHeaders(code: number, message: string): OutgoingHttpHeaders {
  return { 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) };
}

/** The client's request for the server: its own fields; Node sets :authority and :scheme for the upstream. */
function requestHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return { ':method': headers[':method'], ':path': headers[':path'], ...passHeaders(headers) };
}

/** Every field but pseudo-headers (except the response's :status) and connection-specific ones. */
function passHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const passed: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') ? name === HTTP2_HEADER_STATUS : !CONNECTION_HEADERS.has(name)) passed[name] = value;
  }
  return passed;
}
