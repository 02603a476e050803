import { create } from '@bufbuild/protobuf';
import type { ReplayPreview } from '../../engine/index.js';
import { ResumeOutcome, ResumePreviewItemSchema, ResumePreviewSchema, type ResumePreview } from '../../gen/waymark/v1/run_pb.js';

/* ResumeRun's dry-run preview: domain -> proto. */

export function previewToProto(preview: ReplayPreview): ResumePreview {
  return create(ResumePreviewSchema, {
    hits: preview.hits,
    misses: preview.misses,
    skipped: preview.skipped,
    reruns: preview.reruns,
    orphaned: preview.orphaned,
    invalidResolutions: preview.invalidResolutions,
    items: preview.items.map((item) => create(ResumePreviewItemSchema, {
      outcome: ResumeOutcome[item.outcome],
      seq: item.seq === null ? undefined : BigInt(item.seq),
      scope: item.scope,
      kind: item.kind,
      name: item.name,
      detail: item.detail,
    })),
  });
}
