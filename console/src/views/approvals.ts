import { html, nothing } from 'lit-html';
import { fromJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { ApprovalDecision, ApprovalState, type Approval } from '@waymark-dev/client/browser';
import { link, rerender, type View } from '../app.js';
import { age, errorText, json, ms, shortId, when } from '../format.js';
import { session } from '../session.js';
import { approvalBadge, jsonBlock } from './parts.js';
import { schemaFields, readSchemaFields } from './schema-form.js';

/*
 * The approvals inbox: every pending approval the key can see, across runs (polled every 3 s),
 * with what is asked, the tool and its arguments for a tool's `ask` policy, the deadline and what
 * happens at it; decided with the approval's schema (a form drawn from it) and a comment. The
 * first decision wins: a reviewer who decides second is told who decided, how and when. Recently
 * decided approvals are listed below, with who and when.
 */

const POLL_MS = 3_000;
const WHO = 'waymark.console.reviewer';

interface ToolAsk { tool: string; args: unknown }

export function approvalsView(): View {
  const clients = session()!.clients;
  let pending: Approval[] = [];
  let decided: Approval[] = [];
  let error = '';
  let loaded = false;
  const outcome = new Map<string, { text: string; lost: boolean }>();
  const tools = new Map<string, ToolAsk | null>();
  const busy = new Set<string>();
  const titles = new Map<string, string>();
  let reviewer = localStorage.getItem(WHO) ?? '';

  async function load(): Promise<void> {
    try {
      const [p, d] = await Promise.all([
        clients.signals.listApprovals({ states: [ApprovalState.PENDING], pageSize: 100 }),
        clients.signals.listApprovals({ states: [ApprovalState.APPROVED, ApprovalState.DENIED, ApprovalState.TIMED_OUT], pageSize: 20 }),
      ]);
      pending = p.approvals;
      decided = d.approvals.sort((a, b) => (ms(b.decideTime) ?? 0) - (ms(a.decideTime) ?? 0));
      error = '';
      for (const a of pending) if (!tools.has(a.id)) void loadTool(a);
    } catch (err) {
      error = errorText(err);
    }
    loaded = true;
    rerender();
  }

  /** A tool's `ask` approval: its journal entry names the tool and holds the arguments. */
  async function loadTool(a: Approval): Promise<void> {
    tools.set(a.id, null);
    try {
      const r = await clients.runs.getJournal({ runId: a.runId, afterSeq: a.seq - 1n, pageSize: 1 });
      const p = json(r.entries[0]?.payload) as { tool?: string; args?: unknown } | null;
      if (p && typeof p === 'object' && typeof p.tool === 'string') tools.set(a.id, { tool: p.tool, args: p.args });
      rerender();
    } catch {
      // The approval is still decidable without its arguments.
    }
  }

  async function decide(a: Approval, approve: boolean, form: HTMLFormElement): Promise<void> {
    const d = new FormData(form);
    const by = String(d.get('by') ?? '').trim();
    if (!by) {
      outcome.set(a.id, { text: 'Say who you are: your name is recorded with the decision.', lost: true });
      rerender();
      return;
    }
    reviewer = by;
    localStorage.setItem(WHO, by);
    busy.add(a.id);
    titles.set(a.id, a.title || 'Approval');
    rerender();
    try {
      const fields = readSchemaFields(json(a.payloadSchema), form);
      const r = await clients.signals.decideApproval({
        id: a.id, approve, by, comment: String(d.get('comment') ?? ''), requestId: crypto.randomUUID(),
        ...(fields ? { payload: fromJson(ValueSchema, fields) } : {}),
      });
      const w = r.approval;
      outcome.set(a.id, r.applied
        ? { text: `You ${approve ? 'approved' : 'denied'} it. The run resumes.`, lost: false }
        : { text: `Already decided by ${w?.decidedBy || 'someone else'}: ${verdict(w)} at ${when(w?.decideTime)}${w?.comment ? ` (“${w.comment}”)` : ''}.`, lost: true });
    } catch (err) {
      outcome.set(a.id, { text: `The decision failed: ${errorText(err)}`, lost: true });
    }
    busy.delete(a.id);
    await load();
  }

  void load();
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') void load();
  }, POLL_MS);

  const card = (a: Approval) => {
    const t = tools.get(a.id);
    const schema = json(a.payloadSchema);
    const o = outcome.get(a.id);
    return html`<article class="card approval" aria-labelledby=${`ap-${a.seq}-${a.runId}`}>
      <header>
        <h2 id=${`ap-${a.seq}-${a.runId}`}>${a.title || 'Approval'}</h2>
        ${approvalBadge(a.state)}
      </header>
      <p class="muted">${a.workflowName} · run <a class="mono" href=${link(`runs/${a.runId}`)}>${shortId(a.runId)}</a> · asked ${age(a.createTime)} ago</p>
      ${a.prompt && !t ? html`<p class="prompt">${a.prompt}</p>` : nothing}
      ${t ? html`<div class="kv"><span>tool</span><code>${t.tool}</code></div><div class="kv"><span>arguments</span>${jsonBlock(t.args, `Arguments of ${t.tool}`)}</div>` : nothing}
      <p class="deadline">${a.deadline ? html`Deadline ${when(a.deadline)}; then <strong>${a.onTimeout === ApprovalDecision.APPROVE ? 'approved' : 'denied'}</strong> by default.` : 'No deadline.'}</p>
      ${a.state === ApprovalState.PENDING ? html`
        <form class="decide" @submit=${(e: SubmitEvent) => { e.preventDefault(); const approve = (e.submitter as HTMLButtonElement | null)?.value === 'approve'; void decide(a, approve, e.target as HTMLFormElement); }}>
          ${schemaFields(schema, a.id)}
          <label>Comment <textarea name="comment" rows="2"></textarea></label>
          <label>Your name <input name="by" autocomplete="name" .value=${reviewer} required /></label>
          <div class="buttons">
            <button type="submit" name="decision" value="approve" class="primary" ?disabled=${busy.has(a.id)}>Approve</button>
            <button type="submit" name="decision" value="deny" class="danger" ?disabled=${busy.has(a.id)}>Deny</button>
          </div>
        </form>` : nothing}
      ${o ? html`<p class=${o.lost ? 'error' : 'ok'}>${o.text}</p>` : nothing}
    </article>`;
  };

  // A decided approval leaves the pending list: what happened to it stays on the page, at the top.
  const gone = () => [...outcome.entries()].filter(([id]) => !pending.some((p) => p.id === id));

  return {
    title: () => 'Approvals',
    dispose: () => clearInterval(timer),
    template: () => html`
      <div class="page-head"><h1>Approvals</h1><span class="live" title="Refreshed every 3 s">live</span>
        <span class="muted">${pending.length} pending</span></div>
      ${error ? html`<p class="error" role="alert">${error}</p>` : nothing}
      <div role="status">${gone().map(([id, o]) => html`<p class=${o.lost ? 'notice error' : 'notice ok'}>${titles.get(id) ?? shortId(id)}: ${o.text}</p>`)}</div>
      ${loaded && pending.length === 0 && !error ? html`<p class="empty">Nothing waits for a decision.</p>` : nothing}
      <div class="approvals">${pending.map(card)}</div>
      <h2>Decided recently</h2>
      <div class="table-wrap"><table>
        <thead><tr><th scope="col">Approval</th><th scope="col">Run</th><th scope="col">Decision</th><th scope="col">By</th><th scope="col">When</th><th scope="col">Comment</th></tr></thead>
        <tbody>${decided.map((a) => html`<tr><td>${a.title}</td><td><a class="mono" href=${link(`runs/${a.runId}`)}>${shortId(a.runId)}</a></td>
          <td>${approvalBadge(a.state)}</td><td>${a.decidedBy || '—'}</td><td>${when(a.decideTime)}</td><td>${a.comment}</td></tr>`)}</tbody>
      </table></div>`,
  };
}

function verdict(a: Approval | undefined): string {
  if (!a) return 'decided';
  return { [ApprovalState.APPROVED]: 'approved', [ApprovalState.DENIED]: 'denied', [ApprovalState.TIMED_OUT]: 'timed out', [ApprovalState.CANCELLED]: 'cancelled' }[a.state as number] ?? 'decided';
}
