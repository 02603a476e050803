// `npm run bench:profile -- SCENARIO…`: one bench row at a time under V8's CPU profiler, every process
// of it profiled (servers, clients, workers, the resume's child, through bench/cpu-profile-preload.mjs;
// in-process rows through the inspector), each role summarised by scripts/cpuprofile-summary.js. What docs/performance.md's
// "what limits it" paragraphs are read from. Profiles cost time: read shares here, never rates.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { measureEvents, measureGrpc, measureRemote, startServer, type GrpcServer } from './grpc.js';
import { openBenchDatabase } from './postgres.js';
import { longRun, measureReplay } from './replay.js';
import { measureWaymark, openEngine, STEPS } from './waymark-inprocess.js';

const SCENARIOS = {
  grpc: 'StartRun (wait) of 10-step runs at concurrency 16 over gRPC: the server and the raw gRPC client',
  signal: 'a signal on replica A to the entry seen by a stream on B (200 rounds): both servers and the client',
  decision: 'an approval decided on A to the entry seen on B (200 rounds): both servers and the client',
  remote: 'one remote tool call per run, in process and served by a worker, sequential and at 16: the server, client and worker',
  step: 'in process, 10-step runs sequentially (the per-step row)',
  inprocess: 'in process, 10-step runs at concurrency 16',
  resume: 'the resume of a run at the journal limit (99,992 steps) in a fresh process',
} as const;
type Scenario = keyof typeof SCENARIOS;

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
if (args.length === 0 || args.includes('--help') || args.some((a) => !(a in SCENARIOS))) {
  process.stderr.write(`usage: npm run bench:profile -- SCENARIO...\n\n${Object.entries(SCENARIOS).map(([k, v]) => `  ${k.padEnd(10)} ${v}`).join('\n')}\n\nProfiles go to ${path.join(os.tmpdir(), 'waymark-profiles')}/SCENARIO/, one file per process.\n`);
  process.exit(args.includes('--help') ? 0 : 2);
}

const progress = (m: string) => process.stderr.write(`profile: ${m}\n`);
const summarise = (title: string, files: string[]) => {
  if (files.length === 0) return progress(`${title}: no profile written`);
  const text = execFileSync(process.execPath, [path.join(root, 'scripts/cpuprofile-summary.js'), '--top', '12', ...files], { encoding: 'utf8' });
  process.stdout.write(`\n### ${title}\n\n${text}`);
};

/** An empty folder at `dir` (a previous pass's profiles removed). */
function freshDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

/** Profiles every Node child started while `fn` runs; returns the files by pid. */
async function childProfiles(dir: string, fn: () => Promise<void>): Promise<Map<number, string>> {
  freshDir(dir);
  const before = process.env.NODE_OPTIONS;
  process.env.NODE_OPTIONS = `${before ?? ''} --import ${pathToFileURL(path.join(root, 'bench/cpu-profile-preload.mjs')).href}`.trim();
  process.env.WAYMARK_PROFILE_DIR = dir;
  try {
    await fn();
  } finally {
    if (before === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = before;
    delete process.env.WAYMARK_PROFILE_DIR;
  }
  const byPid = new Map<number, string>();
  for (const f of readdirSync(dir)) {
    const pid = Number(f.split('.')[0]); // <pid>.cpuprofile
    if (f.endsWith('.cpuprofile') && Number.isInteger(pid)) byPid.set(pid, path.join(dir, f));
  }
  return byPid;
}

/** Profiles this process (the in-process rows) through the inspector. */
async function selfProfile(file: string, fn: () => Promise<void>): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
  try {
    await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(file, JSON.stringify(profile));
    session.disconnect();
  }
}

const db = await openBenchDatabase();
try {
  for (const scenario of args as Scenario[]) {
    const dir = path.join(os.tmpdir(), 'waymark-profiles', scenario);
    progress(`${scenario}: ${SCENARIOS[scenario]}`);
    const url = await db.create(`bench_profile_${scenario}`);
    if (scenario === 'step' || scenario === 'inprocess') {
      freshDir(dir);
      const bench = await openEngine(url);
      await measureWaymark(bench, 20, 1); // warm
      const file = path.join(dir, 'in-process.cpuprofile');
      let figure = {};
      await selfProfile(file, async () => {
        figure = await measureWaymark(bench, 200, scenario === 'step' ? 1 : 16);
      });
      await bench.close();
      progress(`${scenario}: ${JSON.stringify(figure)}`);
      summarise(`${scenario}: this process (engine, store, driver)`, [file]);
      continue;
    }
    if (scenario === 'resume') {
      const bench = await openEngine(url, [longRun]);
      let figure = {};
      const files = await childProfiles(dir, async () => {
        figure = await measureReplay(bench, url, 99_992, 100);
      });
      await bench.close();
      progress(`resume: ${JSON.stringify(figure)}`);
      summarise('resume: the resuming process', [...files.values()]);
      continue;
    }
    const servers: GrpcServer[] = [];
    let figure = {};
    const files = await childProfiles(dir, async () => {
      servers.push(await startServer(url, {}, true));
      if (scenario === 'signal' || scenario === 'decision') servers.push(await startServer(url, {}, true));
      // Start-up is not the row: each server's profile restarts after a warm-up (cpu-profile-preload.mjs).
      const restart = () => servers.forEach((s) => process.kill(s.pid, 'SIGUSR2'));
      try {
        if (scenario === 'grpc') {
          await measureGrpc(servers[0]!, 40, 16, STEPS); // warm
          restart();
          figure = await measureGrpc(servers[0]!, 400, 16, STEPS);
        } else if (scenario === 'remote') {
          await measureRemote(servers[0]!, 20, 1); // warm
          restart();
          figure = { seq: await measureRemote(servers[0]!, 200, 1), c16: await measureRemote(servers[0]!, 200, 16) };
        } else {
          const mode = scenario === 'decision' ? 'approval' : 'signal';
          await measureEvents(servers[0]!, servers[1]!, 10, mode); // warm
          restart();
          figure = await measureEvents(servers[0]!, servers[1]!, 200, mode);
        }
      } finally {
        for (const s of servers) await s.stop();
      }
    });
    progress(`${scenario}: ${JSON.stringify(figure)}`);
    const serverPids = new Set(servers.map((s) => s.pid));
    servers.forEach((s, i) => summarise(`${scenario}: server ${servers.length > 1 ? 'AB'[i] : ''}`.trim(), files.has(s.pid) ? [files.get(s.pid)!] : []));
    summarise(`${scenario}: clients and workers`, [...files.entries()].filter(([pid]) => !serverPids.has(pid)).map(([, f]) => f));
  }
} finally {
  await db.close();
}
