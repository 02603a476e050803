// The idle rows of the benchmark (issue 29 item 6), as a separate client process:
// `node --import tsx bench/idle-client.ts <address> <streams> <polls>`. Parks one run, opens
// `streams` StreamRunEvents on it (follow_suspended: they stay open) and `polls` PollTask long
// polls (30 s wait) of a tool nothing dispatches, prints `ready` once all are open, and holds them
// until killed. The parent times the server's CPU meanwhile (bench/idle.ts).
import { fromJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { createClient, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { RunStatus } from '../src/gen/waymark/v1/run_pb.js';
import { RunService } from '../src/gen/waymark/v1/run_service_pb.js';
import { WorkerService } from '../src/gen/waymark/v1/worker_service_pb.js';

const [address, streamsArg, pollsArg] = process.argv.slice(2);
const streams = Number(streamsArg);
const polls = Number(pollsArg);
const namespace = 'bench';
// One HTTP/2 session carries at most 100 concurrent streams by default: a transport per 90 calls.
const transports: Transport[] = [];
const transport = (i: number): Transport => (transports[Math.floor(i / 90)] ??= createGrpcTransport({ baseUrl: `http://${address}` }));
const runs = createClient(RunService, transport(0));

const started = await runs.startRun({ namespace, workflow: 'bench-ticks', input: fromJson(ValueSchema, { rounds: 1 }), wait: true });
if (started.run?.status !== RunStatus.SUSPENDED) throw new Error(`the run did not park: ${RunStatus[started.run?.status ?? 0]}`);
const runId = started.run.id;

let open = 0;
let failed = 0;
for (let i = 0; i < streams; i++) {
  const client = createClient(RunService, transport(i));
  void (async () => {
    const it = client.streamRunEvents({ namespace, runId, followSuspended: true })[Symbol.asyncIterator]();
    // The history first (the run's entries so far); the stream is idle after it.
    let first = true;
    for (;;) {
      const next = it.next();
      if (first) {
        first = false;
        await next;
        open += 1;
      } else if ((await next).done) return;
    }
  })();
}
const workers = createClient(WorkerService, transport(0));
await workers.registerWorker({ namespace, workerId: 'bench-idle', tools: [{ name: 'bench_idle_tool', description: 'never called', mutating: false }] });
for (let i = 0; i < polls; i++) {
  const client = createClient(WorkerService, transport(streams + i));
  const poll = (): void => void client.pollTask({ namespace, workerId: 'bench-idle', tools: [], queue: '', wait: { seconds: 30n, nanos: 0 } }).then(poll, (err: unknown) => {
    if (failed++ === 0) process.stderr.write(`idle client: a poll failed: ${String(err)}\n`);
  });
  poll();
}
while (open < streams) await new Promise((resolve) => setTimeout(resolve, 50));
// Each poll looked at the store once and waits now; give the last of them a moment to get there.
await new Promise((resolve) => setTimeout(resolve, 1_000));
process.stdout.write('ready\n');
await new Promise(() => undefined);
