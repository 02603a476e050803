import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWaymarkClient, type AttemptStarted, type TokenEvent, type TokenText } from '../../clients/ts/src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TcpBalancer } from '../support/tcp-balancer.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { chaosEnv, Driver, kill, startServer, startSweeper } from './support/cluster.js';

/*
 * Token streams through a crash (docs/agents.md "Token streams"): clients read a model call's text
 * through a layer-4 balancer; the replica making the call is SIGKILLed mid-call and another
 * started. Each client reconnects by itself (to the new replica), the call is redispatched as a
 * newer attempt, and each gets every delta of that final attempt once and in order, told apart
 * from the aborted attempt's by the attempt mark, and the final text equals the journaled one. The
 * readers of one run are the TypeScript client in this process, the Go client
 * (clients/go/examples/tokens) and the Python client (clients/python/examples/tokens.py) as
 * processes of their own, all on the same run and the same SIGKILL. Once with the offline
 * `scripted:drip` model, once with a streaming OpenAI-compatible provider in its own process
 * (test/chaos/fixtures/sse-provider.mjs) through the AI SDK's openai-compatible provider.
 *
 * The SIGKILL hits the replica holding the run's lease (the one making the call), once every
 * reader has read deltas of the first attempt: observed, not timed. (It used to hit the oldest
 * live replica, which from the second case on could be one the run was not on: then the call
 * finished in its first attempt and the case failed with one attempt.)
 */

const PROMPT = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
/** Text deltas of the first attempt every reader reads before the SIGKILL. */
const BEFORE_KILL = 5;

const root = path.resolve('.');
const python = path.join(root, '.venv', 'bin', 'python');
const goAvailable = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
/** This checkout's Python client, whichever checkout the virtualenv's editable install points at. */
const pythonPath = [path.join(root, 'clients/python/src'), path.join(root, 'clients/python/gen')].join(path.delimiter);
const pythonAvailable = existsSync(python) && spawnSync(python, ['-c', 'import grpc, google.protobuf'], { stdio: 'ignore' }).status === 0;

async function startProvider(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.resolve('test/chaos/fixtures/sse-provider.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const { port } = JSON.parse(line.toString('utf8')) as { port: number };
  return { child, url: `http://127.0.0.1:${port}/v1` };
}

/** One reader of a run's tokens: what it has read so far, and when it ended. */
class Reader {
  readonly seen: TokenEvent[] = [];
  private wake: () => void = () => {};
  done!: Promise<void>;
  log = '';

  constructor(readonly name: string) {}

  push(t: TokenEvent): void {
    this.seen.push(t);
    this.wake();
  }

  /** Text deltas of the first attempt read so far. */
  firstAttemptTexts(): number {
    const first = this.seen.find((s): s is AttemptStarted => s.type === 'attempt');
    return this.seen.filter((s) => s.type === 'text' && first !== undefined && s.attempt === first.attempt).length;
  }

  /** Resolves once `check` holds, re-checked on every token read; rejects if the reader ends first. */
  async until(check: () => boolean): Promise<void> {
    let ended = false;
    const end = () => {
      ended = true;
      this.wake();
    };
    this.done.then(end, end);
    while (!check()) {
      if (ended) throw new Error(`${this.name} ended after ${JSON.stringify(this.seen, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))}\n${this.log}`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

/** A token event as the Go and Python examples print it (JSON numbers) in the TypeScript client's shape. */
function parseToken(line: string): TokenEvent {
  const t = JSON.parse(line) as { type: string; callSeq: number; attempt: number | null; supersedes?: number | null; index?: number; offset?: number; text: string };
  const big = (n: number | null | undefined) => (n === null || n === undefined ? null : BigInt(n));
  if (t.type === 'attempt') return { type: 'attempt', callSeq: BigInt(t.callSeq), attempt: BigInt(t.attempt!), supersedes: big(t.supersedes) };
  if (t.type === 'result') return { type: 'result', callSeq: BigInt(t.callSeq), attempt: big(t.attempt), text: t.text };
  return { type: t.type as 'text' | 'tool-input', callSeq: BigInt(t.callSeq), attempt: BigInt(t.attempt!), index: t.index!, text: t.text, offset: BigInt(t.offset!) };
}

/** A reader in a process of its own, printing one token a line until the call's result. */
function processReader(name: string, command: string, args: string[], env: Record<string, string> = {}): Reader {
  const reader = new Reader(name);
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (reader.log += d));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const t = parseToken(line);
    reader.push(t);
    if (t.type === 'result') child.kill();
  });
  reader.done = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
  return reader;
}

/** The properties every reader's tokens must have. */
function check(reader: Reader): void {
  const seen = reader.seen;
  const attempts = seen.filter((s): s is AttemptStarted => s.type === 'attempt');
  expect(attempts.length, `${reader.name}: attempts seen; its log:\n${reader.log}`).toBeGreaterThanOrEqual(2);
  const final = attempts.at(-1)!;
  expect(final.supersedes, `${reader.name}: the final attempt supersedes the one before`).toBe(attempts.at(-2)!.attempt);
  expect(final.attempt).toBeGreaterThan(attempts[0]!.attempt);
  const texts = seen.filter((s): s is TokenText => s.type === 'text');
  const aborted = texts.filter((s) => s.attempt !== final.attempt);
  expect(aborted.length, `${reader.name}: deltas of the aborted attempt`).toBeGreaterThanOrEqual(BEFORE_KILL);
  const finalTexts = texts.filter((s) => s.attempt === final.attempt);
  expect(finalTexts.map((s) => s.index), `${reader.name}: the final attempt's deltas, once and in order`).toEqual(finalTexts.map((_, i) => i + 1));
  expect(new Set(texts.map((s) => s.offset)).size).toBe(texts.length);
  expect(seen.at(-1), reader.name).toMatchObject({ type: 'result', attempt: final.attempt, text: PROMPT });
  expect(finalTexts.map((s) => s.text).join(''), reader.name).toBe(PROMPT);
}

describe('clients reading token deltas through a SIGKILL of the replica mid-call', () => {
  let db: TestDatabase | undefined;
  let driver: Driver | undefined;
  let sweeper: WaymarkProcess | undefined;
  let provider: { child: ChildProcess; url: string } | undefined;
  let env: Record<string, string> = {};
  let tmp: string | undefined;
  let goReader: string | undefined;
  const live: { p: WaymarkProcess; address: string }[] = [];
  const balancer = new TcpBalancer(() => live.map((r) => r.address));

  beforeAll(async () => {
    db = await createTestDatabase('waymark_chaos_tokens');
    provider = await startProvider();
    env = chaosEnv(db.url, { WAYMARK_MODELS: JSON.stringify({ sse: { type: 'openai-compatible', baseURL: provider.url } }) });
    sweeper = await startSweeper(env);
    driver = await Driver.open(db.url);
    await balancer.start();
    tmp = mkdtempSync(path.join(os.tmpdir(), 'waymark-tokens-'));
    if (goAvailable) {
      goReader = path.join(tmp, 'tokens');
      const built = spawnSync('go', ['build', '-o', goReader, './examples/tokens'], { cwd: path.resolve('clients', 'go'), encoding: 'utf8' });
      if (built.status !== 0) throw new Error(`go build of the tokens example failed:\n${built.stderr}`);
    } else {
      console.warn('token-streams.test.ts: no Go toolchain, so the Go reader is left out (scripts/setup-clients.sh)');
    }
    if (!pythonAvailable) console.warn('token-streams.test.ts: no .venv with grpcio, so the Python reader is left out (scripts/setup-clients.sh)');
  }, 300_000);
  afterAll(async () => {
    await Promise.all(live.map((r) => r.p.stop()));
    await sweeper?.stop();
    await driver?.close();
    provider?.child.kill();
    await balancer.stop();
    await db?.drop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  async function replica(): Promise<void> {
    const p = await startServer(env);
    live.push({ p, address: await p.listening() });
  }

  /** The live replica holding the run's lease: the one executing it. */
  async function holderOf(runId: string): Promise<{ p: WaymarkProcess; address: string }> {
    const { rows } = await driver!.pool.query<{ status: string; lease_holder: string | null }>('SELECT status, lease_holder FROM runs WHERE id = $1', [runId]);
    const holder = rows[0]?.lease_holder ?? '';
    const victim = live.find((r) => holder.endsWith(`:${r.p.child.pid}`));
    if (!victim) throw new Error(`run ${runId} is ${rows[0]?.status} with lease holder "${holder}", none of the live replicas`);
    return victim;
  }

  for (const model of ['scripted:drip', 'sse:drip']) {
    const names = ['TypeScript', ...(goAvailable ? ['Go'] : []), ...(pythonAvailable ? ['Python'] : [])];
    it(`${model}: ${names.join(', ')} get every delta of the final attempt once, in order; the aborted attempt told apart`, { timeout: 300_000 }, async () => {
      if (live.length === 0) await replica();
      const client = createWaymarkClient({ address: balancer.address });
      const runId = (await client.startRun('chaos-tokens', { prompt: PROMPT, model })).run.id;

      const ts = new Reader('TypeScript');
      ts.done = (async () => {
        for await (const t of client.tokens(runId, { followSuspended: true })) {
          ts.push(t);
          if (t.type === 'result') break;
        }
      })();
      const readers = [ts];
      if (goReader) readers.push(processReader('Go', goReader, [balancer.address, runId]));
      if (pythonAvailable) readers.push(processReader('Python', python, [path.join(root, 'clients/python/examples/tokens.py'), balancer.address, runId], { PYTHONPATH: pythonPath }));

      for (const r of readers) await r.until(() => r.firstAttemptTexts() >= BEFORE_KILL);
      const victim = await holderOf(runId);
      live.splice(live.indexOf(victim), 1);
      await kill(victim.p);
      if (live.length === 0) await replica();

      await Promise.all(readers.map((r) => r.done));
      client.close();
      for (const r of readers) check(r);
      await driver!.waitEnded([runId], 120_000);
      expect((await driver!.store.runGet({ runId, namespace: 'default' })).status).toBe('SUCCEEDED');
    });
  }
});
