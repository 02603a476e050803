import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWaymarkClient, type AttemptStarted, type TokenEvent, type TokenText } from '../../clients/ts/src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TcpBalancer } from '../support/tcp-balancer.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { chaosEnv, Driver, kill, startServer, startSweeper } from './support/cluster.js';

/*
 * Token streams through a crash (docs/agents.md "Token streams"): a TypeScript client reads a model
 * call's text through a layer-4 balancer; the replica making the call is SIGKILLed mid-call and
 * another started. The client reconnects by itself (to the new replica), the call is redispatched
 * as a newer attempt, and the client gets every delta of that final attempt once and in order,
 * told apart from the aborted attempt's by the attempt mark, and the final text equals the
 * journaled one. Once with the offline `scripted:drip` model, once with a streaming
 * OpenAI-compatible provider in its own process (test/chaos/fixtures/sse-provider.mjs) through
 * the AI SDK's openai-compatible provider.
 */

const PROMPT = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');

async function startProvider(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.resolve('test/chaos/fixtures/sse-provider.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const { port } = JSON.parse(line.toString('utf8')) as { port: number };
  return { child, url: `http://127.0.0.1:${port}/v1` };
}

describe('a client reading token deltas through a SIGKILL of the replica mid-call', () => {
  let db: TestDatabase | undefined;
  let driver: Driver | undefined;
  let sweeper: WaymarkProcess | undefined;
  let provider: { child: ChildProcess; url: string } | undefined;
  let env: Record<string, string> = {};
  const live: { p: WaymarkProcess; address: string }[] = [];
  const balancer = new TcpBalancer(() => live.map((r) => r.address));

  beforeAll(async () => {
    db = await createTestDatabase('waymark_chaos_tokens');
    provider = await startProvider();
    env = chaosEnv(db.url, { WAYMARK_MODELS: JSON.stringify({ sse: { type: 'openai-compatible', baseURL: provider.url } }) });
    sweeper = await startSweeper(env);
    driver = await Driver.open(db.url);
    await balancer.start();
  }, 120_000);
  afterAll(async () => {
    await Promise.all(live.map((r) => r.p.stop()));
    await sweeper?.stop();
    await driver?.close();
    provider?.child.kill();
    await balancer.stop();
    await db?.drop();
  });

  async function replica(): Promise<void> {
    const p = await startServer(env);
    live.push({ p, address: await p.listening() });
  }

  for (const model of ['scripted:drip', 'sse:drip']) {
    it(`${model}: every delta of the final attempt once, in order; the aborted attempt told apart`, { timeout: 300_000 }, async () => {
      await replica();
      const client = createWaymarkClient({ address: balancer.address });
      const runId = (await client.startRun('chaos-tokens', { prompt: PROMPT, model })).run.id;
      const seen: TokenEvent[] = [];
      let killed = false;
      for await (const t of client.tokens(runId, { followSuspended: true })) {
        seen.push(t);
        if (!killed && seen.filter((s) => s.type === 'text').length >= 5) {
          killed = true;
          const victim = live.shift()!;
          await kill(victim.p);
          await replica();
        }
        if (t.type === 'result') break;
      }
      client.close();
      const attempts = seen.filter((s): s is AttemptStarted => s.type === 'attempt');
      expect(attempts.length).toBeGreaterThanOrEqual(2);
      const final = attempts.at(-1)!;
      expect(final.supersedes).toBe(attempts.at(-2)!.attempt);
      expect(final.attempt).toBeGreaterThan(attempts[0]!.attempt);
      const texts = seen.filter((s): s is TokenText => s.type === 'text');
      const aborted = texts.filter((s) => s.attempt !== final.attempt);
      expect(aborted.length).toBeGreaterThanOrEqual(5);
      const finalTexts = texts.filter((s) => s.attempt === final.attempt);
      expect(finalTexts.map((s) => s.index)).toEqual(finalTexts.map((_, i) => i + 1));
      expect(new Set(texts.map((s) => s.offset)).size).toBe(texts.length);
      const result = seen.at(-1)!;
      expect(result).toMatchObject({ type: 'result', attempt: final.attempt, text: PROMPT });
      expect(finalTexts.map((s) => s.text).join('')).toBe(PROMPT);
      await driver!.waitEnded([runId], 120_000);
      expect((await driver!.store.runGet({ runId, namespace: 'default' })).status).toBe('SUCCEEDED');
    });
  }
});
