import { html } from 'lit-html';
import type { ApprovalState, RunStatus } from '@waymark-dev/client/browser';
import { approvalStateName } from '@waymark-dev/client/browser';
import { statusName } from '../format.js';

/** Small pieces shared by pages. */

export function statusBadge(s: RunStatus) {
  const name = statusName(s);
  return html`<span class=${`badge s-${name}`}>${name}</span>`;
}

export function approvalBadge(s: ApprovalState) {
  const name = approvalStateName(s).toLowerCase();
  return html`<span class=${`badge a-${name}`}>${name.replace('_', ' ')}</span>`;
}

export function jsonBlock(value: unknown, label: string) {
  return html`<pre class="json" tabindex="0" aria-label=${label}>${value === undefined ? '—' : JSON.stringify(value, null, 2)}</pre>`;
}
