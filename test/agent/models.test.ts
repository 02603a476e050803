import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ModelConfigError, ModelNotConfiguredError, UnknownModelError } from '../../src/agent/agent-errors.js';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { ModelCatalog } from '../../src/agent/model-catalog.js';
import { loadModelConfig } from '../../src/agent/model-config.js';
import { costOf, estimateCostOf, priceOf } from '../../src/agent/prices.js';
import { scriptedModel } from '../../src/agent/scripted-model.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { AgentRuntimeMissingError } from '../../src/engine/errors.js';
import { Registry } from '../../src/engine/registry.js';
import { defineTool } from '../../src/engine/author/tool.js';
import { defineWorkflow, type Workflow } from '../../src/engine/author/workflow.js';
import type { AgentRuntimeOptions } from '../../src/agent/agent-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock } from '../engine/harness.js';
import { NS, shape, TTL } from './agent-harness.js';

describe('prices', () => {
  it('match a model by exact name, a dated or -latest suffix, or a * prefix; the longest key wins and configuration beats defaults', () => {
    expect(priceOf('openai:gpt-4o-mini')).toEqual({ input: 0.15, output: 0.6, cachedInput: 0.075 });
    expect(priceOf('openai:gpt-4o-mini-2024-07-18')?.input).toBe(0.15);
    expect(priceOf('openai:gpt-4o')?.input).toBe(2.5);
    expect(priceOf('anthropic:claude-sonnet-4-5-20250929')?.output).toBe(15);
    expect(priceOf('anthropic:claude-haiku-4-5-latest')?.input).toBe(1);
    // A suffix that is not a date is another model: no guess.
    expect(priceOf('openai:gpt-5-nano')).toBeNull();
    expect(priceOf('compatible:llama3.2')).toBeNull();
    expect(priceOf('scripted:auto')).toEqual({ input: 0.15, output: 0.6 });
    expect(priceOf('compatible:llama3.2', { 'compatible:*': { input: 0, output: 0 } })).toEqual({ input: 0, output: 0 });
    expect(priceOf('openai:gpt-4o-mini', { 'openai:gpt-4o-mini': { input: 1, output: 2 } })).toEqual({ input: 1, output: 2 });
  });

  it('cost counts cached input at its own price; the estimate is request chars / 4 plus max output tokens', () => {
    const price = { input: 2, output: 10, cachedInput: 0.5 };
    expect(costOf(price, { inputTokens: 1_000_000, outputTokens: 100_000, cachedInputTokens: 400_000 })).toBe(1.2 + 0.2 + 1);
    expect(estimateCostOf(price, { chars: 4000, maxOutputTokens: 1000 })).toBe(0.002 + 0.01);
  });
});

describe('model configuration', () => {
  it('default is WAYMARK_DEFAULT_MODEL, else OpenAI, else Anthropic when a key is set, else the scripted model', () => {
    expect(loadModelConfig({}).defaultModel).toBe('scripted:auto');
    expect(loadModelConfig({ ANTHROPIC_API_KEY: 'k' }).defaultModel).toBe('anthropic:claude-haiku-4-5');
    expect(loadModelConfig({ ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k' }).defaultModel).toBe('openai:gpt-4o-mini');
    expect(loadModelConfig({ OPENAI_API_KEY: 'k', WAYMARK_DEFAULT_MODEL: 'fast' })).toMatchObject({ defaultModel: 'fast', defaultFrom: 'WAYMARK_DEFAULT_MODEL' });
  });

  it('refuses bad settings with a message naming the variable', () => {
    const refuse = (env: Record<string, string>) => { try { loadModelConfig(env); } catch (e) { return e; } return null; };
    expect(refuse({ WAYMARK_MODELS: '{nope' })).toMatchObject({ variable: 'WAYMARK_MODELS', message: expect.stringContaining('must be JSON') });
    expect(refuse({ WAYMARK_MODELS: '{"x": {"baseURL": "ftp://a"}}' })).toBeInstanceOf(ModelConfigError);
    expect(refuse({ WAYMARK_MODELS: '{"scripted": "openai:gpt-4o"}' })).toMatchObject({ message: expect.stringContaining('reserved') });
    expect(refuse({ WAYMARK_MODEL_PRICES: '{"openai:gpt-4o": {"input": -1, "output": 1}}' })).toMatchObject({ variable: 'WAYMARK_MODEL_PRICES' });
    expect(refuse({ WAYMARK_MODEL_BASE_URL: 'localhost:11434' })).toMatchObject({ variable: 'WAYMARK_MODEL_BASE_URL' });
  });

  it('resolves aliases, endpoints and default; builds a provider only when a call goes live', () => {
    const config = loadModelConfig({
      WAYMARK_MODELS: JSON.stringify({ ollama: { type: 'openai-compatible', baseURL: 'http://127.0.0.1:11434/v1' }, fast: 'ollama:llama3.2', loop: 'loop' }),
    });
    const catalog = new ModelCatalog(config);
    expect(catalog.resolve('fast')).toBe('ollama:llama3.2');
    expect(catalog.resolve('default')).toBe('scripted:auto');
    expect(catalog.resolve('openai:gpt-4o-mini')).toBe('openai:gpt-4o-mini');
    expect(() => catalog.resolve('loop')).toThrow(UnknownModelError);
    expect(() => catalog.resolve('mystery:model')).toThrow(/no endpoint "mystery"/);
    expect(() => catalog.resolve('compatible:x')).toThrow(/WAYMARK_MODEL_BASE_URL/);
    expect(catalog.languageModel('ollama:llama3.2')).toMatchObject({ provider: 'ollama.chat', modelId: 'llama3.2' });
    // Named correctly but not callable here: the error says what to set, at call time only.
    expect(() => catalog.languageModel('openai:gpt-4o-mini')).toThrow(ModelNotConfiguredError);
    expect(() => catalog.languageModel('openai:gpt-4o-mini')).toThrow(/OPENAI_API_KEY/);
    const keyed = new ModelCatalog(loadModelConfig({ OPENAI_API_KEY: 'sk-test', ANTHROPIC_API_KEY: 'sk-ant' }));
    expect(keyed.languageModel('openai:gpt-4o-mini')).toMatchObject({ provider: 'openai.chat', modelId: 'gpt-4o-mini' });
    expect(keyed.languageModel('anthropic:claude-haiku-4-5')).toMatchObject({ modelId: 'claude-haiku-4-5' });
  });

  it('createAgentRuntime logs which model `default` is, without ever logging a key', () => {
    const lines: string[] = [];
    const logger = pino({}, { write: (l: string) => lines.push(l) });
    createAgentRuntime({ env: { OPENAI_API_KEY: 'sk-secret-value' }, logger });
    expect(lines.join('')).toContain('openai:gpt-4o-mini');
    expect(lines.join('')).not.toContain('sk-secret-value');
  });
});

const echo = defineTool({ name: 'shout', description: 'Upper-cases text.', input: z.object({ text: z.string() }), mutating: false, execute: ({ text }) => text.toUpperCase() });
const broken = defineTool({ name: 'broken', description: 'Always fails.', input: z.object({}), mutating: false, retry: { maxAttempts: 1 }, execute: () => { throw new Error('disk on fire'); } });

function engineWith(workflows: Workflow[], runtime: AgentRuntimeOptions | null, store = new MemoryStore({ clock: new FakeClock().now })) {
  const registry = new Registry(runtime ? { agent: createAgentRuntime(runtime) } : {}).register(...workflows, echo, broken);
  return { store, engine: new RunEngine({ store, registry, holder: 'w', leaseTtlMs: TTL }) };
}

describe('ctx.agent on scripted turns', () => {
  const agentFlow = (model: string, maxSteps?: number) => defineWorkflow({ name: 'flow', input: z.object({}) }, async (ctx) => {
    const r = await ctx.agent([{ role: 'user', content: 'go' }], { model, tools: [echo, 'broken'], ...(maxSteps ? { maxSteps } : {}) });
    return { text: r.text, stoppedBy: r.stoppedBy, steps: r.steps, calls: r.toolCalls.map((c) => `${c.toolName}:${c.outcome}`), tool: r.messages[1] };
  });

  it('feeds tool failures and unknown tools back to the model as errors, and the turn goes on', async () => {
    const model = scriptedModel({ id: 't', turns: [
      { toolCalls: [{ toolName: 'broken', input: {} }, { toolName: 'nope', input: {} }, { toolName: 'shout', input: { text: 'hi' } }] },
      { text: 'recovered' },
    ] });
    const { engine, store } = engineWith([agentFlow('mock:t')], { env: {}, models: { 'mock:t': model } });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'flow', input: {}, execute: true });
    expect(run.output).toMatchObject({ text: 'recovered', stoppedBy: 'answer', steps: 2, calls: ['broken:error', 'nope:invalid', 'shout:ok'] });
    expect((run.output as { tool: { content: { output: unknown }[] } }).tool.content.map((p) => p.output)).toEqual([
      { type: 'error-text', value: 'Error: disk on fire' },
      { type: 'error-text', value: expect.stringContaining('nope') },
      { type: 'json', value: 'HI' },
    ]);
    expect(shape(await store.journalList({ runId: run.id }))).toEqual([
      'running model mock:t', 'ok model mock:t', 'error tool broken', 'ok tool shout', 'running model mock:t', 'ok model mock:t',
    ]);
  });

  it('stops after maxSteps model calls', async () => {
    const loop = scriptedModel({ id: 'loop', turns: Array.from({ length: 5 }, () => ({ toolCalls: [{ toolName: 'shout', input: { text: 'again' } }] })) });
    const { engine } = engineWith([agentFlow('mock:loop', 2)], { env: {}, models: { 'mock:loop': loop } });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'flow', input: {}, execute: true });
    expect(run.output).toMatchObject({ stoppedBy: 'max-steps', steps: 2, calls: ['shout:ok', 'shout:ok'] });
  });

  it('a replica without the model (no API key) still replays and previews a recorded agent run', async () => {
    const turns = [{ toolCalls: [{ toolName: 'shout', input: { text: 'x' } }] }, { text: 'done' }];
    const recorded = engineWith([agentFlow('openai:gpt-4o-mini')], { env: {}, models: { 'openai:gpt-4o-mini': scriptedModel({ id: 'gpt', turns }) } });
    const { run } = await recorded.engine.runStart({ namespace: NS, workflowName: 'flow', input: {}, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    const keyless = engineWith([agentFlow('openai:gpt-4o-mini')], { env: {} }, recorded.store);
    expect(await keyless.engine.runPreview({ runId: run.id, namespace: NS })).toMatchObject({ outcome: 'succeeded', misses: 0, hits: 3, orphaned: 0 });
    const resumed = await keyless.engine.runResume({ runId: run.id, namespace: NS });
    expect(resumed.run).toMatchObject({ status: 'SUCCEEDED', output: run.output });
  });

  it('scripted:echo answers with the last user message; a Registry without a runtime refuses ctx.agent', async () => {
    const { engine } = engineWith([agentFlow('scripted:echo')], { env: {} });
    expect((await engine.runStart({ namespace: NS, workflowName: 'flow', input: {}, execute: true })).run.output).toMatchObject({ text: 'echo: go' });
    const bare = engineWith([agentFlow('scripted:echo')], null);
    const { run } = await bare.engine.runStart({ namespace: NS, workflowName: 'flow', input: {}, execute: true });
    expect(run.error).toMatchObject({ name: AgentRuntimeMissingError.name, reason: 'agent_runtime_missing' });
  });
});
