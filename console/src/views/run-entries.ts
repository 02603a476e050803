import { html, nothing } from 'lit-html';
import { entryStatusName, type JournalEntry } from '@waymark-dev/client/browser';
import { link } from '../app.js';
import { duration, json, ms, short } from '../format.js';
import { childRunId, type Effect, type Folded } from '../journal-model.js';
import type { VirtualList } from '../virtual-list.js';

/*
 * The compact view (one line per effect, keeping what people look for: child links, outputs and
 * errors, with noise such as ctx.now and ctx.uuid hidden unless asked for, and a text filter over
 * kind, name and values) and the full entries (one line per journal entry; a click shows it
 * whole). Both virtualised.
 */

const NOISE = new Set(['now', 'uuid']);

export function compactEffects(folded: Folded, filter: string, showNoise: boolean): Effect[] {
  const needle = filter.trim().toLowerCase();
  return folded.effects.filter((e) => {
    if (!showNoise && NOISE.has(e.kind)) return false;
    if (!needle) return true;
    return `${e.kind} ${e.name} ${e.scope} ${outcomeText(e)}`.toLowerCase().includes(needle);
  });
}

function outcomeText(e: Effect): string {
  const s = e.spans.at(-1)!;
  const entry = s.outcome ?? s.head;
  if (entry.error) return `${entry.error.name}: ${entry.error.message}`;
  // Stored out of line (docs/journal.md "Large payloads"): GetJournal sends its size, not its bytes.
  if (!entry.payload && entry.payloadRef) return `(${entry.payloadRef.sizeBytes} bytes, stored out of line)`;
  return short(json(entry.payload), 160);
}

export function compact(effects: Effect[], list: VirtualList, select: (e: Effect) => void, selected: string | undefined, shown?: (last: number, count: number) => void) {
  const row = (i: number) => {
    const e = effects[i]!;
    const s = e.spans.at(-1)!;
    const entry = s.outcome ?? s.head;
    const child = childRunId(e);
    const took = s.end !== undefined ? duration(s.end - e.spans[0]!.start) : 'open';
    return html`<div class=${`c-row st-${s.status}${selected === e.id ? ' selected' : ''}`}>
      <button class="c-main" @click=${() => select(e)} aria-pressed=${selected === e.id ? 'true' : 'false'}>
        <span class="seq">#${e.seq}</span>
        <span class="kind">${e.kind}</span> <span class="name">${e.name}</span>
        <span class=${`pill st-${s.status}`}>${s.status}${s.resolvedBy ? ` · ${s.resolvedBy}` : ''}</span>
        <span class="muted">${took}</span>
        <span class=${entry.error ? 'err-text' : 'out-text'}>${outcomeText(e)}</span>
      </button>
      ${child ? html`<a href=${link(`runs/${child}`)}>child run</a>` : nothing}
    </div>`;
  };
  return list.template(effects.length, 'Effects, compact', row, shown);
}

export function entriesList(entries: JournalEntry[], list: VirtualList, select: (e: JournalEntry) => void, selected: bigint | undefined, shown?: (last: number, count: number) => void) {
  const row = (i: number) => {
    const e = entries[i]!;
    const status = entryStatusName(e.status).toLowerCase();
    return html`<button class=${`e-row${selected === e.seq ? ' selected' : ''}`} @click=${() => select(e)} aria-pressed=${selected === e.seq ? 'true' : 'false'}>
      <span class="seq">#${e.seq}</span><span class="scope mono">${e.scope || 'root'}</span>
      <span class="kind">${e.kind}</span><span class="name">${e.name}</span>
      <span class=${`pill st-${status}`}>${status}</span>
      ${e.attempt > 1 ? html`<span class="muted">attempt ${e.attempt}</span>` : nothing}
      ${e.refSeq !== undefined ? html`<span class="muted">→ #${e.refSeq}</span>` : nothing}
      <span class="muted time">${new Date(ms(e.createTime) ?? 0).toISOString().slice(11, 23)}</span>
    </button>`;
  };
  return list.template(entries.length, 'Journal entries', row, shown);
}

/** An entry as JSON, with its enums by name: what the details panel and the export show. */
export function entryJson(e: JournalEntry): Record<string, unknown> {
  return {
    seq: Number(e.seq), scope: e.scope, kind: e.kind, name: e.name, status: entryStatusName(e.status), attempt: e.attempt,
    ...(e.refSeq !== undefined ? { refSeq: Number(e.refSeq) } : {}),
    payload: json(e.payload), ...(e.error ? { error: { name: e.error.name, message: e.error.message, reason: e.error.reason, details: json(e.error.details) } } : {}),
    ...(e.usage ? { usage: { input: Number(e.usage.inputTokens), output: Number(e.usage.outputTokens) } } : {}),
    ...(e.costUsd !== undefined ? { costUsd: e.costUsd } : {}),
    idempotencyKey: e.idempotencyKey || undefined, createTime: new Date(ms(e.createTime) ?? 0).toISOString(),
  };
}
