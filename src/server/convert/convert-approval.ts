import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { APPROVAL_STATES, type ApprovalState as DomainState, type ApprovalView } from '../../engine/index.js';
import { ApprovalDecision, ApprovalSchema, ApprovalState, type Approval } from '../../gen/waymark/v1/run_pb.js';
import { optionalValue, valueFromJson } from './convert-json.js';

/* Approvals: domain view -> proto, and the state filter of ListApprovals. */

export function approvalToProto(a: ApprovalView): Approval {
  return create(ApprovalSchema, {
    id: a.id,
    runId: a.runId,
    seq: BigInt(a.seq),
    workflowName: a.workflowName,
    title: a.title,
    prompt: a.description ?? '',
    payloadSchema: valueFromJson(a.schema),
    state: ApprovalState[a.state],
    decidedBy: a.decidedBy ?? '',
    decidedByKeyId: a.decidedByKeyId ?? '',
    comment: a.comment ?? '',
    decisionPayload: optionalValue(a.decision),
    decideTime: a.decidedAt ? timestampFromDate(a.decidedAt) : undefined,
    deadline: a.deadlineAt ? timestampFromDate(a.deadlineAt) : undefined,
    onTimeout: a.onTimeout === 'approve' ? ApprovalDecision.APPROVE : a.onTimeout === 'deny' ? ApprovalDecision.DENY : ApprovalDecision.UNSPECIFIED,
    labels: a.labels,
    createTime: timestampFromDate(a.createdAt),
  });
}

/** A state filter from the wire: UNSPECIFIED matches nothing; `invalid` lists unknown values. */
export function approvalStatesFromProto(states: ApprovalState[]): { states: DomainState[]; invalid: number[]; onlyUnspecified: boolean } {
  const out: DomainState[] = [];
  const invalid: number[] = [];
  for (const s of states) {
    if (s === ApprovalState.UNSPECIFIED) continue;
    const name = ApprovalState[s] as DomainState | undefined;
    if (name !== undefined && APPROVAL_STATES.includes(name)) out.push(name);
    else invalid.push(s);
  }
  return { states: out, invalid, onlyUnspecified: states.length > 0 && out.length === 0 && invalid.length === 0 };
}
