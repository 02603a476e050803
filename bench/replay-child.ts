// Resumes one long run in a process of its own and prints {ms, peakRssMb, rssBeforeMb, entries}.
import { openEngine } from './waymark-inprocess.js';
import { longRun } from './replay.js';
import { PAYLOAD_LIMITS, resultsRun } from './payloads.js';

const [url, runId] = process.argv.slice(2) as [string, string];
const bench = await openEngine(url, [longRun, resultsRun], { limits: PAYLOAD_LIMITS });
const before = await bench.store.runGet({ runId, namespace: 'bench' });
const rssBeforeMb = process.memoryUsage().rss / 2 ** 20;
let peak = rssBeforeMb;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss / 2 ** 20)), 5);
const t = performance.now();
await bench.engine.signalSend({ runId, namespace: 'bench', name: 'go', payload: {}, signalId: 'go-1' });
const result = await bench.engine.runExecute({ runId, namespace: 'bench' });
const ms = performance.now() - t;
clearInterval(sampler);
const peakRssMb = Math.max(peak, process.resourceUsage().maxRSS / 1024);
if (result?.outcome !== 'succeeded') throw new Error(`resume ended ${result?.outcome}`);
await bench.close();
console.log(JSON.stringify({ ms, peakRssMb, rssBeforeMb, entries: before.nextSeq }));
