import { html, nothing } from 'lit-html';
import { place } from '../css.js';
import { duration } from '../format.js';
import { childRunId, scopeLabel, type Effect, type Folded, type Span } from '../journal-model.js';
import type { VirtualList } from '../virtual-list.js';
import { link } from '../app.js';

/*
 * The timeline: one row per effect, on one time axis from the run's first entry to its last (or
 * now, while it runs). Each attempt is a bar from intent to result (a one-write effect is a tick);
 * retries are the effect's further bars, numbered; a wait is a hatched gap labelled with who or
 * what resolved it. Rows keep their branch (scope): parallel branches' bars overlap in time, side
 * by side on the axis. Rows are virtualised.
 */

export interface TimelineOptions {
  folded: Folded;
  live: boolean;
  list: VirtualList;
  selected: string | undefined;
  select(effect: Effect): void;
  /** The last row drawn (VirtualList.template). */
  shown?(last: number, count: number): void;
}

export function timeline(o: TimelineOptions) {
  const { folded } = o;
  const end = o.live ? Math.max(folded.end, Date.now()) : folded.end;
  const total = Math.max(1, end - folded.start);
  const pct = (t: number) => `${(((t - folded.start) / total) * 100).toFixed(3)}%`;
  const width = (a: number, b: number) => `max(3px, ${(((b - a) / total) * 100).toFixed(3)}%)`;
  // The root is lane 0 (grey); branches take the other colours in order of appearance.
  const lane = new Map(folded.scopes.filter((s) => s !== '').map((s, i) => [s, i + 1]));
  const bar = (s: Span) => {
    const stop = s.end ?? end;
    const title = s.kind === 'wait'
      ? `waited ${duration(stop - s.start)}${s.resolvedBy ? `, ${s.resolvedBy}` : ' (open)'}`
      : `attempt ${s.attempt || 1}: ${s.status}, ${duration(stop - s.start)}`;
    return html`<span class=${`bar ${s.kind} st-${s.status}`} title=${title} ${place({ left: pct(s.start), width: width(s.start, stop) })}>
      ${s.kind === 'wait' ? html`<span class="bar-label">${s.resolvedBy ?? 'waiting'}</span>` : s.attempt > 1 ? html`<span class="bar-label">#${s.attempt}</span>` : nothing}
    </span>`;
  };
  const row = (i: number) => {
    const e = folded.effects[i]!;
    const last = e.spans.at(-1)!;
    const child = childRunId(e);
    return html`<div class=${`tl-row${o.selected === e.id ? ' selected' : ''}`}>
      <button class="tl-name" @click=${() => o.select(e)} aria-pressed=${o.selected === e.id ? 'true' : 'false'} title=${`${e.kind} ${e.name}${e.scope ? ` in ${e.scope}` : ''}`}>
        <span class=${`lane l${(lane.get(e.scope) ?? 0) % 6}`} aria-hidden="true"></span>
        <span class="kind">${e.kind}</span> ${e.name} ${e.scope ? html`<span class="scope-label">${scopeLabel(e.scope)}</span>` : nothing}
        ${e.spans.filter((s) => s.kind === 'attempt').length > 1 ? html`<span class="muted">×${e.spans.filter((s) => s.kind === 'attempt').length}</span>` : nothing}
        <span class="sr-only">, ${last.status}</span>
      </button>
      <div class="tl-track" aria-hidden="true">${[...e.spans.filter((s) => s.kind === 'wait'), ...e.spans.filter((s) => s.kind === 'attempt')].map(bar)}</div>
      <span class="tl-child">${child ? html`<a href=${link(`runs/${child}`)} title="child run">↳ child</a>` : nothing}</span>
    </div>`;
  };
  return html`
    <div class="tl-axis" aria-hidden="true"><span>0</span><span>${duration(total / 2)}</span><span>${duration(total)}</span></div>
    ${o.list.template(folded.effects.length, 'Timeline of effects', row, o.shown)}
    <p class="legend muted"><span class="bar-key st-ok"></span> ok <span class="bar-key st-error"></span> error
      <span class="bar-key st-running"></span> in flight <span class="bar-key wait"></span> waiting · ${folded.scopes.length} branch${folded.scopes.length === 1 ? '' : 'es'}</p>`;
}
