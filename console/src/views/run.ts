import { html, nothing } from 'lit-html';
import { isTerminal, RunStatus, type JournalEntry, type ResumePreview, type RunProvenance } from '@waymark-dev/client/browser';
import { link, rerender, setQuery, type View } from '../app.js';
import { age, errorText, json, usd, when } from '../format.js';
import { downloadJournal } from '../journal-file.js';
import type { Effect } from '../journal-model.js';
import { RunData } from '../run-data.js';
import { session } from '../session.js';
import { VirtualList } from '../virtual-list.js';
import { jsonBlock, statusBadge } from './parts.js';
import { compact, compactEffects, entriesList, entryJson } from './run-entries.js';
import { conversation, toolsTable } from './run-agent.js';
import { eventsTab, preview, tree } from './run-side.js';
import { timeline } from './run-timeline.js';

/*
 * A run's page: its header (status, workflow, spend, labels, cancel, resume, export) and tabs
 * over one RunData: timeline, compact, entries, conversation, tools, tree, events and resume
 * preview. The tab is in the URL (?tab=). Also the offline viewer's page (no actions).
 */

const TABS = ['timeline', 'compact', 'entries', 'conversation', 'tools', 'tree', 'events', 'preview'] as const;
type Tab = (typeof TABS)[number];
const LABEL: Record<Tab, string> = {
  timeline: 'Timeline', compact: 'Compact', entries: 'Entries', conversation: 'Conversation', tools: 'Tools', tree: 'Run tree', events: 'Live events', preview: 'Resume preview',
};

export function runView(runId: string): View {
  const data = new RunData(session(), runId);
  void data.load();
  return runPage(data);
}

export function runPage(data: RunData, extra?: { title: string; header: () => unknown }): View {
  const s = session();
  const offline = data.state === 'offline';
  const canAct = !offline && s?.kind === 'key';
  let tab: Tab = (TABS as readonly string[]).includes(new URLSearchParams(location.search).get('tab') ?? '') ? new URLSearchParams(location.search).get('tab') as Tab : 'timeline';
  const lists = { timeline: new VirtualList(30), compact: new VirtualList(34), entries: new VirtualList(30) };
  let selectedEffect: Effect | undefined;
  let selectedEntry: JournalEntry | undefined;
  let filter = '';
  let noise = false;
  let message = '';
  let provenance: RunProvenance | undefined;
  let provenanceError = '';
  let resumePreview: ResumePreview | undefined;
  let previewError = '';
  let previewBusy = false;

  async function loadProvenance(): Promise<void> {
    if (!s || s.kind !== 'key' || offline) return;
    try {
      provenance = (await s.clients.runs.getRunProvenance({ runId: data.runId })).provenance;
    } catch (err) {
      provenanceError = errorText(err);
    }
    rerender();
  }
  async function loadPreview(): Promise<void> {
    if (!s) return;
    previewBusy = true;
    rerender();
    try {
      resumePreview = (await s.clients.runs.resumeRun({ runId: data.runId, dryRun: true })).preview;
      previewError = '';
    } catch (err) {
      previewError = errorText(err);
    }
    previewBusy = false;
    rerender();
  }
  /** Views that show the whole journal at once read every page first (docs/console.md "Performance"). */
  function readAllFor(t: Tab): void {
    if ((t === 'conversation' || t === 'tools' || (t === 'compact' && filter.trim())) && data.partial) void data.readAll().then(rerender, rerender);
  }
  const shown = (last: number, count: number) => data.near(last, count);
  function show(t: Tab): void {
    tab = t;
    readAllFor(t);
    const q = new URLSearchParams(location.search);
    if (t === 'timeline') q.delete('tab');
    else q.set('tab', t);
    setQuery(q);
    if ((t === 'tools' || t === 'tree') && !provenance && !provenanceError) void loadProvenance();
    if (t === 'preview' && !resumePreview && !previewError && canAct) void loadPreview();
    rerender();
  }
  async function act(what: 'cancel' | 'resume'): Promise<void> {
    if (!s) return;
    try {
      if (what === 'cancel') await s.clients.runs.cancelRun({ runId: data.runId, reason: 'cancelled from the web console' });
      else await s.clients.runs.resumeRun({ runId: data.runId });
      message = what === 'cancel' ? 'Cancelled.' : 'Resumed.';
      await data.refreshRun();
      if (what === 'resume' && data.state === 'ended') void data.load();
    } catch (err) {
      message = `${what === 'cancel' ? 'Cancel' : 'Resume'} failed: ${errorText(err)}`;
    }
    rerender();
  }
  // Keeps "now" moving on the timeline while the run is live.
  const tick = setInterval(() => {
    if (data.state === 'live' && tab === 'timeline') rerender();
  }, 1000);
  if (tab === 'tools' || tab === 'tree') void loadProvenance();
  // A page opened on such a tab reads the rest once the first page is in.
  if (!offline) void data.firstPage.then(() => readAllFor(tab));
  if (tab === 'preview' && canAct) void loadPreview();

  const selectEffect = (e: Effect) => {
    selectedEffect = selectedEffect?.id === e.id ? undefined : e;
    rerender();
  };
  const selectEntry = (e: JournalEntry) => {
    selectedEntry = selectedEntry?.seq === e.seq ? undefined : e;
    rerender();
  };

  function body() {
    const folded = data.fold();
    switch (tab) {
      case 'timeline': return timeline({ folded, live: data.state === 'live', list: lists.timeline, selected: selectedEffect?.id, select: selectEffect, shown });
      case 'compact': {
        const effects = compactEffects(folded, filter, noise);
        return html`<div class="filters"><label>Filter <input type="search" .value=${filter} placeholder="kind, name or value" @input=${(e: Event) => { filter = (e.target as HTMLInputElement).value; readAllFor('compact'); rerender(); }} /></label>
          <label class="check"><input type="checkbox" .checked=${noise} @change=${(e: Event) => { noise = (e.target as HTMLInputElement).checked; rerender(); }} /> show ctx.now and ctx.uuid</label>
          <span class="muted">${effects.length} of ${folded.effects.length} effects</span></div>
          ${compact(effects, lists.compact, selectEffect, selectedEffect?.id, shown)}`;
      }
      case 'entries': return entriesList(data.entries, lists.entries, selectEntry, selectedEntry?.seq, shown);
      case 'conversation': return conversation(folded);
      case 'tools': return toolsTable(folded, provenance);
      case 'tree': return offline ? html`<p class="muted">The run tree needs the server.</p>` : tree(data, provenance, provenanceError);
      case 'events': return eventsTab(data);
      case 'preview': return canAct ? preview(resumePreview, previewError, previewBusy, () => void loadPreview()) : html`<p class="muted">The resume preview needs the server and an API key.</p>`;
    }
  }

  function details() {
    const entries = selectedEffect ? selectedEffect.spans.flatMap((sp) => [sp.head, ...(sp.outcome ? [sp.outcome] : [])]) : selectedEntry ? [selectedEntry] : [];
    if (entries.length === 0 || !['timeline', 'compact', 'entries'].includes(tab)) return nothing;
    return html`<aside class="details card" aria-label="Selected entries">
      <header><h2>${selectedEffect ? `${selectedEffect.kind} ${selectedEffect.name}` : `Entry #${selectedEntry!.seq}`}</h2>
        <button class="ghost" @click=${() => { selectedEffect = undefined; selectedEntry = undefined; rerender(); }}>Close</button></header>
      ${entries.map((e) => jsonBlock(entryJson(e), `Entry ${e.seq}`))}
    </aside>`;
  }

  function header() {
    const r = data.run;
    const live = r && !isTerminal(r.status);
    return html`
      <div class="page-head">
        <h1>${extra?.title ?? 'Run'} <span class="mono id">${data.runId}</span></h1>
        ${r ? statusBadge(r.status) : nothing}
        ${data.state === 'live' ? html`<span class="live">live</span>` : data.state === 'reconnecting' ? html`<span class="live warn">reconnecting</span>` : nothing}
      </div>
      ${extra?.header() ?? nothing}
      ${r ? html`<dl class="facts-grid">
        <div><dt>Workflow</dt><dd>${r.workflowName} <span class="muted">v${r.workflowVersion}</span></dd></div>
        <div><dt>Created</dt><dd title=${when(r.createTime)}>${age(r.createTime)} ago</dd></div>
        <div><dt>Spend</dt><dd>${usd(r.spentUsd)}${r.budgetUsd !== undefined ? html` of ${usd(r.budgetUsd)}` : nothing}</dd></div>
        <div><dt>Entries</dt><dd>${data.partial ? `${data.entries.length} of ${data.total} loaded` : data.entries.length}</dd></div>
        ${r.parentRunId ? html`<div><dt>Parent</dt><dd><a class="mono" href=${link(`runs/${r.parentRunId}`)}>${r.parentRunId.slice(0, 8)}…</a></dd></div>` : nothing}
        ${Object.keys(r.labels).length ? html`<div><dt>Labels</dt><dd>${Object.entries(r.labels).map(([k, v]) => html`<span class="tag">${k}=${v}</span>`)}</dd></div>` : nothing}
      </dl>` : nothing}
      ${data.waitingOn.length && r?.status === RunStatus.SUSPENDED ? html`<p class="waiting">Waiting on ${data.waitingOn.map((w) => html`<span class="pill">${w.kind} ${w.name}</span>`)}
        ${data.waitingOn.some((w) => w.approvalId) ? html` · <a href=${link('approvals')}>decide in the inbox</a>` : nothing}</p>` : nothing}
      ${r?.error ? html`<p class="error">${r.error.name}: ${r.error.message}</p>` : nothing}
      ${r?.output && isTerminal(r.status) ? html`<details><summary>Output</summary>${jsonBlock(json(r.output), 'Run output')}</details>` : nothing}
      <div class="toolbar" role="toolbar" aria-label="Run actions">
        ${canAct ? html`<button ?disabled=${!live} @click=${() => act('cancel')}>Cancel run</button>
          <button ?disabled=${!r || r.status === RunStatus.SUCCEEDED || r.status === RunStatus.RUNNING} @click=${() => act('resume')}>Resume run</button>` : nothing}
        <button @click=${() => void data.readAll().then(() => downloadJournal(data), (err: unknown) => { message = `Export failed: ${errorText(err)}`; rerender(); })} ?disabled=${data.entries.length === 0}>Export journal</button>
        ${message ? html`<span role="status">${message}</span>` : nothing}
      </div>
      ${data.error ? html`<p class="error" role="alert">${data.error}</p>` : nothing}`;
  }

  return {
    title: () => `${extra?.title ?? 'Run'} ${data.runId.slice(0, 8)}`,
    dispose: () => {
      clearInterval(tick);
      data.dispose();
      for (const l of Object.values(lists)) l.dispose();
    },
    template: () => html`
      ${header()}
      <div class="tabs" role="tablist" aria-label="Run views">
        ${TABS.map((t) => html`<button role="tab" id=${`tab-${t}`} aria-selected=${tab === t ? 'true' : 'false'} aria-controls="tabpanel" tabindex=${tab === t ? '0' : '-1'}
          @click=${() => show(t)} @keydown=${(e: KeyboardEvent) => arrows(e, t, show)}>${LABEL[t]}</button>`)}
      </div>
      <div class=${`run-body${details() === nothing ? '' : ' with-details'}`}>
        <section id="tabpanel" role="tabpanel" aria-labelledby=${`tab-${tab}`} class=${`panel tab-${tab}`}>${data.state === 'loading' && !data.error ? html`<p class="muted">Loading…</p>` : body()}</section>
        ${details()}
      </div>`,
  };
}

/** Left and right arrows move between tabs (the WAI-ARIA tabs pattern); Tab moves into the panel. */
function arrows(e: KeyboardEvent, t: Tab, show: (t: Tab) => void): void {
  if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
  e.preventDefault();
  const i = TABS.indexOf(t);
  const next = TABS[(i + (e.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length]!;
  show(next);
  queueMicrotask(() => document.getElementById(`tab-${next}`)?.focus());
}
