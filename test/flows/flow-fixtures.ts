import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { FlowSchema, type Flow } from '../../src/gen/waymark/v1/flow_service_pb.js';

/*
 * Flows the tests register, in the JSON form a client or the CLI sends (protobuf JSON of
 * waymark.v1.Flow). `refundFlow` is examples/refund.ts as a flow: approve (24h, deny on timeout),
 * branch on the decision, charge_back exactly once, end.
 */

export type FlowJson = { [key: string]: JsonValue };

export function flowMessage(json: FlowJson): Flow {
  return fromJson(FlowSchema, json);
}

export function refundFlow(overrides: Partial<FlowJson> = {}): FlowJson {
  return {
    name: 'refund-flow',
    description: 'Refunds an order after a person approves it.',
    stateSchema: {
      type: 'object',
      properties: {
        order: { type: 'string', minLength: 1 },
        amount: { type: 'number', exclusiveMinimum: 0 },
        decision: { type: 'object' },
        refund: { type: 'object' },
      },
      required: ['order', 'amount'],
    },
    start: 'approve',
    nodes: [
      { id: 'approve', approval: { title: 'Refund ${{ state.amount }} for order {{ state.order }}?', deadline: '86400s', onTimeout: 'APPROVAL_TIMEOUT_DECISION_DENY', into: 'decision' } },
      { id: 'approved', branch: {} },
      { id: 'charge', tool: { tool: 'charge_back', arguments: { order: '{{ state.order }}', amount: '{{ state.amount }}' }, into: 'refund' } },
      { id: 'refunded', end: { output: { status: 'refunded', refundId: '{{ state.refund.refundId }}' } } },
      { id: 'declined', end: { output: { status: 'declined', by: '{{ state.decision.by }}' } } },
    ],
    edges: [
      { from: 'approve', to: 'approved' },
      { from: 'approved', to: 'charge', condition: 'state.decision.approved' },
      { from: 'approved', to: 'declined' },
      { from: 'charge', to: 'refunded' },
    ],
    ...overrides,
  };
}
