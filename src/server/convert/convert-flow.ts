import { create, fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { timestampFromDate, type Value } from '@bufbuild/protobuf/wkt';
import type { FlowDefinition } from '../../engine/index.js';
import { FlowSchema, FlowVersionSchema, type Flow, type FlowVersion } from '../../gen/waymark/v1/flow_service_pb.js';
import type { FlowRecord } from '../../engine/index.js';

/*
 * Flows between the wire and the engine: the engine works on the Flow message's canonical JSON form
 * (protobuf JSON mapping), which is also what the store keeps and what the digest is taken over, so
 * a flow sent from Go, Python, TypeScript or the CLI is the same content whatever the language.
 */

/** The engine's form of a received Flow. */
export function flowFromProto(flow: Flow): FlowDefinition {
  return toJson(FlowSchema, flow) as unknown as FlowDefinition;
}

/**
 * Every google.protobuf.Value of a received Flow with its field path (`flow.nodes[2].tool.arguments`),
 * so each is read as a request's JSON is (jsonFromValue: depth, `__proto__`, non-finite numbers)
 * before toJson, which would drop a `__proto__` key without a word.
 */
export function flowValues(flow: Flow): { field: string; value: Value | undefined }[] {
  const out: { field: string; value: Value | undefined }[] = [{ field: 'flow.state_schema', value: flow.stateSchema }];
  flow.nodes.forEach((node, i) => {
    const at = `flow.nodes[${i}]`;
    const kind = node.kind;
    if (kind.case === 'agent') out.push({ field: `${at}.agent.output_schema`, value: kind.value.outputSchema });
    else if (kind.case === 'tool') out.push({ field: `${at}.tool.arguments`, value: kind.value.arguments });
    else if (kind.case === 'signal') out.push({ field: `${at}.signal.payload_schema`, value: kind.value.payloadSchema });
    else if (kind.case === 'child') out.push({ field: `${at}.child.input`, value: kind.value.input });
    else if (kind.case === 'end') out.push({ field: `${at}.end.output`, value: kind.value.output }, { field: `${at}.end.continue_as_new`, value: kind.value.continueAsNew });
  });
  return out;
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
