import { html, nothing } from 'lit-html';
import { EntryStatus, ProvenanceToolResultStatus, type RunProvenance } from '@waymark-dev/client/browser';
import { duration, json, short, usd } from '../format.js';
import type { Effect, Folded } from '../journal-model.js';
import { jsonBlock } from './parts.js';

/*
 * An agent's run as a conversation: each model call (kind `model`) with its model, tokens, cost
 * and latency (intent to response), what it said and the tool calls it asked for; each tool call
 * with its arguments, its result or error, and the policy that applied (an `ask` tool's
 * approval and who decided it, a `deny`). Tool rows prefer the run's provenance
 * (GetRunProvenance), which ties each result to the model call that asked for it.
 */

interface ModelPayload {
  step?: number; text?: string; model?: string; modelId?: string; provider?: string; finishReason?: string;
  toolCalls?: Array<{ toolName: string; toolCallId: string; input: unknown }>;
}

const MAX = 300;

export function conversation(folded: Folded) {
  const items = folded.effects.filter((e) => e.kind === 'model' || e.kind === 'tool' || (e.kind === 'approval' && e.name.startsWith('tool:')));
  if (items.length === 0) return html`<p class="empty">No model or tool calls in this run.</p>`;
  return html`<ol class="chat" aria-label="Conversation">
    ${items.slice(0, MAX).map((e) => html`<li>${e.kind === 'model' ? modelTurn(e) : e.kind === 'tool' ? toolTurn(e) : policyTurn(e)}</li>`)}
  </ol>${items.length > MAX ? html`<p class="muted">First ${MAX} of ${items.length} calls; the Entries tab has them all.</p>` : nothing}`;
}

function modelTurn(e: Effect) {
  const s = e.spans.at(-1)!;
  const out = s.outcome ?? (s.head.status === EntryStatus.OK ? s.head : undefined);
  const p = (out ? json(out.payload) : json(s.head.payload)) as ModelPayload | null;
  const usage = out?.usage;
  return html`<article class="turn model" aria-label=${`Model call ${e.name}`}>
    <header><strong>${p?.model ?? e.name}</strong>${p?.step !== undefined ? html` · step ${p.step}` : nothing}
      <span class="facts">
        ${usage ? html`<span title="input / output tokens">${usage.inputTokens} → ${usage.outputTokens} tokens</span>` : nothing}
        <span>${usd(out?.costUsd)}</span>
        <span title="intent to response">${s.end !== undefined ? duration(s.end - s.start) : 'in flight'}</span>
        ${p?.finishReason ? html`<span>${p.finishReason}</span>` : nothing}
      </span></header>
    ${p?.text ? html`<p class="said">${p.text}</p>` : nothing}
    ${p?.toolCalls?.length ? html`<ul class="calls">${p.toolCalls.map((c) => html`<li><code>${c.toolName}</code>(${short(c.input, 200)})</li>`)}</ul>` : nothing}
    ${out?.error ? html`<p class="err-text">${out.error.name}: ${out.error.message}</p>` : nothing}
  </article>`;
}

function toolTurn(e: Effect) {
  const s = e.spans.at(-1)!;
  const args = s.head.status === EntryStatus.RUNNING ? json(s.head.payload) : undefined;
  const end = s.outcome ?? (s.head.status !== EntryStatus.RUNNING ? s.head : undefined);
  return html`<article class="turn tool" aria-label=${`Tool call ${e.name}`}>
    <header><strong>${e.name}</strong> <span class=${`pill st-${s.status}`}>${s.status}</span>
      <span class="facts"><span>${s.end !== undefined ? duration(s.end - s.start) : 'in flight'}</span>${e.spans.length > 1 ? html`<span>${e.spans.length} attempts</span>` : nothing}</span></header>
    ${args !== undefined ? html`<div class="kv"><span>arguments</span>${jsonBlock(args, `Arguments of ${e.name}`)}</div>` : nothing}
    ${end?.error ? html`<p class="err-text">${end.error.name}: ${end.error.message}</p>`
      : end ? html`<div class="kv"><span>result</span>${jsonBlock(json(end.payload), `Result of ${e.name}`)}</div>` : nothing}
  </article>`;
}

function policyTurn(e: Effect) {
  const s = e.spans.at(-1)!;
  const p = json(s.head.payload) as { tool?: string; args?: unknown; title?: string } | null;
  return html`<article class="turn policy" aria-label=${`Approval for ${p?.tool ?? e.name}`}>
    <header><strong>policy: ask</strong> · ${p?.title ?? e.name}
      <span class="facts"><span>${s.resolvedBy ?? 'waiting for a decision'}</span>${s.end !== undefined ? html`<span>${duration(s.end - s.start)}</span>` : nothing}</span></header>
    ${p?.args !== undefined ? html`<p class="muted">${short(p.args, 240)}</p>` : nothing}
  </article>`;
}

const TOOL_STATUS: Record<number, string> = {
  [ProvenanceToolResultStatus.OK]: 'ok', [ProvenanceToolResultStatus.ERROR]: 'error', [ProvenanceToolResultStatus.DENIED]: 'denied',
  [ProvenanceToolResultStatus.INVALID]: 'invalid', [ProvenanceToolResultStatus.IN_FLIGHT]: 'in flight',
  [ProvenanceToolResultStatus.AWAITING_APPROVAL]: 'awaiting approval', [ProvenanceToolResultStatus.NOT_RUN]: 'not run',
};

/** Every tool call: arguments, result, policy. From provenance when there is an agent; else from the journal. */
export function toolsTable(folded: Folded, provenance: RunProvenance | undefined) {
  const fromAgents = provenance?.agents.flatMap((a) => a.toolResults.map((t) => ({ agent: a.agentType || a.scope, t }))) ?? [];
  const plain = folded.effects.filter((e) => e.kind === 'tool');
  if (fromAgents.length === 0 && plain.length === 0) return html`<p class="empty">No tool calls in this run.</p>`;
  // A tool result's approval_seq is its approval's suspension or the decision that resolved it.
  const approvals = new Map<number, Effect>();
  for (const e of folded.effects.filter((x) => x.kind === 'approval')) {
    for (const s of e.spans) {
      approvals.set(s.seq, e);
      if (s.outcome) approvals.set(Number(s.outcome.seq), e);
    }
  }
  return html`<div class="table-wrap"><table class="tools">
    <thead><tr><th scope="col">Tool</th><th scope="col">Arguments</th><th scope="col">Result</th><th scope="col">Policy</th></tr></thead>
    <tbody>
      ${fromAgents.length
        ? fromAgents.map(({ agent, t }) => {
            const approval = t.approvalSeq !== undefined ? approvals.get(Number(t.approvalSeq)) : undefined;
            const policy = t.status === ProvenanceToolResultStatus.DENIED ? `denied${t.deniedBy ? ` by ${t.deniedBy}` : ''}`
              : approval ? `ask: ${approval.spans.at(-1)?.resolvedBy ?? 'waiting'}` : 'allow';
            return html`<tr><td><code>${t.toolName}</code><div class="muted">${agent}</div></td>
              <td>${jsonBlock(json(t.input), `Arguments of ${t.toolName}`)}</td>
              <td><span class="pill">${TOOL_STATUS[t.status] ?? '?'}</span>${t.error ? html`<p class="err-text">${t.error.message}</p>` : jsonBlock(json(t.value), `Result of ${t.toolName}`)}</td>
              <td>${policy}</td></tr>`;
          })
        : plain.map((e) => {
            const s = e.spans.at(-1)!;
            const end = s.outcome ?? s.head;
            return html`<tr><td><code>${e.name}</code></td>
              <td>${s.head.status === EntryStatus.RUNNING ? jsonBlock(json(s.head.payload), `Arguments of ${e.name}`) : '—'}</td>
              <td>${end.error ? html`<p class="err-text">${end.error.message}</p>` : jsonBlock(json(end.payload), `Result of ${e.name}`)}</td>
              <td>${end.error?.name === 'ToolApprovalDeniedError' ? 'denied' : 'allow'}</td></tr>`;
          })}
    </tbody></table></div>`;
}
