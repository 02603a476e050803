// Item 6 of the benchmark, as a separate client process: `node --import tsx bench/events-client.ts
// <replica A> <replica B> <rounds> [signal|approval]`. A run parks on replica A; a follower streams its
// events from replica B; each round sends a signal on A, or decides the run's pending approval on A
// (the run wakes and emits on A), and times the emitted entry's arrival at B: from the call, and from
// the entry's create_time (database clock; one machine). The approval's id is read before the timer starts.
import { fromJson } from '@bufbuild/protobuf';
import { timestampMs, ValueSchema } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { RunStatus } from '../src/gen/waymark/v1/run_pb.js';
import { RunService } from '../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../src/gen/waymark/v1/signal_service_pb.js';
import { percentile } from './stats.js';

const [addrA, addrB, roundsArg, modeArg] = process.argv.slice(2);
const mode = modeArg === 'approval' ? 'approval' : 'signal';
const rounds = Number(roundsArg);
const WARMUP = 5;
const runsA = createClient(RunService, createGrpcTransport({ baseUrl: `http://${addrA}` }));
const signalsA = createClient(SignalService, createGrpcTransport({ baseUrl: `http://${addrA}` }));
const runsB = createClient(RunService, createGrpcTransport({ baseUrl: `http://${addrB}` }));

const started = await runsA.startRun({ namespace: 'bench', workflow: mode === 'approval' ? 'bench-approvals' : 'bench-ticks', input: fromJson(ValueSchema, { rounds: rounds + WARMUP }), wait: true });
if (started.run?.status !== RunStatus.SUSPENDED) throw new Error(`the run did not park: ${RunStatus[started.run?.status ?? 0]}`);
const runId = started.run.id;

const arrivals: { at: number; wall: number; created: number }[] = [];
const waiter: { notify: (() => void) | null } = { notify: null };
const abort = new AbortController();
const following = (async () => {
  for await (const res of runsB.streamRunEvents({ namespace: 'bench', runId, followSuspended: true }, { signal: abort.signal })) {
    const event = res.event;
    if (event?.body.case === 'entry' && event.body.value.kind === 'emit') {
      arrivals.push({ at: performance.now(), wall: Date.now(), created: event.createTime ? timestampMs(event.createTime) : NaN });
      waiter.notify?.();
    }
  }
})().catch((err: unknown) => {
  if (!abort.signal.aborted) throw err;
});

/** The id of the approval round `i` waits on, once the run parked on it (the previous round's emit came first). */
async function pendingApproval(i: number): Promise<string> {
  for (let polls = 0; ; polls++) {
    const { waitingOn } = await runsA.getRun({ namespace: 'bench', runId });
    const id = waitingOn.find((w) => w.approvalId !== '')?.approvalId;
    if (id && !decided.has(id)) {
      decided.add(id);
      return id;
    }
    if (polls > 5_000) throw new Error(`round ${i}: the run never parked on a new approval`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
const decided = new Set<string>();

const fromSend: number[] = [];
const fromCommit: number[] = [];
for (let i = 0; i < rounds + WARMUP; i++) {
  const approvalId = mode === 'approval' ? await pendingApproval(i) : '';
  const seen = new Promise<void>((resolve) => (waiter.notify = resolve));
  const t0 = performance.now();
  if (mode === 'approval') await signalsA.decideApproval({ namespace: 'bench', id: approvalId, approve: true, by: 'bench', requestId: `round-${i}` });
  else await signalsA.sendSignal({ namespace: 'bench', runId, name: 'tick', payload: fromJson(ValueSchema, { i }), signalId: `tick-${i}` });
  if (arrivals.length <= i) await seen;
  const a = arrivals[i]!;
  if (i >= WARMUP) {
    fromSend.push(a.at - t0);
    fromCommit.push(a.wall - a.created);
  }
}
abort.abort();
await following;
process.stdout.write(`${JSON.stringify({
  sendP50Ms: percentile(fromSend, 50), sendP99Ms: percentile(fromSend, 99),
  commitP50Ms: percentile(fromCommit, 50), commitP99Ms: percentile(fromCommit, 99),
})}\n`);
