import { fromBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FlowDrift, InvalidArgument, LeaseLost, PayloadTooLarge, RunNotFound, toWaymarkError, Unavailable, WaymarkError } from '../src/index.js';
import { StatusSchema } from '../src/gen/google/rpc/status_pb.js';

const WIRE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/wire');

/** The ConnectError a gRPC call fails with when its trailer carries the fixture's google.rpc.Status. */
function connectError(name: string): ConnectError {
  const { binary } = JSON.parse(readFileSync(path.join(WIRE, `${name}.json`), 'utf8')) as { binary: string };
  const status = fromBinary(StatusSchema, new Uint8Array(Buffer.from(binary, 'base64')));
  const details = status.details.map((any) => ({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf('/') + 1), value: any.value }));
  const err = new ConnectError(status.message, status.code as Code);
  err.details.push(...details); // as the gRPC transport decodes them from grpc-status-details-bin
  return err;
}

describe('typed errors from status details', () => {
  it('RUN_NOT_FOUND', () => {
    const err = toWaymarkError(connectError('error_run_not_found'));
    expect(err).toBeInstanceOf(RunNotFound);
    expect(err).toBeInstanceOf(WaymarkError);
    expect(err.code).toBe(Code.NotFound);
    expect((err as RunNotFound).runId).toBe('run_01JD8Z6Q4W8K7M2N3P5R6S7T8V');
    expect(err.cause).toBeInstanceOf(ConnectError);
  });

  it('INVALID_ARGUMENT with field violations', () => {
    const err = toWaymarkError(connectError('error_invalid_input'));
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err.fieldViolations.map((v) => v.field)).toEqual(['input.amount', 'input.order']);
  });

  it('FLOW_DRIFT with its choices', () => {
    const err = toWaymarkError(connectError('error_flow_drift')) as FlowDrift;
    expect(err).toBeInstanceOf(FlowDrift);
    expect(err.choices).toEqual(['restart', 'abandon']);
    expect(err.pinnedDigest).toBe('sha256:5f1e0c2a');
  });

  it('PAYLOAD_TOO_LARGE with sizes', () => {
    const err = toWaymarkError(connectError('error_payload_too_large')) as PayloadTooLarge;
    expect(err).toBeInstanceOf(PayloadTooLarge);
    expect([err.field, err.sizeBytes, err.limitBytes]).toEqual(['input', 2 << 20, 1 << 20]);
  });

  it('LEASE_LOST (a race no test can stage against a real server)', () => {
    const err = toWaymarkError(connectError('error_lease_lost')) as LeaseLost;
    expect(err).toBeInstanceOf(LeaseLost);
    expect(err.code).toBe(Code.Aborted);
    expect(err.runId).toBe('run_01JD8Z6Q4W8K7M2N3P5R6S7T8V');
  });

  it('maps by code when there are no details', () => {
    const err = toWaymarkError(new ConnectError('server shutting down', Code.Unavailable));
    expect(err).toBeInstanceOf(Unavailable);
    expect(err.retryable).toBe(true);
  });
});
