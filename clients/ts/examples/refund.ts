// The refund example of clients/ts/README.md: start the run, follow its events, approve it when it
// parks, then wait for its result. It imports the package by name and needs no Node type
// declarations, so it compiles in a fresh project with `tsc --init` defaults (the packaging test,
// test/package.test.ts, does that against the built tarball). Against `npm start` (waymark dev):
//   node --import tsx clients/ts/examples/refund.ts        (from the repository; WAYMARK_ADDRESS picks the server)
import { createWaymarkClient, entryStatusName, RunFailed, runStatusName, RunStatus } from '@waymark-dev/client';

const client = createWaymarkClient(); // WAYMARK_ADDRESS and WAYMARK_TOKEN from the environment
try {
  const { run } = await client.startRun('refund', { order: 'A-1001', amount: 42.5 }, { idempotencyKey: 'refund-A-1001' });
  console.log('run', run.id);

  // Reconnects by itself if the connection drops, resuming after the last seq it yielded.
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

  // Waits for the end (at once here: the stream above ended with it) and returns the output.
  console.log('result:', JSON.stringify(await client.result(run.id)));
} catch (err) {
  if (err instanceof RunFailed) console.log('the run failed:', err.errorMessage);
  throw err;
} finally {
  client.close();
}
