import { create } from '@bufbuild/protobuf';
import type { EffectComparison as DomainEffectComparison, ComparedEffect, ForkPreview as DomainForkPreview, RunComparison, RunTotals as DomainRunTotals } from '../../engine/index.js';
import {
  CompareRunsResponseSchema, EffectComparisonSchema, EffectDifference, EffectRecordSchema, ForkPreviewSchema, RunTotalsSchema,
  type CompareRunsResponse, type EffectRecord, type ForkPreview, type RunTotals,
} from '../../gen/waymark/v1/run_service_pb.js';
import { optionalValue } from './convert-json.js';
import { previewToProto } from './convert-preview.js';
import { runToProto } from './convert-run.js';

/* ForkRun's preview and CompareRuns' answer: domain -> proto. */

export function forkPreviewToProto(preview: DomainForkPreview): ForkPreview {
  return create(ForkPreviewSchema, {
    forkSeq: BigInt(preview.forkSeq), kept: preview.kept, dropped: preview.dropped, rerun: preview.rerun.map(BigInt),
    keptCostUsd: preview.keptCostUsd, droppedCostUsd: preview.droppedCostUsd, replay: previewToProto(preview.replay),
  });
}

export function comparisonToProto(c: RunComparison): CompareRunsResponse {
  return create(CompareRunsResponseSchema, {
    a: runToProto(c.a), b: runToProto(c.b), forkSeq: c.forkSeq === null ? undefined : BigInt(c.forkSeq),
    effects: c.effects.map(effectToProto), totalsA: totalsToProto(c.totalsA), totalsB: totalsToProto(c.totalsB),
  });
}

function effectToProto(e: DomainEffectComparison) {
  return create(EffectComparisonSchema, {
    scope: e.scope, kind: e.kind, name: e.name, position: e.position, difference: EffectDifference[e.difference], kept: e.kept,
    ...(e.a ? { a: recordToProto(e.a) } : {}), ...(e.b ? { b: recordToProto(e.b) } : {}),
  });
}

function recordToProto(r: ComparedEffect): EffectRecord {
  return create(EffectRecordSchema, {
    seq: BigInt(r.seq), status: r.status, output: optionalValue(r.output), model: r.model, inputTokens: BigInt(r.inputTokens),
    outputTokens: BigInt(r.outputTokens), costUsd: r.costUsd ?? undefined, durationMs: BigInt(r.durationMs),
  });
}

function totalsToProto(t: DomainRunTotals): RunTotals {
  return create(RunTotalsSchema, {
    costUsd: t.costUsd, inputTokens: BigInt(t.inputTokens), outputTokens: BigInt(t.outputTokens), durationMs: BigInt(t.durationMs), effects: t.effects,
  });
}
