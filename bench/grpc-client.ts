// A separate client process for the gRPC benchmark: `node --import tsx bench/grpc-client.ts
// <address> <runs> <concurrency>` runs StartRun with wait for each run and prints one JSON line.
import { fromJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { RunStatus } from '../src/gen/waymark/v1/run_pb.js';
import { RunService } from '../src/gen/waymark/v1/run_service_pb.js';
import { percentile, pool } from './stats.js';

const [address, runsArg, concurrencyArg] = process.argv.slice(2);
const runs = Number(runsArg);
const concurrency = Number(concurrencyArg);
const client = createClient(RunService, createGrpcTransport({ baseUrl: `http://${address}` }));

const startRun = async (n: number) => {
  const res = await client.startRun({ namespace: 'bench', workflow: 'bench-ten-steps', input: fromJson(ValueSchema, { n }), wait: true });
  if (res.run?.status !== RunStatus.SUCCEEDED) throw new Error(`bench run ended ${RunStatus[res.run?.status ?? 0]}`);
};

await startRun(-1); // warm the connection and the server's code paths
const latencies: number[] = [];
const cpuBefore = process.cpuUsage();
const started = performance.now();
await pool(runs, concurrency, async (i) => {
  const t = performance.now();
  await startRun(i);
  latencies.push(performance.now() - t);
});
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
process.stdout.write(`${JSON.stringify({ runsPerSec: runs / seconds, runP50Ms: percentile(latencies, 50), runP99Ms: percentile(latencies, 99), cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
