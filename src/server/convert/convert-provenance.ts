import { create } from '@bufbuild/protobuf';
import type { AgentProvenance as DomainAgent, ProvenanceModelCall as DomainModelCall, ProvenanceToolResult as DomainToolResult, RunProvenance as DomainRunProvenance } from '../../engine/index.js';
import { UsageSchema } from '../../gen/waymark/v1/run_pb.js';
import {
  AgentProvenanceSchema, ProvenanceModelCallSchema, ProvenanceModelCallStatus, ProvenanceToolResultSchema, ProvenanceToolResultStatus,
  RunProvenanceSchema, RunSpendSchema, type AgentProvenance, type ProvenanceModelCall, type ProvenanceToolResult, type RunProvenance,
} from '../../gen/waymark/v1/run_service_pb.js';
import { optionalValue, valueFromJson } from './convert-json.js';
import { runErrorToProto, runStatusToProto } from './convert-run.js';

/* Provenance (engine/read/run-provenance.ts): domain -> proto, for GetRunProvenance. */

const MODEL_CALL_STATUS: Record<DomainModelCall['status'], ProvenanceModelCallStatus> = {
  ok: ProvenanceModelCallStatus.OK,
  error: ProvenanceModelCallStatus.ERROR,
  in_flight: ProvenanceModelCallStatus.IN_FLIGHT,
};

const TOOL_RESULT_STATUS: Record<DomainToolResult['status'], ProvenanceToolResultStatus> = {
  ok: ProvenanceToolResultStatus.OK,
  error: ProvenanceToolResultStatus.ERROR,
  denied: ProvenanceToolResultStatus.DENIED,
  invalid: ProvenanceToolResultStatus.INVALID,
  in_flight: ProvenanceToolResultStatus.IN_FLIGHT,
  awaiting_approval: ProvenanceToolResultStatus.AWAITING_APPROVAL,
  not_run: ProvenanceToolResultStatus.NOT_RUN,
};

export function runProvenanceToProto(p: DomainRunProvenance): RunProvenance {
  return create(RunProvenanceSchema, {
    runId: p.runId,
    workflowName: p.workflowName,
    status: runStatusToProto(p.status),
    budgetUsd: p.budgetUsd ?? undefined,
    spend: create(RunSpendSchema, { ownUsd: p.spend.ownUsd, childrenUsd: p.spend.childrenUsd, totalUsd: p.spend.totalUsd, pricedCalls: p.spend.pricedCalls }),
    agents: p.agents.map(agentToProto),
    children: p.children.map(runProvenanceToProto),
  });
}

function agentToProto(a: DomainAgent): AgentProvenance {
  return create(AgentProvenanceSchema, {
    scope: a.scope,
    agentType: a.agentType,
    model: a.model,
    answer: a.answer ?? undefined,
    answerSeq: a.answerSeq === null ? undefined : BigInt(a.answerSeq),
    drewOnModelCallSeqs: a.drewOn.modelCalls.map(BigInt),
    drewOnToolResultSeqs: a.drewOn.toolResults.map(BigInt),
    modelCalls: a.modelCalls.map(modelCallToProto),
    toolResults: a.toolResults.map(toolResultToProto),
    costUsd: a.costUsd,
  });
}

function modelCallToProto(m: DomainModelCall): ProvenanceModelCall {
  return create(ProvenanceModelCallSchema, {
    seq: BigInt(m.seq),
    step: m.step,
    model: m.model,
    provider: m.provider ?? '',
    modelId: m.modelId ?? '',
    status: MODEL_CALL_STATUS[m.status],
    finishReason: m.finishReason ?? '',
    usage: m.usage
      ? create(UsageSchema, {
        inputTokens: BigInt(m.usage.inputTokens ?? 0), outputTokens: BigInt(m.usage.outputTokens ?? 0), totalTokens: BigInt(m.usage.totalTokens ?? 0),
      })
      : undefined,
    costUsd: m.costUsd ?? undefined,
    toolCallIds: m.toolCallIds,
  });
}

function toolResultToProto(t: DomainToolResult): ProvenanceToolResult {
  return create(ProvenanceToolResultSchema, {
    toolCallId: t.toolCallId,
    toolName: t.toolName,
    input: valueFromJson(t.input),
    requestedBySeq: BigInt(t.requestedBySeq),
    seq: t.seq === null ? undefined : BigInt(t.seq),
    approvalSeq: t.approvalSeq === null ? undefined : BigInt(t.approvalSeq),
    status: TOOL_RESULT_STATUS[t.status],
    value: optionalValue(t.value),
    error: t.error ? runErrorToProto(t.error) : undefined,
    deniedBy: t.deniedBy ?? '',
  });
}
