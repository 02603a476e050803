// The refund example of clients/ts/README.md: start the run, follow its events, approve it when it
// parks, print the result. Run it against `npm start` (waymark dev):
//   node --import tsx clients/ts/examples/refund.ts [address]
import { createWaymarkClient, EntryStatus, fromValue, RunStatus } from '../src/index.js';

const client = createWaymarkClient({ address: process.argv[2] ?? '127.0.0.1:50051' });
try {
  const started = await client.startRun('refund', { order: 'A-1001', amount: 42.5 }, { idempotencyKey: 'refund-A-1001' });
  const runId = started.run!.id;
  console.log('run', runId);

  // Reconnects by itself if the connection drops, resuming after the last seq it yielded.
  for await (const event of client.events(runId, { followSuspended: true })) {
    const seq = String(event.seq).padStart(3);
    if (event.body.case === 'entry') {
      const entry = event.body.value;
      console.log(`${seq} ${entry.kind} ${entry.name} ${EntryStatus[entry.status]}`);
    } else if (event.body.case === 'statusChanged') {
      const { status, output } = event.body.value;
      console.log(`${seq} run ${RunStatus[status]}`);
      if (status === RunStatus.SUSPENDED) {
        for await (const approval of client.listApprovals({ runId })) {
          console.log('approving:', approval.title);
          await client.approve(approval.id, { by: 'ana@example.com' });
        }
      } else if (status === RunStatus.SUCCEEDED) {
        console.log('result:', fromValue(output));
      }
    }
  }
} finally {
  client.close();
}
