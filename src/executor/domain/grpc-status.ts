/*
 * gRPC status code names, the only part of a workflow-engine error the readiness monitor logs
 * (spec §6: "redacted gRPC status code"). Messages, details and addresses are never kept.
 */
export const GRPC_STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;
export type GrpcStatusName = (typeof GRPC_STATUS_NAMES)[number];

/**
 * The canonical status name for a numeric code (0–16, as `@grpc/grpc-js` reports it) or a name
 * in any case; anything else — a message, an address, an unknown number — gives undefined, so a
 * careless adapter cannot leak free text into the log through this field.
 */
export function grpcStatusName(value: unknown): GrpcStatusName | undefined {
  if (typeof value === 'number') return Number.isInteger(value) ? GRPC_STATUS_NAMES[value] : undefined;
  if (typeof value !== 'string') return undefined;
  const upper = value.toUpperCase();
  return GRPC_STATUS_NAMES.find((name) => name === upper);
}
