import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * A scripted OpenAI-compatible endpoint on loopback, so agent tests run the real provider code
 * (@ai-sdk/openai-compatible over HTTP) with no network. POST /v1/chat/completions answers from a
 * script by step (1 + the assistant messages in the request: which model call of the agent loop
 * it is), with tool_calls and usage. POST /v1/effects/<name> records a tool's side effect by its
 * Idempotency-Key, so a test counts deliveries outside the engine. Every request is kept, and a
 * step can be held open, so a test kills a worker while a call is in flight, waiting on events.
 * A request with `stream: true` (ctx.agent streams) is answered as Server-Sent Events: the text one
 * word a chunk, each tool call's arguments in two chunks, then the finish reason and the usage.
 */

export interface FakeToolCall {
  name: string;
  arguments: unknown;
}

export interface FakeReply {
  /** Answer with this HTTP error instead (a provider's 429 or 5xx), with `headers` (e.g. retry-after). */
  error?: { status: number; headers?: Record<string, string> };
  text?: string;
  toolCalls?: FakeToolCall[];
  usage?: { prompt: number; completion: number };
}

export interface ChatRequest {
  /** 1-based arrival order among chat requests. */
  n: number;
  step: number;
  body: { model: string; messages: { role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string }[]; tools?: unknown[]; [k: string]: unknown };
  idempotencyKey: string | null;
}

export interface EffectDelivery {
  name: string;
  idempotencyKey: string | null;
  body: unknown;
}

export class FakeOpenAIServer {
  readonly chats: ChatRequest[] = [];
  readonly effects: EffectDelivery[] = [];
  private readonly events = new EventEmitter();
  private readonly held = new Map<number, { reached: Promise<ChatRequest>; arrived: (r: ChatRequest) => void; release: () => void; gate: Promise<void> }>();

  private constructor(private readonly server: Server, readonly baseURL: string, private readonly script: (req: ChatRequest) => FakeReply) {}

  static async start(script: (req: ChatRequest) => FakeReply): Promise<FakeOpenAIServer> {
    const ready: { self?: FakeOpenAIServer } = {};
    const server = createServer((req, res) => void ready.self!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    ready.self = new FakeOpenAIServer(server, `http://127.0.0.1:${port}/v1`, script);
    return ready.self;
  }

  /** Chat requests per step: `{ 1: 1, 2: 1, 3: 2 }`. */
  countByStep(): Record<number, number> {
    const counts: Record<number, number> = {};
    for (const c of this.chats) counts[c.step] = (counts[c.step] ?? 0) + 1;
    return counts;
  }

  /**
   * Holds the responses to `step` until released: `reached` resolves when such a request arrives.
   * A held request whose client died (a killed worker) is dropped on release.
   */
  hold(step: number): { reached: Promise<ChatRequest>; release: () => void } {
    let arrived!: (r: ChatRequest) => void;
    let release!: () => void;
    const reached = new Promise<ChatRequest>((r) => (arrived = r));
    const gate = new Promise<void>((r) => (release = r));
    this.held.set(step, { reached, arrived, release, gate });
    return { reached, release: () => { this.held.delete(step); release(); } };
  }

  /** Resolves with the first chat request (already seen or future) that matches. */
  waitForChat(match: (r: ChatRequest) => boolean): Promise<ChatRequest> {
    const seen = this.chats.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const on = (r: ChatRequest) => {
        if (!match(r)) return;
        this.events.off('chat', on);
        resolve(r);
      };
      this.events.on('chat', on);
    });
  }

  async close(): Promise<void> {
    for (const h of this.held.values()) h.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
    const url = req.url ?? '';
    if (req.method === 'POST' && url.startsWith('/v1/effects/')) {
      const delivery = { name: url.slice('/v1/effects/'.length), idempotencyKey: key, body: text ? JSON.parse(text) : null };
      this.effects.push(delivery);
      return json(res, 200, { ok: true, name: delivery.name, deliveries: this.effects.filter((e) => e.name === delivery.name).length });
    }
    if (req.method !== 'POST' || url !== '/v1/chat/completions') return json(res, 404, { error: { message: `no route ${req.method} ${url}` } });
    const body = JSON.parse(text) as ChatRequest['body'];
    const step = 1 + body.messages.filter((m) => m.role === 'assistant').length;
    const chat: ChatRequest = { n: this.chats.length + 1, step, body, idempotencyKey: key };
    this.chats.push(chat);
    this.events.emit('chat', chat);
    const hold = this.held.get(step);
    if (hold) {
      hold.arrived(chat);
      await hold.gate;
      if (res.destroyed || req.socket.destroyed) return;
    }
    const reply = this.script(chat);
    if (reply.error) {
      res.writeHead(reply.error.status, { 'content-type': 'application/json', ...reply.error.headers });
      res.end(JSON.stringify({ error: { message: `scripted ${reply.error.status}`, type: 'server_error' } }));
      return;
    }
    const calls = (reply.toolCalls ?? []).map((c, i) => ({
      id: `call_${step}_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
    const usage = reply.usage ?? { prompt: 100 * step, completion: 20 };
    if (body.stream === true) return sse(res, { id: `chatcmpl-${chat.n}`, model: body.model, text: reply.text ?? null, calls, usage });
    return json(res, 200, {
      id: `chatcmpl-${chat.n}`, object: 'chat.completion', created: 1_900_000_000, model: body.model,
      choices: [{
        index: 0,
        message: { role: 'assistant', content: reply.text ?? null, ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: calls.length ? 'tool_calls' : 'stop',
      }],
      usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
    });
  }
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** A chat completion as Server-Sent Events (what a streaming request gets): the text a word a chunk, each call's arguments in two, the finish reason, the usage. */
export function sse(
  res: ServerResponse,
  r: { id: string; model: string; text: string | null; calls: { id: string; function: { name: string; arguments: string } }[]; usage: { prompt: number; completion: number } },
): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(`data: ${JSON.stringify({ id: r.id, object: 'chat.completion.chunk', created: 1_900_000_000, model: r.model, choices, ...extra })}\n\n`);
  const delta = (d: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  delta({ role: 'assistant', content: '' });
  for (const word of r.text?.match(/\S+\s*|\s+/g) ?? []) delta({ content: word });
  r.calls.forEach((c, i) => {
    const half = Math.ceil(c.function.arguments.length / 2);
    delta({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments.slice(0, half) } }] });
    delta({ tool_calls: [{ index: i, function: { arguments: c.function.arguments.slice(half) } }] });
  });
  delta({}, r.calls.length ? 'tool_calls' : 'stop');
  chunk([], { usage: { prompt_tokens: r.usage.prompt, completion_tokens: r.usage.completion, total_tokens: r.usage.prompt + r.usage.completion } });
  res.end('data: [DONE]\n\n');
}
