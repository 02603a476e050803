// A separate process for the remote-tool benchmark: `node --import tsx bench/remote-client.ts
// <address> <runs> <concurrency>` serves `bench_remote_echo` with the TypeScript worker SDK (in
// this process, over HTTP/2 to the server), then times runs making one tool call each: in process
// (`bench-local-call`) and remote (`bench-remote-call`). Prints one JSON line.
import { z } from 'zod';
import { createWaymarkClient, createWaymarkWorker, RunStatus } from '../clients/ts/src/index.js';
import { percentile, pool } from './stats.js';

const [address, runsArg, concurrencyArg] = process.argv.slice(2);
const runs = Number(runsArg);
const concurrency = Number(concurrencyArg);
const namespace = 'bench';
const client = createWaymarkClient({ address, namespace });
const worker = createWaymarkWorker({ address, namespace, concurrency, workerId: `bench-worker-${process.pid}` }).tool({
  name: 'bench_remote_echo', description: 'Returns its input (served by a worker).', input: z.object({ n: z.number() }),
  execute: ({ n }) => ({ n }),
});
void worker.run();
await new Promise<void>((resolve) => {
  const check = async (): Promise<void> => {
    const { tools } = await client.workers.listTools({ namespace });
    if (tools.some((t) => t.declaration?.name === 'bench_remote_echo' && t.liveWorkers > 0)) resolve();
    else setTimeout(() => void check(), 50);
  };
  void check();
});

async function call(workflow: string, n: number): Promise<void> {
  const { run } = await client.startRun(workflow, { n }, { wait: true });
  if (run.status !== RunStatus.SUCCEEDED) await client.result(run.id);
}

async function measure(workflow: string) {
  await call(workflow, -1); // warm the paths
  const latencies: number[] = [];
  const started = performance.now();
  await pool(runs, concurrency, async (i) => {
    const t = performance.now();
    await call(workflow, i);
    latencies.push(performance.now() - t);
  });
  const seconds = (performance.now() - started) / 1000;
  return { callsPerSec: runs / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

const local = await measure('bench-local-call');
const remote = await measure('bench-remote-call');
await worker.stop();
client.close();
process.stdout.write(`${JSON.stringify({ local, remote })}\n`);
