// flow/: templates over a flow's state ("{{ state.order.id }}"): the names they read, and rendering.
// Pure: no store, no clock; reading an undeclared name is refused at registration (flow-validation.ts).
import type { Json } from '../../journal/run.js';

/*
 * A template is any string in a templated field (a prompt, a title, a tool's arguments). Each
 * `{{ state.a.b }}` is replaced by that value of the state: text as it is, anything else as JSON,
 * a missing value as "". A string that is exactly one placeholder is replaced by the value itself,
 * keeping its JSON type, so `"amount": "{{ state.amount }}"` passes a number.
 */

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const PATH = /^state(?:\.[A-Za-z_][A-Za-z0-9_]*)+$/;

export interface TemplateRead {
  /** The whole placeholder's text, for messages. */
  text: string;
  /** The path after `state.`; null when the placeholder is not a `state.` path. */
  path: string[] | null;
}

/** The placeholders of one string. */
export function templateReads(text: string): TemplateRead[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => ({ text: m[0], path: PATH.test(m[1]!) ? m[1]!.split('.').slice(1) : null }));
}

/** Every string of a JSON value with its path below `at` (object keys are not templates). */
export function templateStrings(value: Json | undefined, at: string): { field: string; text: string }[] {
  if (typeof value === 'string') return [{ field: at, text: value }];
  if (value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((v, i) => templateStrings(v, `${at}[${i}]`));
  return Object.entries(value).flatMap(([k, v]) => templateStrings(v, `${at}.${k}`));
}

function lookup(state: Record<string, Json>, path: string[]): Json | undefined {
  let current: Json | undefined = state;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || Array.isArray(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

/** A string template rendered as text. */
export function renderText(text: string, state: Record<string, Json>): string {
  return text.replace(PLACEHOLDER, (_whole, inner: string) => {
    if (!PATH.test(inner)) return '';
    const value = lookup(state, inner.split('.').slice(1));
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** A templated JSON value: each string rendered, a lone placeholder replaced by its value. */
export function renderJson(value: Json, state: Record<string, Json>): Json {
  if (typeof value === 'string') {
    const whole = /^\{\{\s*([^{}]*?)\s*\}\}$/.exec(value);
    if (whole && PATH.test(whole[1]!)) return lookup(state, whole[1]!.split('.').slice(1)) ?? null;
    return renderText(value, state);
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => renderJson(v, state));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderJson(v, state)]));
}
