import { html, nothing, svg } from 'lit-html';
import type { FlowVersion, JournalEntry, Run } from '@waymark-dev/client/browser';
import { link, rerender, setQuery, type View } from '../app.js';
import { age, errorText, json, shortId, statusName } from '../format.js';
import { layoutFlow, NODE_H, NODE_W } from '../flow-layout.js';
import { session } from '../session.js';
import { statusBadge } from './parts.js';

/*
 * Flows: the registered flows, one drawn as a graph (SVG), and for a run of it (?run=) the nodes it
 * entered and the edges it took, read from the run's `flow.node` entries ({ node, from }: the edge
 * taken) and `flow.branch` decisions (docs/flows.md "Running a flow").
 */

export function flowsView(name: string | undefined): View {
  const clients = session()!.clients;
  let flows: FlowVersion[] = [];
  let flow: FlowVersion | undefined;
  let runs: Run[] = [];
  let runId = new URLSearchParams(location.search).get('run') ?? '';
  let taken = { nodes: new Map<string, number>(), edges: new Set<string>() };
  let error = '';

  async function load(): Promise<void> {
    try {
      flows = (await clients.flows.listFlows({})).flows;
      if (name) {
        flow = (await clients.flows.getFlow({ name })).flow;
        runs = (await clients.runs.listRuns({ workflow: name, pageSize: 20 })).runs;
        if (runId) await loadRun(runId);
      }
    } catch (err) {
      error = errorText(err);
    }
    rerender();
  }

  async function loadRun(id: string): Promise<void> {
    runId = id;
    const q = new URLSearchParams(location.search);
    if (id) q.set('run', id);
    else q.delete('run');
    setQuery(q);
    taken = { nodes: new Map(), edges: new Set() };
    if (!id) return rerender();
    const entries: JournalEntry[] = [];
    let token = '';
    do {
      const r = await clients.runs.getJournal({ runId: id, pageSize: 1000, pageToken: token });
      entries.push(...r.entries);
      token = r.nextPageToken;
    } while (token);
    for (const e of entries) {
      if (e.kind !== 'emit' || e.name !== 'flow.node') continue;
      const p = json(e.payload) as { node?: string; from?: string } | null;
      if (!p?.node) continue;
      taken.nodes.set(p.node, (taken.nodes.get(p.node) ?? 0) + 1);
      if (p.from) taken.edges.add(`${p.from}->${p.node}`);
    }
    rerender();
  }

  void load();

  function graph(f: FlowVersion) {
    const def = f.flow!;
    const lay = layoutFlow(def);
    const edge = (from: string, to: string, condition: string, i: number) => {
      const a = lay.at.get(from);
      const b = lay.at.get(to);
      if (!a || !b) return nothing;
      const x1 = a.x + NODE_W;
      const y1 = a.y + NODE_H / 2;
      const x2 = b.x;
      const y2 = b.y + NODE_H / 2;
      const back = x2 <= a.x;
      const d = back
        ? `M ${a.x + NODE_W / 2} ${a.y + NODE_H} C ${a.x + NODE_W / 2} ${a.y + NODE_H + 40}, ${b.x + NODE_W / 2} ${b.y + NODE_H + 40}, ${b.x + NODE_W / 2} ${b.y + NODE_H}`
        : `M ${x1} ${y1} C ${x1 + 35} ${y1}, ${x2 - 35} ${y2}, ${x2} ${y2}`;
      const on = taken.edges.has(`${from}->${to}`);
      return svg`<g class=${`edge${on ? ' taken' : ''}`}><path d=${d} marker-end=${on ? 'url(#arrow-taken)' : 'url(#arrow)'}><title>${from} → ${to}${condition ? ` if ${condition}` : ''}${on ? ' (taken)' : ''}</title></path>
        ${condition ? svg`<text x=${(x1 + x2) / 2} y=${(y1 + y2) / 2 - 8 - (i % 2) * 12} class="cond">${condition.length > 22 ? `${condition.slice(0, 21)}…` : condition}</text>` : nothing}</g>`;
    };
    return html`<figure class="flow-graph">
      <svg viewBox=${`0 0 ${lay.width} ${lay.height + 40}`} width=${lay.width} height=${lay.height + 40} role="img" aria-label=${`Graph of flow ${def.name}: ${def.nodes.length} nodes, ${def.edges.length} edges${runId ? `, ${taken.nodes.size} nodes taken by run ${runId}` : ''}`}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrow" /></marker>
          <marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrow taken" /></marker>
        </defs>
        ${def.edges.map((e, i) => edge(e.from, e.to, e.condition, i))}
        ${lay.nodes.map((n) => {
          const visits = taken.nodes.get(n.id) ?? 0;
          return svg`<g class=${`node k-${n.kind}${visits ? ' taken' : ''}${n.id === def.start ? ' start' : ''}`} transform=${`translate(${n.x} ${n.y})`}>
            <rect width=${NODE_W} height=${NODE_H} rx="8" />
            <text x="10" y="18" class="nid">${n.id.length > 18 ? `${n.id.slice(0, 17)}…` : n.id}</text>
            <text x="10" y="34" class="nkind">${n.kind}${visits > 1 ? ` · ${visits}×` : ''}</text>
          </g>`;
        })}
      </svg>
      <figcaption class="muted">${def.description}${runId ? html` · highlighted: what run <a class="mono" href=${link(`runs/${runId}`)}>${shortId(runId)}</a> took` : nothing}</figcaption>
    </figure>`;
  }

  return {
    title: () => (name ? `Flow ${name}` : 'Flows'),
    template: () => html`
      <div class="page-head"><h1>${name ? html`Flow <span class="mono">${name}</span>` : 'Flows'}</h1>
        ${flow ? html`<span class="muted">version ${flow.version}</span>` : nothing}</div>
      ${error ? html`<p class="error" role="alert">${error}</p>` : nothing}
      ${name && flow ? html`
        <label>Show a run <select @change=${(e: Event) => void loadRun((e.target as HTMLSelectElement).value)}>
          <option value="">none</option>
          ${runs.map((r) => html`<option value=${r.id} ?selected=${r.id === runId}>${shortId(r.id)} · ${statusName(r.status)} · ${age(r.createTime)} ago</option>`)}
        </select></label>
        ${graph(flow)}
        <h2>Runs of this flow</h2>
        <ul class="plain">${runs.map((r) => html`<li><a class="mono" href=${link(`flows/${name}`, { run: r.id })} @click=${(e: Event) => { e.preventDefault(); void loadRun(r.id); }}>${shortId(r.id)}</a> ${statusBadge(r.status)} ${age(r.createTime)} ago</li>`)}</ul>`
      : html`
        ${flows.length === 0 && !error ? html`<p class="empty">No flows registered. <code>waymark flows register flow.yaml</code> adds one (docs/flows.md).</p>` : nothing}
        <ul class="cards">${flows.map((f) => html`<li class="card"><a href=${link(`flows/${f.flow?.name ?? ''}`)}><strong>${f.flow?.name}</strong></a>
          <span class="muted">v${f.version} · ${f.flow?.nodes.length} nodes · registered ${age(f.createTime)} ago</span><p>${f.flow?.description}</p></li>`)}</ul>`}`,
  };
}
