// The flow example of clients/ts/README.md: register the refund flow (a declarative flow: approve,
// branch on the decision, charge back, end), start a run of it, follow its events, approve it when
// it parks, print its result. It is the refund of refund.ts as data the server stores and runs, so
// the same flow can be registered from Go, Python or the CLI (`waymark flows register`) too; like
// refund.ts it needs no Node type declarations. test/clients/flow-clients.test.ts runs it. Against
// `npm start` (waymark dev, which registers the charge_back tool the flow calls):
//   node --import tsx clients/ts/examples/refund-flow.ts        (from the repository; WAYMARK_ADDRESS picks the server)
import { createWaymarkClient, entryStatusName, InvalidArgument, RunFailed, runStatusName, RunStatus, type JsonValue } from '@waymark-dev/client';

// The protobuf JSON form of waymark.v1.Flow. "{{ state.x }}" templates read the run's state; a
// string that is only one template keeps the value's JSON type (amount stays a number).
const refundFlow: JsonValue = {
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
};

const client = createWaymarkClient(); // WAYMARK_ADDRESS, else 127.0.0.1:50051
try {
  // The same content again is a no-op answering the same version: register on every start.
  const { flow, created } = await client.registerFlow(refundFlow);
  console.log(`flow ${flow.flow?.name} version ${flow.version} ${flow.digest} (created: ${created})`);

  // A flow starts like a code workflow, by name; the run pins this version's digest.
  const { run } = await client.startRun('refund-flow', { order: 'A-1001', amount: 42.5 }, { idempotencyKey: 'refund-flow-A-1001' });
  console.log('run', run.id);

  // Each node entered and each branch decision are journaled (emit flow.node, flow.branch).
  for await (const event of client.events(run.id, { followSuspended: true })) {
    const seq = String(event.seq).padStart(3);
    if (event.body.case === 'entry') {
      const entry = event.body.value;
      console.log(`${seq} ${entry.kind} ${entry.name} ${entryStatusName(entry.status)}`);
    } else if (event.body.case === 'statusChanged') {
      const { status } = event.body.value;
      console.log(`${seq} run ${runStatusName(status)}`);
      if (status === RunStatus.SUSPENDED) {
        for await (const approval of client.listApprovals({ runId: run.id })) {
          console.log('approving:', approval.title);
          await client.approve(approval.id, { by: 'ana@example.com' });
        }
      }
    }
  }
  console.log('result:', JSON.stringify(await client.result(run.id)));
} catch (err) {
  if (err instanceof InvalidArgument) for (const v of err.fieldViolations) console.log(`invalid flow: ${v.field}: ${v.description}`);
  if (err instanceof RunFailed) console.log('the run failed:', err.errorMessage);
  throw err;
} finally {
  client.close();
}
