import { connect, type IncomingHttpHeaders } from 'node:http2';

/*
 * Whether a Temporal frontend serves: one call of the standard gRPC health service
 * (grpc.health.v1.Health/Check) for the WorkflowService, spoken by hand over node:http2 so the
 * check needs no gRPC client library. The frontend accepts TCP connections before it can serve
 * and reports NOT_SERVING until its cluster membership is ready
 * (service/frontend/workflow_handler.go); SERVING is Temporal's own "ready" — the same thing
 * `temporal operator cluster health` asks.
 */

export const WORKFLOW_SERVICE = 'temporal.api.workflowservice.v1.WorkflowService';

export type HealthProbe = { readonly serving: true } | { readonly serving: false; readonly reason: string };

/** The gRPC message frame of HealthCheckRequest{service}: flag byte, 4-byte length, protobuf field 1 (a name under 128 bytes). */
function healthRequest(service: string): Buffer {
  const name = Buffer.from(service);
  const message = Buffer.concat([Buffer.from([0x0a, name.length]), name]);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

/** HealthCheckResponse{status = 1 (SERVING)} is exactly these bytes after the 5-byte frame header. */
const SERVING = Buffer.from([0x08, 0x01]);

/** One bounded health check of `service` on 127.0.0.1:`port` (plaintext HTTP/2). */
export function probeGrpcHealth(port: number, timeoutMs: number, service = WORKFLOW_SERVICE): Promise<HealthProbe> {
  return new Promise((resolve) => {
    const session = connect(`http://127.0.0.1:${port}`);
    const chunks: Buffer[] = [];
    let status: string | undefined;
    const finish = (result: HealthProbe) => {
      clearTimeout(timer);
      session.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      finish({ serving: false, reason: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
    session.on('error', (error: NodeJS.ErrnoException) => {
      finish({ serving: false, reason: error.code ?? 'connection error' });
    });
    const request = session.request({ ':method': 'POST', ':path': '/grpc.health.v1.Health/Check', 'content-type': 'application/grpc', te: 'trailers' });
    request.on('error', (error: NodeJS.ErrnoException) => {
      finish({ serving: false, reason: error.code ?? 'stream error' });
    });
    // An error answer may come "trailers-only": its grpc-status then is in the headers.
    request.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status']);
    });
    request.on('trailers', (trailers: IncomingHttpHeaders) => {
      if (trailers['grpc-status'] !== undefined) status = String(trailers['grpc-status']);
    });
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      if (status !== '0') finish({ serving: false, reason: `grpc-status ${status ?? 'missing'}` });
      else finish(body.subarray(5).equals(SERVING) ? { serving: true } : { serving: false, reason: 'not serving yet' });
    });
    request.end(healthRequest(service));
  });
}
