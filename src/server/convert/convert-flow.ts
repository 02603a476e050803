import { create, fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { FlowDefinition } from '../../engine/flow/flow-definition.js';
import { FlowSchema, FlowVersionSchema, type Flow, type FlowVersion } from '../../gen/waymark/v1/flow_service_pb.js';
import type { FlowRecord } from '../../engine/flow/flow-catalog.js';

/*
 * Flows between the wire and the engine: the engine works on the Flow message's canonical JSON form
 * (protobuf JSON mapping), which is also what the store keeps and what the digest is taken over, so
 * a flow sent from Go, Python, TypeScript or the CLI is the same content whatever the language.
 */

/** The engine's form of a received Flow. */
export function flowFromProto(flow: Flow): FlowDefinition {
  return toJson(FlowSchema, flow) as unknown as FlowDefinition;
}

export function flowVersionToProto(record: FlowRecord): FlowVersion {
  return create(FlowVersionSchema, {
    flow: fromJson(FlowSchema, record.definition as JsonValue, { ignoreUnknownFields: true }),
    namespace: record.namespace,
    version: String(record.version),
    digest: record.digest,
    createTime: timestampFromDate(record.createdAt),
  });
}
