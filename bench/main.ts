// `npm run bench`: every figure side by side in one run on one PostgreSQL, each the median of
// several repetitions, printed as a table and written to bench/results/latest.md.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchDbos, measureDbos, shutdownDbos } from './dbos.js';
import { measureFloor } from './floor.js';
import { measureEvents, measureGrpc, measureRemote, startServer } from './grpc.js';
import { postgresCpu } from './cpu.js';
import { openBenchDatabase, walCounters } from './postgres.js';
import { DEFAULT_LEASE, describeLease, measureRecovery, RUNS_PER_KILL, SHORT_LEASE } from './recovery.js';
import { callShape, callShapeWide, measureCalls, type CallRow } from './calls.js';
import { measureReplay, longRun } from './replay.js';
import { measurePayloads, payloadRows } from './payloads.js';
import { consoleRow, measureConsole } from './console.js';
import { launchRestate, measureRestate } from './restate.js';
import { fmt, repeat } from './stats.js';
import { measureStartup, startupRows } from './startup.js';
import { measureResetStreams } from './reset-streams.js';
import { IDLE_HOLD_MS, measureIdle } from './idle.js';
import { measureParked } from './parked.js';
import { measureMcp, mcpRows } from './mcp.js';
import { measureSchedules } from './schedules.js';
import { measureStorage } from './storage.js';
import { measureTimers } from './timers.js';
import { measureTokens } from './tokens.js';
import { measureWaymark, openEngine, STEPS, tenIntentSteps, tenParallelSteps } from './waymark-inprocess.js';
import { CRAWL_STEP_MS } from './workflows.js';
import { DEFAULT_LIMITS } from '../src/journal/limits.js';

const quick = process.env.BENCH_QUICK === '1';
const REPS = quick ? 1 : Number(process.env.BENCH_REPS ?? 3);
const RUNS = quick ? 40 : 200;
const FLOOR_INSERTS = quick ? 1000 : 4000;
const REPLAY_ENTRIES = quick ? 2000 : 10_000;
/** The journal limit (DEFAULT_LIMITS.journalEntries) less the run's own entries around its steps. */
const REPLAY_LIMIT_STEPS = quick ? 20_000 : DEFAULT_LIMITS.journalEntries - 8;
const EVENT_ROUNDS = quick ? 30 : 200;
const SHORT_LEASE_KILLS = quick ? 1 : 3;
const CALL_ITERATIONS = quick ? 30 : 200;
const CANCEL_RUNS = quick ? 5 : 11;

const progress = (msg: string) => process.stderr.write(`bench: ${msg}\n`);

const db = await openBenchDatabase();
const rows: string[][] = [];
const row = (...cells: (string | number)[]) => rows.push(cells.map(String));
try {
  const floorUrl = await db.create('bench_floor');
  progress('floor: single-row INSERT commits, 1 connection');
  const floor1 = await repeat(REPS, () => measureFloor(floorUrl, 1, FLOOR_INSERTS));
  progress('floor: 8 connections');
  const floor8 = await repeat(REPS, () => measureFloor(floorUrl, 8, FLOOR_INSERTS * 2));
  row('floor: INSERT commit, 1 conn', `${fmt(floor1.rowsPerSec, 0)} rows/s`, fmt(floor1.p50Ms, 3), fmt(floor1.p99Ms, 3));
  row('floor: INSERT commit, 8 conns', `${fmt(floor8.rowsPerSec, 0)} rows/s`, fmt(floor8.p50Ms, 3), fmt(floor8.p99Ms, 3));

  const wmUrl = await db.create('bench_waymark');
  const bench = await openEngine(wmUrl, [longRun, callShape, callShapeWide]);
  progress(`waymark in-process: ${RUNS} runs x ${STEPS} steps, sequential`);
  const w0 = await walCounters(wmUrl);
  const wSeq = await repeat(REPS, () => measureWaymark(bench, RUNS, 1));
  const w1 = await walCounters(wmUrl);
  progress(`waymark in-process: concurrency 16`);
  const pgCpu = await postgresCpu(wmUrl);
  const w16 = await repeat(REPS, () => measureWaymark(bench, RUNS, 16, undefined, pgCpu));
  const stepsDone = REPS * RUNS * STEPS;
  const commitsPerStep = (w1.commits - w0.commits - 1) / stepsDone; // minus the second reading's own transaction
  const walPerStep = (w1.walBytes - w0.walBytes) / stepsDone;
  row('waymark in-process, sequential', `${fmt(wSeq.stepsPerSec, 0)} steps/s`, fmt(wSeq.stepP50Ms, 3), fmt(wSeq.stepP99Ms, 3));
  row('waymark in-process, concurrency 16', `${fmt(w16.stepsPerSec, 0)} steps/s`, fmt(w16.stepP50Ms, 3), fmt(w16.stepP99Ms, 3));

  progress('waymark in-process, concurrency 16, group commit off (appendsInFlight: 0)');
  const solo = await openEngine(wmUrl, [], { appendsInFlight: 0 });
  const n16 = await repeat(REPS, () => measureWaymark(solo, RUNS, 16));
  await solo.close();
  row('waymark in-process, concurrency 16, group commit off', `${fmt(n16.stepsPerSec, 0)} steps/s`, fmt(n16.stepP50Ms, 3), fmt(n16.stepP99Ms, 3));

  progress('waymark in-process, steps with { intent: true } (two writes per step): sequential and concurrency 16');
  const i0 = await walCounters(wmUrl);
  const iSeq = await repeat(REPS, () => measureWaymark(bench, RUNS, 1, tenIntentSteps.name));
  const i1 = await walCounters(wmUrl);
  const i16 = await repeat(REPS, () => measureWaymark(bench, RUNS, 16, tenIntentSteps.name));
  const intentCommitsPerStep = (i1.commits - i0.commits - 1) / stepsDone;
  const intentWalPerStep = (i1.walBytes - i0.walBytes) / stepsDone;
  row('waymark in-process, { intent: true } steps, sequential', `${fmt(iSeq.stepsPerSec, 0)} steps/s`, fmt(iSeq.stepP50Ms, 3), fmt(iSeq.stepP99Ms, 3));
  row('waymark in-process, { intent: true } steps, concurrency 16', `${fmt(i16.stepsPerSec, 0)} steps/s`, fmt(i16.stepP50Ms, 3), fmt(i16.stepP99Ms, 3));

  progress('waymark in-process, ten steps at once (Promise.all), sequential runs');
  const p0 = await walCounters(wmUrl);
  const pSeq = await repeat(REPS, () => measureWaymark(bench, RUNS, 1, tenParallelSteps.name));
  const p1 = await walCounters(wmUrl);
  const parallelCommitsPerStep = (p1.commits - p0.commits - 1) / stepsDone;
  row('waymark in-process, 10 parallel steps (Promise.all), sequential runs', `${fmt(pSeq.stepsPerSec, 0)} steps/s`, fmt(pSeq.stepP50Ms, 3), fmt(pSeq.stepP99Ms, 3));

  progress(`waymark gRPC: a server process and a client process, ${RUNS} runs, sequential and concurrency 16`);
  const server = await startServer(wmUrl);
  let gSeq, g16, c16, events, decisions, rSeq, r16;
  try {
    gSeq = await repeat(REPS, () => measureGrpc(server, RUNS, 1, STEPS));
    g16 = await repeat(REPS, () => measureGrpc(server, RUNS, 16, STEPS, pgCpu));
    c16 = await repeat(REPS, () => measureGrpc(server, RUNS, 16, STEPS, pgCpu, 'connect'));
    progress(`remote tools: ${RUNS} runs of one tool call each, in process and served by a worker (TypeScript SDK) over WorkerService; sequential and concurrency 16`);
    rSeq = await measureRemote(server, RUNS, 1);
    r16 = await measureRemote(server, RUNS, 16);
    progress(`event latency: a signal on replica A to the emitted entry at a follower on replica B, ${EVENT_ROUNDS} rounds`);
    const other = await startServer(wmUrl);
    try {
      events = await measureEvents(server, other, EVENT_ROUNDS);
      progress(`event latency after a decision: an approval decided on replica A to the emitted entry at a follower on replica B, ${EVENT_ROUNDS} rounds`);
      decisions = await measureEvents(server, other, EVENT_ROUNDS, 'approval');
    } finally {
      await other.stop();
    }
  } finally {
    await server.stop();
  }
  row('waymark gRPC StartRun(wait), sequential (p50/p99: per run)', `${fmt(gSeq.stepsPerSec, 0)} steps/s`, fmt(gSeq.runP50Ms, 3), fmt(gSeq.runP99Ms, 3));
  row('waymark gRPC StartRun(wait), concurrency 16 (p50/p99: per run)', `${fmt(g16.stepsPerSec, 0)} steps/s`, fmt(g16.runP50Ms, 3), fmt(g16.runP99Ms, 3));
  row('waymark gRPC StartRun(wait), concurrency 16, @connectrpc/connect client', `${fmt(c16.stepsPerSec, 0)} steps/s`, fmt(c16.runP50Ms, 3), fmt(c16.runP99Ms, 3));
  for (const [label, r] of [['sequential', rSeq], ['concurrency 16', r16]] as const) {
    row(`tool call in process (gRPC StartRun(wait), one mutating tool), ${label}`, `${fmt(r.local.callsPerSec, 0)} calls/s`, fmt(r.local.p50Ms, 3), fmt(r.local.p99Ms, 3));
    row(`remote tool call (worker over WorkerService: park, poll, result, resume), ${label}`, `${fmt(r.remote.callsPerSec, 0)} calls/s`, fmt(r.remote.p50Ms, 3), fmt(r.remote.p99Ms, 3));
  }
  row('events across replicas: signal sent on A to entry seen on B', '', fmt(events.sendP50Ms, 3), fmt(events.sendP99Ms, 3));
  row('events across replicas: entry create_time to receipt on B', '', fmt(events.commitP50Ms, 3), fmt(events.commitP99Ms, 3));
  row('events across replicas: approval decided on A to entry seen on B', '', fmt(decisions.sendP50Ms, 3), fmt(decisions.sendP99Ms, 3));

  progress(`Restate 1.7: server binary, endpoint process (10 ctx.run steps), client process through the ingress, ${RUNS} invocations, sequential and concurrency 16`);
  const restate = await launchRestate();
  let sSeq, s16;
  try {
    sSeq = await repeat(REPS, () => measureRestate(restate, RUNS, 1, STEPS));
    s16 = await repeat(REPS, () => measureRestate(restate, RUNS, 16, STEPS));
  } finally {
    await restate.stop();
  }
  row('Restate 1.7, sequential (through ingress; p50/p99: per invocation)', `${fmt(sSeq.stepsPerSec, 0)} steps/s`, fmt(sSeq.runP50Ms, 3), fmt(sSeq.runP99Ms, 3));
  row('Restate 1.7, concurrency 16 (through ingress; p50/p99: per invocation)', `${fmt(s16.stepsPerSec, 0)} steps/s`, fmt(s16.runP50Ms, 3), fmt(s16.runP99Ms, 3));
  // Which process a concurrency-16 row spent its CPU in: the machine's cores are shared by all of them.
  row('CPU per run at concurrency 16, ms: in process (node / PostgreSQL)', `${fmt(w16.nodeCpuMsPerRun, 2)} / ${fmt(w16.postgresCpuMsPerRun, 2)}`, '', '');
  row('CPU per run at concurrency 16, ms: gRPC (server / client / PostgreSQL)', `${fmt(g16.serverCpuMsPerRun, 2)} / ${fmt(g16.clientCpuMsPerRun, 2)} / ${fmt(g16.postgresCpuMsPerRun, 2)}`, '', '');
  row('CPU per run at concurrency 16, ms: gRPC, @connectrpc/connect client (server / client / PostgreSQL)', `${fmt(c16.serverCpuMsPerRun, 2)} / ${fmt(c16.clientCpuMsPerRun, 2)} / ${fmt(c16.postgresCpuMsPerRun, 2)}`, '', '');
  row('CPU per invocation at concurrency 16, ms: Restate (server / endpoint / client)', `${fmt(s16.serverCpuMsPerRun, 2)} / ${fmt(s16.endpointCpuMsPerRun, 2)} / ${fmt(s16.clientCpuMsPerRun, 2)}`, '', '');

  progress(`replay: resume a run with ${REPLAY_ENTRIES} journal entries`);
  const replay = await measureReplay(bench, wmUrl, REPLAY_ENTRIES);
  progress(`replay: resume a run at the journal limit (${REPLAY_LIMIT_STEPS} steps, built 100 per append, replayed one at a time)`);
  const replayLimit = await measureReplay(bench, wmUrl, REPLAY_LIMIT_STEPS, 100);
  progress(`per-call cost: each call ${CALL_ITERATIONS} times on a run of 10 entries and one of 10,000, alternating`);
  const callRows: CallRow[] = await measureCalls(bench, 10, 10_000, CALL_ITERATIONS, CANCEL_RUNS);
  await bench.close();
  for (const r of [replay, replayLimit]) row(`replay: resume ${r.entries} entries`, `${fmt(r.resumeMs, 0)} ms`, `peak RSS ${fmt(r.peakRssMb, 0)} MB`, `+${fmt(r.extraRssMb, 0)} MB`);

  progress('replay: large payloads: ten 5 MiB results against 16 B ones and against the same run stored inline; GetJournal first pages');
  rows.push(...payloadRows(await measurePayloads(await db.create('bench_payloads'), REPS)));

  progress('web console: the run page of a 10,000-entry run in headless Chromium, cold loads');
  rows.push(consoleRow(await measureConsole(await db.create('bench_console'), 10_000, quick ? 3 : 7)));

  const dbosUrl = await db.create('bench_dbos');
  progress('DBOS Transact: sequential');
  await launchDbos(dbosUrl);
  const dSeq = await repeat(REPS, () => measureDbos(RUNS, 1));
  progress('DBOS Transact: concurrency 16');
  const d16 = await repeat(REPS, () => measureDbos(RUNS, 16));
  await shutdownDbos();
  row('DBOS 5.3, sequential', `${fmt(dSeq.stepsPerSec, 0)} steps/s`, fmt(dSeq.stepP50Ms, 3), fmt(dSeq.stepP99Ms, 3));
  row('DBOS 5.3, concurrency 16', `${fmt(d16.stepsPerSec, 0)} steps/s`, fmt(d16.stepP50Ms, 3), fmt(d16.stepP99Ms, 3));

  // Not repeated (one default-lease kill costs a few seconds, one SIGSTOP a lease): the samples of every kill pooled.
  const recoveryUrl = await db.create('bench_recovery');
  progress(`recovery: SIGKILL of a replica executing ${RUNS_PER_KILL} runs to each run continuing on another replica; ` +
    `${SHORT_LEASE_KILLS} kill(s) at a short lease (${describeLease(SHORT_LEASE)}), 1 at the default (${describeLease(DEFAULT_LEASE)}), ` +
    `and ${SHORT_LEASE_KILLS} SIGSTOP(s) at the short lease`);
  const recShort = await measureRecovery(recoveryUrl, SHORT_LEASE, SHORT_LEASE_KILLS, progress);
  const recDefault = await measureRecovery(recoveryUrl, DEFAULT_LEASE, 1, progress);
  const recStop = await measureRecovery(recoveryUrl, SHORT_LEASE, SHORT_LEASE_KILLS, progress, 'SIGSTOP');
  for (const [name, lease, r, kills] of [['short', SHORT_LEASE, recShort, SHORT_LEASE_KILLS], ['default', DEFAULT_LEASE, recDefault, 1]] as const) {
    row(`recovery: SIGKILL to run continuing on another replica, ${name} lease (${describeLease(lease)})`,
      `${r.runs} runs, ${kills} kill${kills > 1 ? 's' : ''}`, fmt(r.p50Ms, 0), fmt(r.p99Ms, 0));
  }
  row(`recovery: SIGSTOP (stalled, or its machine gone: sessions stay open) to run continuing elsewhere, short lease (${describeLease(SHORT_LEASE)})`,
    `${recStop.runs} runs, ${SHORT_LEASE_KILLS} stop${SHORT_LEASE_KILLS > 1 ? 's' : ''}`, fmt(recStop.p50Ms, 0), fmt(recStop.p99Ms, 0));
  row(`recovery, SIGSTOP: of which after the lease expired (sweep wait, claim, replay, one ${CRAWL_STEP_MS} ms step)`, '', fmt(recStop.afterExpiryP50Ms, 0), fmt(recStop.afterExpiryP99Ms, 0));

  const TIMER_RUNS = quick ? 100 : 1_000;
  progress(`timers: ${TIMER_RUNS} runs sleeping 1 s at once, sweeper alone (before issue 31) and with the in-memory timers`);
  const timersBefore = await measureTimers(await db.create('bench_timers_sweeper'), TIMER_RUNS, false);
  const timersAfter = await measureTimers(await db.create('bench_timers_memory'), TIMER_RUNS, true);
  row('timers: 1 s sleep lateness, sweeper alone (5 s interval)', `${TIMER_RUNS} runs at once`, fmt(timersBefore.p50Ms, 0), fmt(timersBefore.p99Ms, 0));
  row('timers: 1 s sleep lateness, in-memory timers', `${TIMER_RUNS} runs at once`, fmt(timersAfter.p50Ms, 1), fmt(timersAfter.p99Ms, 1));

  const SCHEDULES = 10_000;
  progress(`schedules: ${SCHEDULES} schedules through the sweeper's ticker, all due at one instant, then spread over a period`);
  const sched = await measureSchedules(await db.create('bench_schedules_burst'), await db.create('bench_schedules_steady'), SCHEDULES, progress);
  row(`schedules: ticks the store sustains, ${SCHEDULES.toLocaleString('en')} schedules due at one instant (p50/p99: lateness)`, `${fmt(sched.burstTicksPerSec, 0)} ticks/s`, fmt(sched.burstP50Ms, 0), fmt(sched.burstP99Ms, 0));
  row(`schedules: tick lateness, ${SCHEDULES.toLocaleString('en')} schedules spread over ${sched.steadyPeriodS} s`, `${fmt(sched.steadyTicksPerSec, 0)} ticks/s offered`, fmt(sched.steadyP50Ms, 1), fmt(sched.steadyP99Ms, 1));

  const TOKEN_RUNS = quick ? 10 : 50;
  progress(`tokens: ${TOKEN_RUNS} model calls streamed from a provider on loopback through a server to the TypeScript client's tokens()`);
  const tok = await measureTokens(await db.create('bench_tokens'), TOKEN_RUNS);
  row('tokens: provider writes the first token to the client holds it (issue 34)', `${tok.runs} calls of 20 words`, fmt(tok.firstP50Ms, 1), fmt(tok.firstP99Ms, 1));
  row('tokens: provider writes any token to the client holds it', `${tok.runs} calls of 20 words`, fmt(tok.allP50Ms, 1), fmt(tok.allP99Ms, 1));

  const PARKED = quick ? [1_000, 10_000] : [1_000, 100_000];
  progress(`parked: a server's RSS and idle CPU with ${PARKED.join(', then ')} runs parked on it on 2 h sleeps`);
  for (const f of await measureParked(await db.create('bench_parked'), PARKED, progress)) {
    row(`parked: server RSS and idle CPU, ${f.parked.toLocaleString('en')} runs parked on 2 h sleeps`, `${fmt(f.rssMiB, 0)} MiB, ${fmt(f.cores, 3)} cores`, '', '');
  }

  progress(`MCP: ${RUNS} runs, one tool call each over Streamable HTTP on loopback vs in process, sequential and concurrency 16`);
  const mcpSeq = await measureMcp(await db.create('bench_mcp_seq'), RUNS, 1);
  const mcp16 = await measureMcp(await db.create('bench_mcp_c16'), RUNS, 16);
  rows.push(...mcpRows(mcpSeq, mcp16));

  progress('storage: bytes and WAL per step of finished bench-ten-steps runs, and bytes per run before and after retention');
  const storage = await measureStorage(await db.create('bench_storage'), quick ? 500 : 2_000);
  row(`storage: database bytes per finished run, before / after retention (${storage.runs} runs of ${storage.steps} steps, VACUUM FULL)`,
    `${fmt(storage.bytesPerRun, 0)} B / ${fmt(storage.bytesPerRunAfterPurge, 0)} B`, '', '');
  row('storage: table bytes and WAL bytes per step', `${fmt(storage.bytesPerStep, 0)} B, WAL ${fmt(storage.walBytesPerStep, 0)} B`, '', '');
  row('storage: retention purge rate (batches of 50 runs)', `${fmt(storage.purgedPerSec, 0)} runs/s`, '', '');

  progress('StartRun (no wait) from one client, alone and while another process opens and resets 2,000 StartRun streams');
  const reset = await measureResetStreams(await db.create('bench_reset_streams'));
  row('StartRun, no wait, sequential, alone', 'one client', fmt(reset.aloneP50Ms, 1), fmt(reset.aloneP99Ms, 1));
  row(`StartRun while ${reset.resets} reset streams arrive (issue 29)`, `answering ${fmt(reset.answeringAfterMs, 0)} ms after the last reset`,
    fmt(reset.duringP50Ms, 1), fmt(reset.duringP99Ms, 1));

  progress(`idle: server CPU over ${IDLE_HOLD_MS / 1000} s with 1,000 idle event streams, then 500 idle long polls`);
  const idleStreams = await measureIdle(await db.create('bench_idle_streams'), 1_000, 0);
  const idlePolls = await measureIdle(await db.create('bench_idle_polls'), 0, 500);
  row(`idle: server CPU per ${IDLE_HOLD_MS / 1000} s held, 1,000 StreamRunEvents on a parked run (goal < 0.05 core)`, `${fmt(idleStreams.cores, 3)} cores`, '', '');
  row(`idle: server CPU per ${IDLE_HOLD_MS / 1000} s held, 500 PollTask long polls (goal < 0.05 core)`, `${fmt(idlePolls.cores, 3)} cores`, '', '');

  progress('command line: waymark --version, waymark workflows list against a local waymark dev, waymark dev start to serving');
  rows.push(...startupRows(await measureStartup(quick ? 3 : 5)));

  const ratios = [
    ['Waymark per-step p50 / floor commit p50 (goal <= 1.3, issue 22; 1.5 before)', fmt(wSeq.stepP50Ms / floor1.p50Ms)],
    ['Waymark steps/s / DBOS steps/s, sequential', fmt(wSeq.stepsPerSec / dSeq.stepsPerSec)],
    ['Waymark steps/s / DBOS steps/s, concurrency 16 (goal >= 3)', fmt(w16.stepsPerSec / d16.stepsPerSec)],
    ['Waymark gRPC steps/s / in-process steps/s, concurrency 16 (goal >= 0.8)', fmt(g16.stepsPerSec / w16.stepsPerSec)],
    ['Waymark gRPC steps/s / Restate steps/s, concurrency 16 (goal >= 1.5)', fmt(g16.stepsPerSec / s16.stepsPerSec)],
    ['Waymark gRPC steps/s / Restate steps/s, sequential', fmt(gSeq.stepsPerSec / sSeq.stepsPerSec)],
    ['Waymark gRPC steps/s / DBOS steps/s, concurrency 16', fmt(g16.stepsPerSec / d16.stepsPerSec)],
    ['remote tool call: added p50 ms over an in-process tool, sequential / concurrency 16', `${fmt(rSeq.remote.p50Ms - rSeq.local.p50Ms, 3)} / ${fmt(r16.remote.p50Ms - r16.local.p50Ms, 3)}`],
    ['MCP tool call: added p50 ms over an in-process tool, sequential / concurrency 16', `${fmt(mcpSeq.mcp.p50Ms - mcpSeq.local.p50Ms, 3)} / ${fmt(mcp16.mcp.p50Ms - mcp16.local.p50Ms, 3)}`],
    ['remote tool calls/s / in-process tool calls/s, sequential / concurrency 16', `${fmt(rSeq.remote.callsPerSec / rSeq.local.callsPerSec)} / ${fmt(r16.remote.callsPerSec / r16.local.callsPerSec)}`],
    ['Waymark steps/s at 16 / floor rows/s at 8 conns', fmt(w16.stepsPerSec / floor8.rowsPerSec)],
    ['Postgres commits per step (sequential; per run: 10 steps + start + end)', fmt(commitsPerStep)],
    ['WAL bytes per step (sequential)', fmt(walPerStep, 0)],
    ['{ intent: true } steps: per-step p50 / floor commit p50', fmt(iSeq.stepP50Ms / floor1.p50Ms)],
    ['{ intent: true } steps: commits per step, WAL bytes per step', `${fmt(intentCommitsPerStep)}, ${fmt(intentWalPerStep, 0)}`],
    ['10 parallel steps: commits per step (10 sequential steps: see above)', fmt(parallelCommitsPerStep)],
    ['group commit speed-up at concurrency 16 (on / off)', fmt(w16.stepsPerSec / n16.stepsPerSec)],
    ['one-write step speed-up, sequential / concurrency 16', `${fmt(wSeq.stepsPerSec / iSeq.stepsPerSec)} / ${fmt(w16.stepsPerSec / i16.stepsPerSec)}`],
    ['recovery p50 / lease TTL, SIGKILL short lease / SIGKILL default lease / SIGSTOP short lease',
      `${fmt(recShort.p50Ms / SHORT_LEASE.leaseTtlMs)} / ${fmt(recDefault.p50Ms / DEFAULT_LEASE.leaseTtlMs, 3)} / ${fmt(recStop.p50Ms / SHORT_LEASE.leaseTtlMs)}`],
  ];

  const header = `# Benchmark results\n\n${new Date().toISOString()} · ${os.cpus().length} cores · Node ${process.version} · ` +
    `${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PostgreSQL, default durability'} · ${REPS} repetitions (medians) · ${RUNS} runs of ${STEPS} steps\n`;
  const table = ['| measurement | throughput | p50 ms | p99 ms |', '| --- | --- | --- | --- |', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  const ratioTable = ['| ratio | value |', '| --- | --- |', ...ratios.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  const callTable = ['| call (in process) | p50 ms, 10 entries | p50 ms, 10,000 entries | ratio (goal <= 1.2) |', '| --- | --- | --- | --- |',
    ...callRows.map((r) => `| ${r.call} | ${fmt(r.smallP50Ms, 3)} | ${fmt(r.largeP50Ms, 3)} | ${fmt(r.ratio)} |`)].join('\n');
  const report = `${header}\n${table}\n\n${ratioTable}\n\n${callTable}\n`;
  process.stdout.write(`\n${report}`);
  const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', quick ? 'quick.md' : 'latest.md');
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, report);
  progress(`written to ${path.relative(process.cwd(), out)}`);
} finally {
  await db.close();
}
