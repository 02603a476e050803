import { z } from 'zod';
import { ModelConfigError } from './agent-errors.js';
import type { ModelPrice } from './prices.js';

/*
 * Model configuration from the environment (docs/agents.md "Models"). A model is named
 * `<endpoint>:<model id>`. Built-in endpoints: `openai` (OPENAI_API_KEY, OPENAI_BASE_URL),
 * `anthropic` (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), `compatible` (any OpenAI-compatible server,
 * e.g. a local Ollama or vLLM, at WAYMARK_MODEL_BASE_URL with WAYMARK_MODEL_API_KEY) and
 * `scripted` (built in, offline). WAYMARK_MODELS adds endpoints and aliases as JSON:
 *
 *   {"ollama": {"type": "openai-compatible", "baseURL": "http://127.0.0.1:11434/v1"},
 *    "fast": "ollama:llama3.2"}
 *
 * `default` is WAYMARK_DEFAULT_MODEL, else openai:gpt-4o-mini when OPENAI_API_KEY is set, else
 * anthropic:claude-haiku-4-5 when ANTHROPIC_API_KEY is, else the scripted model.
 */

export type EndpointType = 'openai' | 'anthropic' | 'openai-compatible';

export interface ModelEndpoint {
  type: EndpointType;
  baseURL?: string;
  /** Read from the environment when the configuration is loaded; never journaled or logged. */
  apiKey?: string;
  /** The variable the key comes from, for messages. */
  apiKeyEnv?: string;
  headers?: Record<string, string>;
}

export interface ModelConfig {
  /** By endpoint name: the part of a model name before the first `:`. */
  endpoints: Record<string, ModelEndpoint>;
  /** Alias -> model name. */
  aliases: Record<string, string>;
  /** Configured prices; they win over prices.ts's defaults. */
  prices: Record<string, ModelPrice>;
  defaultModel: string;
  /** Why `default` is what it is (the start log line says so). */
  defaultFrom: 'WAYMARK_DEFAULT_MODEL' | 'OPENAI_API_KEY' | 'ANTHROPIC_API_KEY' | 'no key';
}

export type ModelEnv = Record<string, string | undefined>;

const NAME = /^[A-Za-z0-9_.-]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const url = z.string().regex(/^https?:\/\/\S+$/, 'must be an http(s) URL');

const endpointSchema = z.strictObject({
  type: z.enum(['openai', 'anthropic', 'openai-compatible']).default('openai-compatible'),
  baseURL: url.optional(),
  apiKeyEnv: z.string().regex(ENV_NAME, 'must name an environment variable').optional(),
  headers: z.record(z.string(), z.string()).optional(),
});
const modelsSchema = z.record(z.string().regex(NAME, 'keys are names of letters, digits, _ . -'), z.union([z.string().min(1), endpointSchema]));
const priceSchema = z.strictObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cachedInput: z.number().nonnegative().optional(),
});
const pricesSchema = z.record(z.string().min(1), priceSchema);

export const SCRIPTED_DEFAULT = 'scripted:auto';

export function loadModelConfig(env: ModelEnv): ModelConfig {
  const get = (k: string): string | undefined => (env[k] === '' ? undefined : env[k]);
  const endpoints: Record<string, ModelEndpoint> = {
    openai: endpoint('openai', get('OPENAI_BASE_URL'), 'OPENAI_API_KEY', env),
    anthropic: endpoint('anthropic', get('ANTHROPIC_BASE_URL'), 'ANTHROPIC_API_KEY', env),
  };
  const baseURL = get('WAYMARK_MODEL_BASE_URL');
  if (baseURL !== undefined) {
    if (!url.safeParse(baseURL).success) throw new ModelConfigError('WAYMARK_MODEL_BASE_URL', 'must be an http(s) URL such as http://127.0.0.1:11434/v1');
    endpoints.compatible = endpoint('openai-compatible', baseURL, 'WAYMARK_MODEL_API_KEY', env);
  }
  const aliases: Record<string, string> = {};
  for (const [name, value] of Object.entries(parseJson('WAYMARK_MODELS', get('WAYMARK_MODELS'), modelsSchema, '{"ollama": {"type": "openai-compatible", "baseURL": "http://127.0.0.1:11434/v1"}, "fast": "ollama:llama3.2"}') ?? {})) {
    if (name === 'scripted' || name === 'default') throw new ModelConfigError('WAYMARK_MODELS', `"${name}" is reserved`);
    if (typeof value === 'string') aliases[name] = value;
    else endpoints[name] = endpoint(value.type, value.baseURL, value.apiKeyEnv, env, value.headers);
  }
  const prices = parseJson('WAYMARK_MODEL_PRICES', get('WAYMARK_MODEL_PRICES'), pricesSchema, '{"ollama:*": {"input": 0, "output": 0}}') ?? {};
  const configured = get('WAYMARK_DEFAULT_MODEL');
  let defaultModel = SCRIPTED_DEFAULT;
  let defaultFrom: ModelConfig['defaultFrom'] = 'no key';
  if (configured) [defaultModel, defaultFrom] = [configured, 'WAYMARK_DEFAULT_MODEL'];
  else if (endpoints.openai!.apiKey) [defaultModel, defaultFrom] = ['openai:gpt-4o-mini', 'OPENAI_API_KEY'];
  else if (endpoints.anthropic!.apiKey) [defaultModel, defaultFrom] = ['anthropic:claude-haiku-4-5', 'ANTHROPIC_API_KEY'];
  return { endpoints, aliases, prices, defaultModel, defaultFrom };
}

function endpoint(type: EndpointType, baseURL: string | undefined, apiKeyEnv: string | undefined, env: ModelEnv, headers?: Record<string, string>): ModelEndpoint {
  const apiKey = apiKeyEnv ? env[apiKeyEnv] : undefined;
  return {
    type,
    ...(baseURL ? { baseURL } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(apiKeyEnv ? { apiKeyEnv } : {}),
    ...(headers ? { headers } : {}),
  };
}

function parseJson<S extends z.ZodType>(variable: string, text: string | undefined, schema: S, example: string): z.output<S> | null {
  if (text === undefined) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ModelConfigError(variable, `must be JSON, e.g. ${example}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ModelConfigError(variable, `${issue.path.join('.') || 'the value'}: ${issue.message} (e.g. ${example})`);
  }
  return parsed.data;
}
