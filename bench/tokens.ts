// Token streams (issue 34): how long after a streaming provider sends a token the client holds it.
// A provider speaking OpenAI-compatible SSE runs in this process and notes when it writes each word
// (every word is unique); a `waymark server` calls it from `ctx.agent`; the TypeScript client reads
// `tokens(runId)` in this process too, so both times are on one clock. Per run: the first token's
// latency, and every token's. Alone: `node --import tsx bench/tokens.ts [runs]`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { createWaymarkClient } from '../clients/ts/src/index.js';
import { startServer } from './grpc.js';
import { runAlone } from './postgres.js';
import { percentile } from './stats.js';

const WORDS = 20;
const PACE_MS = 20;

/** The provider: the last user message's words as SSE chunks, one every PACE_MS; `sentAt` maps each word to when it was written. */
function startProvider(sentAt: Map<string, number>): Promise<{ server: Server; url: string }> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string; messages: { role: string; content: unknown }[] };
    const user = [...body.messages].reverse().find((m) => m.role === 'user');
    const text = typeof user?.content === 'string' ? user.content : (user?.content as { text?: string }[] ?? []).map((p) => p.text ?? '').join('');
    const words = text.match(/\S+\s*/g) ?? [];
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (choices: unknown[], extra: object = {}) =>
      res.write(`data: ${JSON.stringify({ id: 'bench', object: 'chat.completion.chunk', created: 1_900_000_000, model: body.model, choices, ...extra })}\n\n`);
    send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    for (const word of words) {
      await delay(PACE_MS);
      sentAt.set(word.trim(), performance.now());
      send([{ index: 0, delta: { content: word }, finish_reason: null }]);
    }
    send([{ index: 0, delta: {}, finish_reason: 'stop' }]);
    send([], { usage: { prompt_tokens: 10, completion_tokens: words.length, total_tokens: 10 + words.length } });
    res.end('data: [DONE]\n\n');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` })));
}

export interface TokenFigures { runs: number; firstP50Ms: number; firstP99Ms: number; allP50Ms: number; allP99Ms: number }

/** `runs` runs one after another, each one model call of WORDS words streamed from the provider to the client. */
export async function measureTokens(url: string, runs: number): Promise<TokenFigures> {
  const sentAt = new Map<string, number>();
  const provider = await startProvider(sentAt);
  const server = await startServer(url, { WAYMARK_MODELS: JSON.stringify({ sse: { type: 'openai-compatible', baseURL: provider.url } }) }, true);
  const client = createWaymarkClient({ address: server.address });
  const first: number[] = [];
  const all: number[] = [];
  try {
    for (let r = 0; r < runs; r++) {
      const prompt = Array.from({ length: WORDS }, (_, i) => `r${r}w${i}`).join(' ');
      const runId = (await client.startRun('bench-tokens', { prompt, model: 'sse:bench' })).run.id;
      let n = 0;
      for await (const t of client.tokens(runId, { followSuspended: true })) {
        if (t.type === 'text') {
          const sent = sentAt.get(t.text.trim());
          if (sent !== undefined) {
            const ms = performance.now() - sent;
            if (n++ === 0) first.push(ms);
            all.push(ms);
          }
        }
        if (t.type === 'result') break;
      }
    }
    return { runs, firstP50Ms: percentile(first, 50), firstP99Ms: percentile(first, 99), allP50Ms: percentile(all, 50), allP99Ms: percentile(all, 99) };
  } finally {
    client.close();
    await server.stop();
    provider.server.close();
  }
}

await runAlone(import.meta.url, async (db) => {
  const f = await measureTokens(await db.create('bench_tokens'), Number(process.argv[2] ?? 30));
  console.log(`tokens: ${f.runs} runs of ${WORDS} words: first token p50 ${f.firstP50Ms.toFixed(1)} ms, p99 ${f.firstP99Ms.toFixed(1)} ms; every token p50 ${f.allP50Ms.toFixed(1)} ms, p99 ${f.allP99Ms.toFixed(1)} ms`);
});
