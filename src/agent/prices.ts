/*
 * What model calls cost (docs/agents.md "Cost"). Prices are USD per million tokens, keyed by
 * Waymark model name (`<provider>:<model id>`). A key matches its exact name, the name followed by
 * a date or `-latest` (`openai:gpt-4o-mini-2024-07-18`, `anthropic:claude-haiku-4-5-20251001`), or,
 * when it ends with `*`, every name it starts. The longest matching key wins, and configured prices
 * (WAYMARK_MODEL_PRICES, or createAgentRuntime's `prices`) win over these defaults.
 *
 * The defaults were read on PRICES_READ_ON. Anthropic's from its pricing page; OpenAI's from its
 * pricing page as quoted by two secondary sources (June and November 2026), since the page itself
 * could not be fetched here. Vendors change prices: check them, and override what differs.
 */

import { roundUsd } from '../engine/index.js';

/** USD per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  /** Input tokens read from the provider's prompt cache; default `input`. */
  cachedInput?: number;
}

export const PRICES_READ_ON = '2026-11-29';

export const DEFAULT_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'openai:gpt-4o-mini': { input: 0.15, output: 0.6, cachedInput: 0.075 },
  'openai:gpt-4o': { input: 2.5, output: 10, cachedInput: 1.25 },
  'openai:gpt-4.1': { input: 2, output: 8, cachedInput: 0.5 },
  'openai:gpt-4.1-mini': { input: 0.4, output: 1.6, cachedInput: 0.1 },
  'openai:gpt-5': { input: 1.25, output: 10, cachedInput: 0.125 },
  'openai:gpt-5-mini': { input: 0.25, output: 2, cachedInput: 0.025 },
  'openai:gpt-5.2': { input: 1.75, output: 14, cachedInput: 0.175 },
  'anthropic:claude-haiku-4-5': { input: 1, output: 5, cachedInput: 0.1 },
  'anthropic:claude-3-5-haiku': { input: 0.8, output: 4, cachedInput: 0.08 },
  'anthropic:claude-sonnet-4': { input: 3, output: 15, cachedInput: 0.3 },
  'anthropic:claude-sonnet-4-5': { input: 3, output: 15, cachedInput: 0.3 },
  'anthropic:claude-sonnet-4-6': { input: 3, output: 15, cachedInput: 0.3 },
  'anthropic:claude-opus-4-1': { input: 15, output: 75, cachedInput: 1.5 },
  'anthropic:claude-opus-4-5': { input: 5, output: 25, cachedInput: 0.5 },
  'anthropic:claude-opus-4-6': { input: 5, output: 25, cachedInput: 0.5 },
  // Nothing is billed: a nominal price (gpt-4o-mini's) so cost figures and budgets can be tried
  // offline with the scripted model. Override it with a zero price to see zeros.
  'scripted:*': { input: 0.15, output: 0.6 },
});

const DATED = /^-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

function matches(key: string, name: string): boolean {
  if (key.endsWith('*')) return name.startsWith(key.slice(0, -1));
  return name === key || (name.startsWith(key) && DATED.test(name.slice(key.length)));
}

function lookup(table: Readonly<Record<string, ModelPrice>>, name: string): ModelPrice | null {
  let best: string | null = null;
  for (const key of Object.keys(table)) {
    if (matches(key, name) && (best === null || key.length > best.length)) best = key;
  }
  return best === null ? null : table[best]!;
}

/** The price of a model by its canonical name, or null when neither table knows it. */
export function priceOf(name: string, overrides: Readonly<Record<string, ModelPrice>> = {}): ModelPrice | null {
  return lookup(overrides, name) ?? lookup(DEFAULT_PRICES, name);
}

export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, how many were read from the prompt cache. */
  cachedInputTokens?: number;
}

/** Cost of one call, rounded to 1e-10 USD so sums stay readable and equal across stores. */
export function costOf(price: ModelPrice, tokens: TokenCounts): number {
  const cached = Math.min(tokens.cachedInputTokens ?? 0, tokens.inputTokens);
  const fresh = tokens.inputTokens - cached;
  return roundUsd((fresh * price.input + cached * (price.cachedInput ?? price.input) + tokens.outputTokens * price.output) / 1e6);
}

/**
 * The budget estimate of a call not yet made: its request text (system, messages, tool schemas as
 * JSON) at 4 characters a token at the input price, plus `maxOutputTokens` at the output price.
 * Four characters a token is the usual rule for English; JSON-heavy or non-English prompts take
 * more tokens, so the estimate is a guard, not a bound (docs/agents.md "Budgets").
 */
export function estimateCostOf(price: ModelPrice, request: { chars: number; maxOutputTokens: number }): number {
  return costOf(price, { inputTokens: Math.ceil(request.chars / 4), outputTokens: request.maxOutputTokens });
}
