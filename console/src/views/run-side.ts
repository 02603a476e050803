import { html, nothing } from 'lit-html';
import { ResumeOutcome, type ResumePreview, type RunProvenance } from '@waymark-dev/client/browser';
import { link } from '../app.js';
import { shortId, usd } from '../format.js';
import type { RunData } from '../run-data.js';
import { statusBadge } from './parts.js';

/** The run page's tree, resume-preview and live-events tabs. */

/** The run tree with spend rolled up: each run's own spend, its children's, and the total. */
export function tree(data: RunData, provenance: RunProvenance | undefined, error: string) {
  const parent = data.run?.parentRunId;
  const node = (p: RunProvenance): ReturnType<typeof html> => html`<li>
    <div class="node">
      <a class="mono" href=${link(`runs/${p.runId}`)} title=${p.runId}>${shortId(p.runId)}</a> ${p.workflowName} ${statusBadge(p.status)}
      <span class="facts"><span title="own spend">own ${usd(p.spend?.ownUsd)}</span><span title="children's spend">children ${usd(p.spend?.childrenUsd)}</span>
        <strong title="total spend">total ${usd(p.spend?.totalUsd)}</strong>${p.budgetUsd !== undefined ? html`<span>budget ${usd(p.budgetUsd)}</span>` : nothing}</span>
    </div>
    ${p.children.length ? html`<ul>${p.children.map(node)}</ul>` : nothing}
  </li>`;
  return html`
    ${parent ? html`<p>Parent: <a class="mono" href=${link(`runs/${parent}`)}>${parent}</a></p>` : html`<p class="muted">This run has no parent.</p>`}
    ${error ? html`<p class="error" role="alert">${error}</p>` : nothing}
    ${provenance ? html`<ul class="tree" aria-label="Run tree">${node(provenance)}</ul>` : error ? nothing : html`<p class="muted">Loading…</p>`}`;
}

const OUTCOME: Record<number, string> = {
  [ResumeOutcome.HIT]: 'replayed', [ResumeOutcome.MISS]: 'runs live', [ResumeOutcome.SKIPPED]: 'skipped', [ResumeOutcome.RERUN]: 'runs again',
  [ResumeOutcome.ORPHANED]: 'orphaned', [ResumeOutcome.INVALID_RESOLUTION]: 'invalid resolution',
};

/** ResumeRun with dry_run: what a resume would replay, run again or leave orphaned, before doing it. */
export function preview(p: ResumePreview | undefined, error: string, busy: boolean, refresh: () => void) {
  return html`
    <p>A dry run of <code>ResumeRun</code>: the workflow's code replayed against this journal, nothing written.</p>
    <button @click=${refresh} ?disabled=${busy}>${busy ? 'Previewing…' : p ? 'Preview again' : 'Preview a resume'}</button>
    ${error ? html`<p class="error" role="alert">${error}</p>` : nothing}
    ${p ? html`
      <p class="facts"><span>${p.hits} replayed</span><span>${p.misses} live</span><span>${p.reruns} again</span><span>${p.skipped} skipped</span>
        <span>${p.orphaned} orphaned</span>${p.invalidResolutions ? html`<span class="err-text">${p.invalidResolutions} invalid resolutions</span>` : nothing}</p>
      <div class="table-wrap"><table>
        <thead><tr><th scope="col">Seq</th><th scope="col">Effect</th><th scope="col">On resume</th><th scope="col">Why</th></tr></thead>
        <tbody>${p.items.map((i) => html`<tr><td>${i.seq ?? '—'}</td><td><span class="kind">${i.kind}</span> ${i.name} <span class="muted">${i.scope}</span></td>
          <td>${OUTCOME[i.outcome] ?? '?'}</td><td class="muted">${i.detail}</td></tr>`)}</tbody>
      </table></div>` : nothing}`;
}

/** The live event stream as it arrived, with the reconnects it survived. */
export function eventsTab(data: RunData) {
  const state = {
    live: 'Following the run live.', reconnecting: 'Connection lost: reconnecting from the last seq…', ended: 'The stream ended: the run is finished.',
    offline: 'An exported journal: nothing live.', loading: 'Loading…', paging: 'Loading the journal…', complete: 'Journal loaded.',
  }[data.state];
  return html`
    <p role="status" class=${`stream-state ${data.state}`}>${state}${data.reconnects ? ` Reconnected ${data.reconnects}×, no event missed or repeated.` : ''}</p>
    ${data.events.length === 0 ? html`<p class="muted">No live events yet: events after seq ${data.entries.at(-1)?.seq ?? '—'} appear here as they happen.</p>` : nothing}
    <ol class="events" aria-label="Live events" tabindex="0">
      ${data.events.map((e) => html`<li class=${e.note ? 'note' : ''}><span class="seq">${e.note ? '⟳' : `#${e.seq}`}</span> <span class="muted">${new Date(e.at).toISOString().slice(11, 23)}</span> ${e.what}</li>`)}
    </ol>`;
}
