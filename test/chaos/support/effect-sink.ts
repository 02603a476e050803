import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sse } from '../../support/fake-openai-server.js';

/*
 * The independent oracle of reliability.md §4.0: an HTTP server in the test process that the
 * workflows' tools post to. It records every delivery (idempotency key, logical effect id, worker
 * pid) and applies an effect once per key, as a real idempotent API would. It trusts nothing the
 * system under test says about itself: the journal is not consulted for these figures. It is also
 * an OpenAI-compatible model endpoint (POST /v1/chat/completions), so a model call is an effect it
 * counts too: the logical id is the prompt, the key the Idempotency-Key header the engine sends.
 */

export interface Delivery {
  key: string | null;
  /** The logical effect (e.g. `<tag>:charge`), the same across every redispatch of one effect. */
  effect: string;
  pid: number;
  at: number;
}

export interface SinkFigures {
  deliveries: number;
  /** Distinct keys applied (a dedup sink applies each key once). */
  applied: number;
  /** Logical effects applied more than once (they arrived under different keys). */
  duplicates: number;
  /** Expected logical effects never applied. */
  lost: number;
  /** Deliveries beyond the first of their key: redispatches in the documented window. */
  redundant: number;
  /** Deliveries without an idempotency key. */
  unkeyed: number;
}

export class EffectSink {
  readonly deliveries: Delivery[] = [];
  readonly events = new EventEmitter<{ delivery: [Delivery] }>();
  private readonly appliedKeys = new Set<string>();
  private readonly appliedByEffect = new Map<string, number>();
  private holding: ((d: Delivery) => boolean) | null = null;
  /** Effects whose next deliveries are answered with an error status (and not applied). */
  private readonly failing = new Map<string, { left: number; status: number }>();
  /** Answer each delivery after this long: a downstream that takes time widens the in-flight window. */
  delayMs = 0;
  private readonly held: ServerResponse[] = [];

  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<EffectSink> {
    let sink: EffectSink | null = null;
    const server = createServer((req, res) => void sink!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    sink = new EffectSink(server, `http://127.0.0.1:${port}`);
    return sink;
  }

  /** Holds the responses to matching deliveries (the worker waits mid-effect) until releaseHeld(). */
  hold(match: ((d: Delivery) => boolean) | null): void {
    this.holding = match;
  }

  /** Answers the next `times` deliveries of `effect` with HTTP `status` without applying them (a downstream that is down). */
  failFirst(effect: string, times: number, status: number): void {
    this.failing.set(effect, { left: times, status });
  }

  releaseHeld(): void {
    for (const res of this.held.splice(0)) res.end(JSON.stringify({ applied: false, held: true }));
  }

  /** Resolves with the first delivery (past or future) that matches. */
  waitFor(match: (d: Delivery) => boolean, timeoutMs = 120_000): Promise<Delivery> {
    const seen = this.deliveries.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.events.off('delivery', on);
        reject(new Error('no matching delivery at the sink in time'));
      }, timeoutMs);
      const on = (d: Delivery) => {
        if (!match(d)) return;
        clearTimeout(timer);
        this.events.off('delivery', on);
        resolve(d);
      };
      this.events.on('delivery', on);
    });
  }

  /** The figures over the deliveries whose effect starts with `prefix`, against `expected` effects. */
  figures(expected: string[], prefix = ''): SinkFigures {
    const mine = this.deliveries.filter((d) => d.effect.startsWith(prefix));
    const keys = new Set(mine.map((d) => d.key).filter((k): k is string => k !== null));
    let duplicates = 0;
    const keysByEffect = new Map<string, Set<string>>();
    for (const d of mine) {
      if (d.key === null) continue;
      const set = keysByEffect.get(d.effect) ?? new Set<string>();
      set.add(d.key);
      keysByEffect.set(d.effect, set);
    }
    for (const set of keysByEffect.values()) duplicates += Math.max(0, set.size - 1);
    return {
      deliveries: mine.length,
      applied: keys.size,
      duplicates,
      lost: expected.filter((e) => !keysByEffect.has(e)).length,
      redundant: mine.filter((d) => d.key !== null).length - keys.size,
      unkeyed: mine.filter((d) => d.key === null).length,
    };
  }

  async close(): Promise<void> {
    this.releaseHeld();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += chunk;
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
    const chat = req.url === '/v1/chat/completions';
    const effect = chat ? lastUserText(body) : (JSON.parse(body || '{}') as { effect?: string }).effect;
    const delivery: Delivery = { key, effect: effect ?? '?', pid: Number(req.headers['x-worker-pid'] ?? 0), at: Date.now() };
    this.deliveries.push(delivery);
    const failing = this.failing.get(delivery.effect);
    if (failing && failing.left > 0) {
      failing.left--;
      this.events.emit('delivery', delivery);
      res.writeHead(failing.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ applied: false, status: failing.status }));
      return;
    }
    const applied = key !== null && !this.appliedKeys.has(key);
    if (key !== null) this.appliedKeys.add(key);
    if (applied) this.appliedByEffect.set(delivery.effect, (this.appliedByEffect.get(delivery.effect) ?? 0) + 1);
    res.setHeader('content-type', 'application/json');
    const hold = this.holding?.(delivery) ?? false;
    this.events.emit('delivery', delivery);
    if (chat && (JSON.parse(body || '{}') as { stream?: boolean }).stream === true) {
      // A streaming model call (ctx.agent streams: docs/agents.md "Token streams"): the same answer as SSE.
      sse(res, { id: `chatcmpl-${delivery.effect}`, model: 'chaos', text: `answered ${delivery.effect}`, calls: [], usage: { prompt: 10, completion: 5 } });
    }
    else if (chat) res.end(JSON.stringify(chatCompletion(delivery.effect)));
    else if (hold) this.held.push(res);
    else if (this.delayMs > 0) setTimeout(() => res.end(JSON.stringify({ applied })), this.delayMs);
    else res.end(JSON.stringify({ applied }));
  }
}

/** The text of the last user message of an OpenAI chat request (a string or text parts). */
function lastUserText(body: string): string {
  const { messages = [] } = JSON.parse(body || '{}') as { messages?: { role: string; content?: unknown }[] };
  const content = messages.filter((m) => m.role === 'user').at(-1)?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: { text?: string }) => p.text ?? '').join('');
  return '?';
}

function chatCompletion(prompt: string): unknown {
  return {
    id: `chatcmpl-${prompt}`, object: 'chat.completion', created: 1_900_000_000, model: 'chaos',
    choices: [{ index: 0, message: { role: 'assistant', content: `answered ${prompt}` }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

/**
 * The client side, for the fixtures' tools (in-process and on a remote worker alike): posts one
 * effect to the sink at `sink` with the call's idempotency key and this process's pid.
 */
export async function postEffect(sink: string, effect: string, idempotencyKey: string, signal: AbortSignal): Promise<{ applied: boolean }> {
  const res = await fetch(`${sink}/effect`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey, 'x-worker-pid': String(process.pid) },
    body: JSON.stringify({ effect }),
    signal,
  });
  if (!res.ok) throw new Error(`sink answered ${res.status}`);
  return (await res.json()) as { applied: boolean };
}
