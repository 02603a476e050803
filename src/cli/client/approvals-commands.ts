import { create } from '@bufbuild/protobuf';
import {
  ApprovalDecision, ApprovalSchema, DecideApprovalResponseSchema, toApprovalState, type Approval, type ApprovalStateName,
} from '@waymark-dev/client';
import { call, list, str, type CommandSpec } from './command-spec.js';
import { EXIT, UsageError } from './exit-codes.js';
import { fields, formatLabels, formatTime, formatValue, table } from './format.js';
import { readJsonArg, readPairs } from './json-input.js';
import type { Output } from './output.js';
import { approvalStateText } from './run-text.js';
import { headerBold } from './runs-commands.js';

/* `waymark approvals …`: the approvals people are asked for, and their decisions. */

const STATES: ApprovalStateName[] = ['PENDING', 'APPROVED', 'DENIED', 'TIMED_OUT', 'CANCELLED'];


function approvalFields(out: Output, a: Approval): string {
  const pairs: Array<[string, string]> = [
    ['approval', a.id],
    ['run', `${a.runId} (seq ${a.seq})`],
    ['workflow', a.workflowName],
    ['title', a.title],
  ];
  if (a.prompt) pairs.push(['prompt', a.prompt]);
  pairs.push(['state', approvalStateText(out, a.state)], ['created', formatTime(a.createTime)]);
  if (a.deadline) pairs.push(['deadline', `${formatTime(a.deadline)}, then ${a.onTimeout === ApprovalDecision.APPROVE ? 'approved' : 'denied'} automatically`]);
  if (a.decidedBy) pairs.push(['decided by', `${a.decidedBy} at ${formatTime(a.decideTime)}`]);
  if (a.comment) pairs.push(['comment', a.comment]);
  if (a.decisionPayload) pairs.push(['payload', formatValue(a.decisionPayload)]);
  if (a.payloadSchema) pairs.push(['payload schema', formatValue(a.payloadSchema, 300)]);
  if (Object.keys(a.labels).length > 0) pairs.push(['labels', formatLabels(a.labels)]);
  return fields(pairs, (k) => out.paint(k, 'bold'));
}

const listApprovals: CommandSpec = {
  group: 'approvals', name: 'list', args: [],
  summary: 'Lists approvals, pending ones unless --state says otherwise, oldest first.',
  options: {
    run: { type: 'string', value: 'RUN', help: 'only approvals of this run' },
    workflow: { type: 'string', value: 'NAME', help: 'only approvals of runs of this workflow' },
    state: { type: 'string', multiple: true, value: 'STATE', help: `only approvals in this state (repeatable; default PENDING): ${STATES.join(', ')}` },
    label: { type: 'string', multiple: true, value: 'K=V', help: 'only approvals of runs carrying this label (repeatable)' },
  },
  examples: ['waymark approvals list --workflow refund', 'waymark approvals list --state APPROVED --state DENIED -o json'],
  async run(inv) {
    const states = list(inv, 'state').map((s) => {
      const name = s.toUpperCase();
      if (!STATES.includes(name as ApprovalStateName)) throw new UsageError(`--state must be one of ${STATES.join(', ')}; got "${s}"`);
      return toApprovalState(name as ApprovalStateName);
    });
    const rows: string[][] = [];
    const filter = { ...call(inv), runId: str(inv, 'run'), workflow: str(inv, 'workflow'), states, labels: readPairs('label', list(inv, 'label')) };
    for await (const a of inv.client().listApprovals(filter)) {
      if (inv.out.json) inv.out.jsonLine(ApprovalSchema, a);
      else rows.push([a.id, a.workflowName, approvalStateText(inv.out, a.state), a.title, formatTime(a.deadline), formatTime(a.createTime)]);
    }
    if (!inv.out.json) inv.out.print(rows.length === 0 ? 'no approvals match' : table(['APPROVAL', 'WORKFLOW', 'STATE', 'TITLE', 'DEADLINE', 'CREATED'], rows, headerBold(inv.out)));
    return EXIT.ok;
  },
};

const getApproval: CommandSpec = {
  group: 'approvals', name: 'get', args: ['<approval>'],
  summary: 'Prints one approval: what is asked, its state, its deadline and who decided it.',
  options: {},
  examples: ['waymark approvals get 01a23172-033b-7f93-91d6-20d4a94c98dd:1'],
  async run(inv) {
    const a = await inv.client().getApproval(inv.args[0]!, call(inv));
    if (inv.out.json) inv.out.jsonLine(ApprovalSchema, a);
    else inv.out.print(approvalFields(inv.out, a));
    return EXIT.ok;
  },
};

const complete: CommandSpec = {
  group: 'approvals', name: 'complete', args: ['<approval>'],
  summary: 'Decides a pending approval: the run resumes with the decision.',
  details: 'An approval already decided (by someone else, a timeout or a cancellation) is refused with exit 4 and nothing is changed.',
  options: {
    decision: { type: 'string', value: 'approve|deny', help: 'the decision (required)' },
    by: { type: 'string', value: 'WHO', help: 'who decides, recorded in the journal (required)' },
    comment: { type: 'string', value: 'TEXT', help: 'a comment, recorded with the decision' },
    payload: { type: 'string', value: 'JSON|@FILE|-', help: "a value for the workflow; must satisfy the approval's payload schema" },
    'request-id': { type: 'string', value: 'ID', help: 'makes the decision idempotent: a repeat with the same id is applied once' },
  },
  examples: ['waymark approvals complete 01a23172-033b-7f93-91d6-20d4a94c98dd:1 --decision approve --by ana --comment "receipt checked"'],
  async run(inv) {
    const decision = str(inv, 'decision');
    if (decision === undefined) throw new UsageError('--decision is required: approve or deny');
    if (decision !== 'approve' && decision !== 'deny') throw new UsageError(`--decision must be approve or deny; got "${decision}"`);
    const by = str(inv, 'by');
    if (!by) throw new UsageError('--by is required: who decides (recorded in the journal)');
    const raw = str(inv, 'payload');
    const d = { ...call(inv), by, comment: str(inv, 'comment'), payload: raw === undefined ? undefined : readJsonArg('payload', raw), requestId: str(inv, 'request-id') };
    const client = inv.client();
    const result = decision === 'approve' ? await client.approve(inv.args[0]!, d) : await client.deny(inv.args[0]!, d);
    if (inv.out.json) {
      inv.out.jsonLine(DecideApprovalResponseSchema, create(DecideApprovalResponseSchema, result));
    } else {
      const again = result.reason === 'duplicate' ? ' (a repeat of an earlier request with this id)' : '';
      inv.out.print(`${decision === 'approve' ? 'approved' : 'denied'}${again}; run ${result.approval.runId} resumes\n${approvalFields(inv.out, result.approval)}`);
    }
    return EXIT.ok;
  },
};

export const APPROVALS_COMMANDS: CommandSpec[] = [listApprovals, getApproval, complete];
