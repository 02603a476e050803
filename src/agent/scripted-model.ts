import type { Json } from '../journal/run.js';
import type {
  LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3GenerateResult, LanguageModelV3StreamPart, LanguageModelV3StreamResult,
} from './language-model.js';
import { streamingModel } from './streaming-model.js';

/*
 * The built-in scripted model (`scripted:<script>`): a LanguageModelV3 that answers from a script,
 * offline and deterministically, so the examples, `waymark dev` without an API key, and tests run
 * the real agent loop through the AI SDK with no provider. Its reply depends only on the request.
 *
 * - `scripted:auto` calls each offered tool once, one per step, in the order the tools are listed,
 *   with arguments made up from the tool's JSON Schema (a `query`-like string gets the question;
 *   a `body`-like string gets the findings so far), then answers with a summary of what the tools
 *   returned (denials included).
 * - `scripted:echo` answers with the last user message.
 * - `scripted:drip` answers like echo, streamed one word every DRIP_MS (to watch token streams
 *   arrive, and to stop a replica mid-call in tests: test/chaos/token-streams.test.ts).
 * Streamed (doStream, as ctx.agent calls it), a reply's text comes one word a delta and a tool
 * call's arguments in two halves; doGenerate answers the same reply whole.
 * - scriptedModel({ id, turns }) replies with turns[n] at the n-th model call of a conversation
 *   (counted by the assistant messages in the request); register it under a name with
 *   createAgentRuntime({ models }).
 * Usage is counted at 4 characters a token, so cost and budgets can be tried offline.
 */

export interface ScriptedTurn {
  text?: string;
  toolCalls?: readonly { toolName: string; input: Json }[];
  /** Default: the request and the reply at 4 characters a token. */
  usage?: { inputTokens: number; outputTokens: number };
}

export const BUILTIN_SCRIPTS = ['auto', 'echo', 'drip'] as const;
/** The pause between the words of `scripted:drip`. */
export const DRIP_MS = 100;
export type BuiltinScript = (typeof BUILTIN_SCRIPTS)[number];

type Prompt = LanguageModelV3CallOptions['prompt'];
type Message = Prompt[number];

export function scriptedModel(script: BuiltinScript | { id: string; turns: readonly ScriptedTurn[] }): LanguageModelV3 {
  if (typeof script === 'string') return streamingModel(new ScriptedModel(script, script === 'auto' ? autoTurn : script === 'drip' ? dripTurn : echoTurn, script === 'drip' ? DRIP_MS : 0));
  const turns = [...script.turns];
  return streamingModel(new ScriptedModel(script.id, (options) => turns[stepOf(options.prompt) - 1] ?? { text: '' }, 0));
}

class ScriptedModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly provider = 'waymark.scripted';
  readonly supportedUrls = {};

  constructor(readonly modelId: string, private readonly reply: (options: LanguageModelV3CallOptions) => ScriptedTurn, private readonly paceMs: number) {}

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const turn = this.reply(options);
    const step = stepOf(options.prompt);
    const content: LanguageModelV3Content[] = [];
    if (turn.text) content.push({ type: 'text', text: turn.text });
    (turn.toolCalls ?? []).forEach((call, i) => {
      content.push({ type: 'tool-call', toolCallId: `scripted-${step}-${i}`, toolName: call.toolName, input: JSON.stringify(call.input) });
    });
    const inputTokens = turn.usage?.inputTokens ?? Math.ceil(JSON.stringify(options.prompt).length / 4);
    const outputTokens = turn.usage?.outputTokens ?? Math.max(1, Math.ceil(((turn.text ?? '').length + JSON.stringify(turn.toolCalls ?? []).length) / 4));
    return {
      content,
      finishReason: { unified: turn.toolCalls?.length ? 'tool-calls' : 'stop', raw: undefined },
      usage: {
        inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
      },
      response: { modelId: this.modelId },
      warnings: [],
    };
  }

  /** The reply of doGenerate as stream parts: words of the text, then each tool call's arguments in two deltas. */
  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const whole = await this.doGenerate(options);
    const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }, { type: 'response-metadata', modelId: this.modelId }];
    for (const c of whole.content) {
      if (c.type === 'text') {
        parts.push({ type: 'text-start', id: 't0' });
        for (const word of c.text.match(/\S+\s*|\s+/g) ?? []) parts.push({ type: 'text-delta', id: 't0', delta: word });
        parts.push({ type: 'text-end', id: 't0' });
      } else if (c.type === 'tool-call') {
        const half = Math.ceil(c.input.length / 2);
        parts.push(
          { type: 'tool-input-start', id: c.toolCallId, toolName: c.toolName },
          { type: 'tool-input-delta', id: c.toolCallId, delta: c.input.slice(0, half) },
          { type: 'tool-input-delta', id: c.toolCallId, delta: c.input.slice(half) },
          { type: 'tool-input-end', id: c.toolCallId },
          c,
        );
      }
    }
    parts.push({ type: 'finish', usage: whole.usage, finishReason: whole.finishReason });
    const pace = this.paceMs;
    const signal = options.abortSignal;
    return {
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        async pull(controller) {
          const part = parts.shift();
          if (!part) return controller.close();
          if (pace > 0 && part.type === 'text-delta') await pause(pace, signal);
          controller.enqueue(part);
        },
      }),
    };
  }
}

/** A real pause (the model's pace, not a test's wait), cut short when the call is aborted. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** 1 + the assistant messages already in the conversation: which model call of the loop this is. */
function stepOf(prompt: Prompt): number {
  return 1 + prompt.filter((m) => m.role === 'assistant').length;
}

function lastUserText(prompt: Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i]!;
    if (m.role === 'user') return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('').trim();
  }
  return '';
}

function echoTurn(options: LanguageModelV3CallOptions): ScriptedTurn {
  return { text: `echo: ${lastUserText(options.prompt)}` };
}

function dripTurn(options: LanguageModelV3CallOptions): ScriptedTurn {
  return { text: lastUserText(options.prompt) };
}

function autoTurn(options: LanguageModelV3CallOptions): ScriptedTurn {
  const question = lastUserText(options.prompt);
  const called = new Set<string>();
  const findings: string[] = [];
  for (const m of options.prompt) {
    if (m.role === 'assistant') for (const p of m.content) if (p.type === 'tool-call') called.add(p.toolName);
    if (m.role === 'tool') for (const p of m.content) if (p.type === 'tool-result') findings.push(`${p.toolName}: ${describeOutput(p.output)}`);
  }
  const next = (options.tools ?? []).find((t) => t.type === 'function' && !called.has(t.name));
  if (next && next.type === 'function') {
    return { toolCalls: [{ toolName: next.name, input: synthesize(next.inputSchema, { question, findings: findings.join('; ') }) }] };
  }
  const drewOn = findings.length ? ` It drew on ${findings.join('; ')}.` : '';
  return { text: `Scripted answer (the built-in offline model) to "${question}".${drewOn}` };
}

function describeOutput(output: Extract<Extract<Message, { role: 'tool' }>['content'][number], { type: 'tool-result' }>['output']): string {
  switch (output.type) {
    case 'json': {
      const v = output.value as Record<string, unknown> | null;
      if (v && typeof v === 'object' && v.__denied === true) return `denied by ${String(v.deniedBy)}`;
      return clip(JSON.stringify(output.value));
    }
    case 'text':
      return clip(output.value);
    case 'error-text':
      return `failed (${clip(output.value)})`;
    case 'error-json':
      return `failed (${clip(JSON.stringify(output.value))})`;
    default:
      return output.type;
  }
}

function clip(text: string): string {
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** A value that fits `schema` (JSON Schema, as zod emits it), made from the question and findings. */
function synthesize(schema: unknown, ctx: { question: string; findings: string }, key = ''): Json {
  const s = (schema ?? {}) as Record<string, unknown>;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0] as Json;
  if ('const' in s) return s.const as Json;
  const alternatives = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(alternatives) && alternatives.length > 0) return synthesize(alternatives[0], ctx, key);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = Array.isArray(s.required) ? (s.required as string[]) : Object.keys(props);
      return Object.fromEntries(required.filter((k) => k in props).map((k) => [k, synthesize(props[k], ctx, k)]));
    }
    case 'array':
      return typeof s.minItems === 'number' && s.minItems > 0 ? [synthesize(s.items, ctx, key)] : [];
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' ? s.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      if (/title|name|subject/i.test(key)) return `Report: ${ctx.question.slice(0, 60)}`;
      if (/body|content|text|summary|report|notes|findings/i.test(key)) return `Findings on "${ctx.question}": ${ctx.findings || 'none yet'}`;
      return ctx.question;
  }
}
