import { fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { anyIs, anyUnpack } from '@bufbuild/protobuf/wkt';
import type * as grpc from '@grpc/grpc-js';
import { BadRequestSchema, ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { StatusSchema } from '../../src/gen/google/rpc/status_pb.js';

/**
 * The google.rpc details of a gRPC error as any gRPC client reads them: the serialized
 * google.rpc.Status in the `grpc-status-details-bin` trailer, its details packed in Any.
 */
export function grpcDetail<D extends DescMessage>(err: { metadata?: grpc.Metadata }, desc: D): MessageShape<D> | undefined {
  const [raw] = err.metadata?.get('grpc-status-details-bin') ?? [];
  if (!(raw instanceof Buffer)) return undefined;
  const status = fromBinary(StatusSchema, raw);
  const any = status.details.find((d) => anyIs(d, desc));
  return any ? anyUnpack(any, desc) : undefined;
}

/** code, ErrorInfo reason, BadRequest fields: what the API promises for an error (docs/api.md). */
export function grpcShape(err: grpc.ServiceError | grpc.StatusObject): { code: number; reason: string | undefined; fields: string[] } {
  return {
    code: err.code,
    reason: grpcDetail(err, ErrorInfoSchema)?.reason,
    fields: grpcDetail(err, BadRequestSchema)?.fieldViolations.map((v) => v.field) ?? [],
  };
}
