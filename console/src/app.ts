import type { TemplateResult } from 'lit-html';

/*
 * The page's one piece of shared state: which view is mounted, and how to redraw it. Views keep
 * their own data and call rerender() when it changes; the URL is the source of truth for what is
 * shown (filters, the run, the tab), so a reload or a shared link shows the same page.
 */

export const BASE = '/console/';

export interface View {
  /** The document title and the page's heading. */
  title(): string;
  template(): TemplateResult;
  /** Stops what the view started (polls, streams) when another view replaces it. */
  dispose?(): void;
}

let draw: () => void = () => undefined;
let scheduled = false;

export function setDraw(fn: () => void): void {
  draw = fn;
}

/** Redraws the page once, after the current task (many updates in one tick draw once). */
export function rerender(): void {
  if (scheduled) return;
  scheduled = true;
  queueMicrotask(() => {
    scheduled = false;
    draw();
  });
}

let onNavigate: () => void = () => undefined;

export function setNavigate(fn: () => void): void {
  onNavigate = fn;
}

/** Goes to `url` (a path under /console/ with its query), adding a history entry unless `replace`. */
export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  onNavigate();
}

/** Rewrites the page's query (filters) in place, without remounting the view. */
export function setQuery(params: URLSearchParams): void {
  const q = params.toString();
  history.replaceState(null, '', `${location.pathname}${q ? `?${q}` : ''}`);
}

export function link(path: string, params?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) if (v) q.set(k, v);
  const s = q.toString();
  return `${BASE}${path}${s ? `?${s}` : ''}`;
}
