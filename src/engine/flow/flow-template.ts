// flow/: templates over a flow's state ("{{ state.order.id }}"): the names they read, and rendering.
// Pure: no store, no clock; reading an undeclared name is refused at registration (flow-validation.ts).
import type { Json } from '../../journal/run.js';

/*
 * A template is any string in a templated field (a prompt, a title, a tool's arguments). Each
 * `{{ state.a.b }}` is replaced by that value of the state: text as it is, anything else as JSON,
 * a missing value as "". A string that is exactly one placeholder is replaced by the value itself,
 * keeping its JSON type, so `"amount": "{{ state.amount }}"` passes a number.
 */

const PATH = /^state(?:\.[A-Za-z_][A-Za-z0-9_]*)+$/;

export interface TemplateRead {
  /** The whole placeholder's text, for messages. */
  text: string;
  /** The path after `state.`; null when the placeholder is not a `state.` path. */
  path: string[] | null;
}

interface Placeholder {
  start: number;
  end: number;
  /** What is between the braces, without the whitespace around it. */
  inner: string;
}

/**
 * The placeholders of `text` in order: `{{`, then no brace, then `}}` (what /\{\{\s*([^{}]*?)\s*\}\}/g
 * finds), by one scan. The regular expression backtracks on an unclosed `{{` followed by
 * whitespace (n² per start), and an approval title is rendered on every run that reaches it.
 */
function placeholders(text: string): Placeholder[] {
  const found: Placeholder[] = [];
  let from = 0;
  for (;;) {
    const start = text.indexOf('{{', from);
    if (start < 0) return found;
    let j = start + 2;
    while (j < text.length && text[j] !== '{' && text[j] !== '}') j++;
    if (text[j] === '}' && text[j + 1] === '}') {
      found.push({ start, end: j + 2, inner: text.slice(start + 2, j).trim() });
      from = j + 2;
    } else {
      // No brace between start + 2 and j, so the next `{{` starts at start + 1 (`{{{`) or at j.
      from = j === start + 2 ? start + 1 : j;
    }
  }
}

/** The placeholders of one string. */
export function templateReads(text: string): TemplateRead[] {
  return placeholders(text).map((p) => ({ text: text.slice(p.start, p.end), path: PATH.test(p.inner) ? p.inner.split('.').slice(1) : null }));
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
  let out = '';
  let at = 0;
  for (const p of placeholders(text)) {
    out += text.slice(at, p.start);
    at = p.end;
    if (!PATH.test(p.inner)) continue;
    const value = lookup(state, p.inner.split('.').slice(1));
    if (value === undefined || value === null) continue;
    out += typeof value === 'string' ? value : JSON.stringify(value);
  }
  return out + text.slice(at);
}

/** A templated JSON value: each string rendered, a lone placeholder replaced by its value. */
export function renderJson(value: Json, state: Record<string, Json>): Json {
  if (typeof value === 'string') {
    const found = value.startsWith('{{') ? placeholders(value) : [];
    const whole = found.length === 1 && found[0]!.start === 0 && found[0]!.end === value.length ? found[0]!.inner : null;
    if (whole !== null && PATH.test(whole)) return lookup(state, whole.split('.').slice(1)) ?? null;
    return renderText(value, state);
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => renderJson(v, state));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderJson(v, state)]));
}
