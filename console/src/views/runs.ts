import { html, nothing } from 'lit-html';
import type { RunStatus} from '@waymark-dev/client/browser';
import { type Run, type Workflow } from '@waymark-dev/client/browser';
import { link, rerender, setQuery, type View } from '../app.js';
import { age, errorText, ms, RUN_STATUSES, shortId, statusName, usd } from '../format.js';
import { session } from '../session.js';
import { statusBadge } from './parts.js';

/*
 * The runs list: newest first, filtered by status, workflow, label and age, all kept in the URL
 * (?status=suspended&workflow=refund&label=team=payments&since=24h). ListRuns has no change
 * stream, so the list polls its first page every 2 s while the tab is visible. Several runs can
 * be selected and cancelled or resumed at once.
 */

const POLL_MS = 2_000;
const PAGE = 100;
const SINCE: Record<string, number> = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };

interface Filters {
  status: RunStatus[];
  workflow: string;
  labels: Record<string, string>;
  since: string;
}

function readFilters(): Filters {
  const q = new URLSearchParams(location.search);
  const names = new Map(RUN_STATUSES.map((s) => [statusName(s), s]));
  const labels: Record<string, string> = {};
  for (const l of q.getAll('label')) {
    const i = l.indexOf('=');
    if (i > 0) labels[l.slice(0, i)] = l.slice(i + 1);
  }
  return {
    status: (q.get('status') ?? '').split(',').map((s) => names.get(s)).filter((s): s is RunStatus => s !== undefined),
    workflow: q.get('workflow') ?? '',
    labels,
    since: q.get('since') ?? '',
  };
}

function writeFilters(f: Filters): void {
  const q = new URLSearchParams();
  if (f.status.length) q.set('status', f.status.map(statusName).join(','));
  if (f.workflow) q.set('workflow', f.workflow);
  for (const [k, v] of Object.entries(f.labels)) q.append('label', `${k}=${v}`);
  if (f.since) q.set('since', f.since);
  setQuery(q);
}

export function runsView(): View {
  const clients = session()!.clients;
  let filters = readFilters();
  let runs: Run[] = [];
  let nextPage = '';
  let workflows: Workflow[] = [];
  let error = '';
  let loaded = false;
  let message = '';
  const selected = new Set<string>();
  let generation = 0;

  async function load(more = false): Promise<void> {
    const g = ++generation;
    try {
      const r = await clients.runs.listRuns({
        statuses: filters.status, workflow: filters.workflow, labels: filters.labels, pageSize: PAGE, pageToken: more ? nextPage : '',
      });
      if (g !== generation && !more) return;
      const cutoff = filters.since ? Date.now() - (SINCE[filters.since] ?? 0) : 0;
      const page = r.runs.filter((run) => (ms(run.createTime) ?? 0) >= cutoff);
      runs = more ? [...runs, ...page] : mergeFirstPage(runs, page);
      // Newest first: once a page reaches past the cutoff, older pages cannot match.
      nextPage = page.length < r.runs.length ? '' : r.nextPageToken;
      error = '';
    } catch (err) {
      error = errorText(err);
    }
    loaded = true;
    rerender();
  }

  /** A poll refreshes the runs of the first page and keeps the older ones already loaded. */
  function mergeFirstPage(old: Run[], page: Run[]): Run[] {
    if (old.length <= page.length) return page;
    const ids = new Set(page.map((r) => r.id));
    const oldest = ms(page.at(-1)?.createTime) ?? 0;
    return [...page, ...old.filter((r) => !ids.has(r.id) && (ms(r.createTime) ?? 0) <= oldest)];
  }

  function change(e: Event): void {
    const form = (e.target as HTMLElement).closest('form')!;
    const d = new FormData(form);
    const labels: Record<string, string> = {};
    for (const part of String(d.get('label') ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
      const i = part.indexOf('=');
      if (i > 0) labels[part.slice(0, i)] = part.slice(i + 1);
    }
    const status = String(d.get('status') ?? '');
    filters = {
      status: status ? RUN_STATUSES.filter((s) => statusName(s) === status) : [],
      workflow: String(d.get('workflow') ?? ''),
      labels,
      since: String(d.get('since') ?? ''),
    };
    writeFilters(filters);
    selected.clear();
    void load();
  }

  async function batch(action: 'cancel' | 'resume'): Promise<void> {
    const ids = [...selected];
    const results = await Promise.allSettled(ids.map((runId) => action === 'cancel'
      ? clients.runs.cancelRun({ runId, reason: 'cancelled from the web console' })
      : clients.runs.resumeRun({ runId })));
    const failed = results.map((r, i) => (r.status === 'rejected' ? `${shortId(ids[i]!)}: ${errorText(r.reason)}` : '')).filter(Boolean);
    message = `${action === 'cancel' ? 'Cancelled' : 'Resumed'} ${ids.length - failed.length} of ${ids.length}.${failed.length ? ` ${failed.join('; ')}` : ''}`;
    selected.clear();
    await load();
  }

  void load();
  clients.runs.listWorkflows({}).then((r) => {
    workflows = r.workflows;
    rerender();
  }, () => undefined);
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') void load();
  }, POLL_MS);

  const toggle = (id: string) => (e: Event) => {
    if ((e.target as HTMLInputElement).checked) selected.add(id);
    else selected.delete(id);
    rerender();
  };
  const toggleAll = (e: Event) => {
    const on = (e.target as HTMLInputElement).checked;
    for (const r of runs) if (on) selected.add(r.id); else selected.delete(r.id);
    rerender();
  };
  const workflowNames = () => [...new Set(workflows.map((w) => w.name))].sort();
  const labelText = () => Object.entries(filters.labels).map(([k, v]) => `${k}=${v}`).join(', ');

  return {
    title: () => 'Runs',
    dispose: () => clearInterval(timer),
    template: () => html`
      <div class="page-head">
        <h1>Runs</h1>
        <span class="live" title="Refreshed every 2 s">live</span>
      </div>
      <form class="filters" @change=${change} @submit=${(e: Event) => { e.preventDefault(); change(e); }} aria-label="Filter runs">
        <label>Status <select name="status">
          <option value="">any</option>
          ${RUN_STATUSES.map((s) => html`<option value=${statusName(s)} ?selected=${filters.status.includes(s)}>${statusName(s)}</option>`)}
        </select></label>
        <label>Workflow <select name="workflow">
          <option value="">any</option>
          ${[...new Set([...workflowNames(), ...(filters.workflow ? [filters.workflow] : [])])].map((w) => html`<option ?selected=${w === filters.workflow}>${w}</option>`)}
        </select></label>
        <label>Label <input name="label" placeholder="key=value" .value=${labelText()} /></label>
        <label>Created <select name="since">
          <option value="">any time</option>
          ${Object.keys(SINCE).map((k) => html`<option value=${k} ?selected=${filters.since === k}>last ${k}</option>`)}
        </select></label>
      </form>
      <div class="toolbar" role="toolbar" aria-label="Selected runs">
        <span>${selected.size} selected</span>
        <button ?disabled=${selected.size === 0} @click=${() => batch('cancel')}>Cancel selected</button>
        <button ?disabled=${selected.size === 0} @click=${() => batch('resume')}>Resume selected</button>
        ${message ? html`<span role="status">${message}</span>` : nothing}
      </div>
      ${error ? html`<p class="error" role="alert">${error}</p>` : nothing}
      <div class="table-wrap">
      <table class="runs">
        <thead><tr>
          <th scope="col"><input type="checkbox" aria-label="Select all runs" @change=${toggleAll} .checked=${runs.length > 0 && runs.every((r) => selected.has(r.id))} /></th>
          <th scope="col">Run</th><th scope="col">Status</th><th scope="col">Workflow</th><th scope="col">Age</th><th scope="col" class="num">Spend</th><th scope="col">Labels</th>
        </tr></thead>
        <tbody>
          ${runs.map((r) => html`<tr>
            <td><input type="checkbox" aria-label=${`Select run ${r.id}`} .checked=${selected.has(r.id)} @change=${toggle(r.id)} /></td>
            <td><a class="mono" href=${link(`runs/${r.id}`)} title=${r.id}>${shortId(r.id)}</a></td>
            <td>${statusBadge(r.status)}</td>
            <td>${r.workflowName} <span class="muted">v${r.workflowVersion}</span></td>
            <td title=${new Date(ms(r.createTime) ?? 0).toISOString()}>${age(r.createTime)}</td>
            <td class="num">${usd(r.spentUsd)}${r.budgetUsd !== undefined ? html` <span class="muted">/ ${usd(r.budgetUsd)}</span>` : nothing}</td>
            <td>${Object.entries(r.labels).map(([k, v]) => html`<span class="tag">${k}=${v}</span>`)}</td>
          </tr>`)}
        </tbody>
      </table>
      </div>
      ${loaded && runs.length === 0 && !error ? html`<p class="empty">No runs match. Start one with <code>waymark runs start</code>.</p>` : nothing}
      ${nextPage ? html`<button class="more" @click=${() => load(true)}>Load older runs</button>` : nothing}`,
  };
}
