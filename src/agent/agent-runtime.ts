import type { Logger } from 'pino';
import type { AgentRuntime } from '../engine/index.js';
import type { AgentProvenanceReader } from '../engine/index.js';
import { runAgentLoop } from './agent-loop.js';
import type { LanguageModelV3 } from './language-model.js';
import { ModelCatalog } from './model-catalog.js';
import { loadModelConfig, type ModelEnv } from './model-config.js';
import type { ModelPrice } from './prices.js';
import { agentProvenance } from './provenance.js';

export interface AgentRuntimeOptions {
  /** Where model settings and API keys are read (default process.env); see model-config.ts. */
  env?: ModelEnv;
  /** Receives one line at creation saying which model `default` is (the scripted one without a key). */
  logger?: Logger;
  /** Models given in code by exact name (tests, custom providers); they win over configuration. */
  models?: Record<string, LanguageModelV3>;
  /** Prices by model name (USD per million tokens); they win over WAYMARK_MODEL_PRICES and the defaults. */
  prices?: Record<string, ModelPrice>;
  /** The SDK's in-memory retries inside one journaled attempt (default 0: the engine retries model calls durably, docs/workflows.md "Retries and timeouts"). */
  maxRetries?: number;
  /** A model call taking longer is aborted and recorded as failed (default 300000: 5 minutes). */
  timeoutMs?: number;
}

export interface WaymarkAgentRuntime extends AgentRuntime, AgentProvenanceReader {
  readonly catalog: ModelCatalog;
  /** What the model name `default` resolves to. */
  readonly defaultModel: string;
}

/**
 * What runs ctx.agent: hand it to the Registry (`new Registry({ agent: createAgentRuntime() })`).
 * Reads the model configuration once; a bad setting throws ModelConfigError naming the variable.
 */
export function createAgentRuntime(options: AgentRuntimeOptions = {}): WaymarkAgentRuntime {
  const config = loadModelConfig(options.env ?? process.env);
  const catalog = new ModelCatalog(config, options.models, options.prices);
  if (options.logger) {
    if (config.defaultFrom === 'no key') {
      options.logger.info(
        { defaultModel: config.defaultModel },
        'no model API key is set (OPENAI_API_KEY, ANTHROPIC_API_KEY or WAYMARK_DEFAULT_MODEL): agents on the "default" model use the built-in scripted model, offline and deterministic',
      );
    } else {
      options.logger.info({ defaultModel: config.defaultModel, from: config.defaultFrom }, `agents on the "default" model use ${config.defaultModel}`);
    }
  }
  const deps = { catalog, maxRetries: options.maxRetries ?? 0, timeoutMs: options.timeoutMs ?? 300_000 };
  return {
    catalog,
    defaultModel: config.defaultModel,
    resolveModel: (name) => catalog.resolve(name),
    run: (host, request) => runAgentLoop(host, request, deps),
    provenance: agentProvenance,
  };
}
