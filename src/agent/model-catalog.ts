import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ModelNotConfiguredError, UnknownModelError } from './agent-errors.js';
import type { LanguageModelV3 } from './language-model.js';
import { isStreamingModel } from './streaming-model.js';
import type { ModelConfig } from './model-config.js';
import { priceOf, type ModelPrice } from './prices.js';
import { BUILTIN_SCRIPTS, scriptedModel, type BuiltinScript } from './scripted-model.js';

/*
 * Models by name. `resolve` is pure (aliases and `default` to a canonical `<endpoint>:<model id>`)
 * and runs during replay and previews; `languageModel` builds the provider client only when a call
 * really goes live, so a replica without an API key still replays and previews recorded runs.
 */
export class ModelCatalog {
  private readonly built = new Map<string, LanguageModelV3>();

  constructor(
    readonly config: ModelConfig,
    /** Models given in code (tests, custom providers), by exact name; they win over configuration. */
    private readonly custom: Readonly<Record<string, LanguageModelV3>> = {},
    private readonly extraPrices: Readonly<Record<string, ModelPrice>> = {},
  ) {}

  resolve(name: string): string {
    const seen = new Set<string>();
    let current = name;
    for (;;) {
      if (this.custom[current]) return current;
      if (seen.has(current)) throw new UnknownModelError(name, `the aliases ${[...seen].join(' -> ')} loop`);
      seen.add(current);
      if (current === 'default') current = this.config.defaultModel;
      else if (this.config.aliases[current] !== undefined) current = this.config.aliases[current]!;
      else break;
    }
    const colon = current.indexOf(':');
    if (colon <= 0 || colon === current.length - 1) throw new UnknownModelError(name, 'a model name is <endpoint>:<model id>');
    const endpoint = current.slice(0, colon);
    if (endpoint !== 'scripted' && !this.config.endpoints[endpoint]) {
      const hint = endpoint === 'compatible' ? 'set WAYMARK_MODEL_BASE_URL' : `no endpoint "${endpoint}"`;
      throw new UnknownModelError(name, hint);
    }
    return current;
  }

  /** The client for a canonical name; throws ModelNotConfiguredError when it cannot be called here. */
  languageModel(name: string): LanguageModelV3 {
    const custom = this.custom[name];
    if (custom) return custom;
    let model = this.built.get(name);
    if (!model) {
      model = this.build(name);
      this.built.set(name, model);
    }
    return model;
  }

  /** Whether calls of this canonical name stream (model-call.ts): built models do, models given in code when marked. */
  streams(name: string): boolean {
    const custom = this.custom[name];
    return custom ? isStreamingModel(custom) : true;
  }

  price(name: string): ModelPrice | null {
    return priceOf(name, { ...this.config.prices, ...this.extraPrices });
  }

  private build(name: string): LanguageModelV3 {
    const colon = name.indexOf(':');
    const endpointName = name.slice(0, colon);
    const id = name.slice(colon + 1);
    if (endpointName === 'scripted') {
      if (!(BUILTIN_SCRIPTS as readonly string[]).includes(id)) {
        throw new ModelNotConfiguredError(name, `the built-in scripts are ${BUILTIN_SCRIPTS.join(', ')}; register your own with createAgentRuntime({ models })`);
      }
      return scriptedModel(id as BuiltinScript);
    }
    const endpoint = this.config.endpoints[endpointName];
    if (!endpoint) throw new UnknownModelError(name, `no endpoint "${endpointName}"`);
    const keyed = { ...(endpoint.apiKey ? { apiKey: endpoint.apiKey } : {}), ...(endpoint.headers ? { headers: endpoint.headers } : {}) };
    switch (endpoint.type) {
      case 'openai':
        if (!endpoint.apiKey) throw new ModelNotConfiguredError(name, `set ${endpoint.apiKeyEnv ?? 'OPENAI_API_KEY'}`);
        // Chat Completions, not Responses: stateless, so a conversation rebuilt from the journal
        // days later needs nothing stored at the provider.
        return createOpenAI({ ...keyed, ...(endpoint.baseURL ? { baseURL: endpoint.baseURL } : {}) }).chat(id);
      case 'anthropic':
        if (!endpoint.apiKey) throw new ModelNotConfiguredError(name, `set ${endpoint.apiKeyEnv ?? 'ANTHROPIC_API_KEY'}`);
        return createAnthropic({ ...keyed, ...(endpoint.baseURL ? { baseURL: endpoint.baseURL } : {}) })(id);
      case 'openai-compatible':
        if (!endpoint.baseURL) throw new ModelNotConfiguredError(name, `endpoint "${endpointName}" has no baseURL`);
        return createOpenAICompatible({ name: endpointName, baseURL: endpoint.baseURL, includeUsage: true, ...keyed })(id);
    }
  }
}
