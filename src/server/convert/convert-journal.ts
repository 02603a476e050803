import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  EntryStatus, JournalEntrySchema, ModelDeltaKind, ModelDeltaSchema, PayloadRefSchema, RunEventSchema, RunStatusChangeSchema, UsageSchema, type JournalEntry, type RunEvent,
} from '../../gen/waymark/v1/run_pb.js';
import { statusOf } from '../../engine/index.js';
import type { JournalEntry as DomainEntry } from '../../journal/journal-entry.js';
import type { ModelDelta as DomainDelta } from '../../engine/index.js';
import { optionalValue, valueFromJson } from './convert-json.js';
import { runErrorToProto, runStatusToProto } from './convert-run.js';
import { redactSealed } from '../../journal/sealed-payload.js';

/* Journal entries and the events a stream carries: domain -> proto. */

export function entryToProto(entry: DomainEntry): JournalEntry {
  return create(JournalEntrySchema, {
    runId: entry.runId,
    seq: BigInt(entry.seq),
    scope: entry.scope,
    kind: entry.kind,
    name: entry.name,
    contentKey: entry.contentKey,
    occurrence: entry.occurrence,
    status: EntryStatus[entry.status.toUpperCase() as keyof typeof EntryStatus],
    // A secret tool's sealed arguments or result (journal/sealed-payload.ts) never leave the server.
    payload: optionalValue(redactSealed(entry.payload)),
    error: entry.error ? runErrorToProto(entry.error) : undefined,
    refSeq: entry.refSeq === null ? undefined : BigInt(entry.refSeq),
    idempotencyKey: entry.idempotencyKey ?? '',
    dedupeKey: entry.dedupeKey ?? '',
    usage: entry.usage
      ? create(UsageSchema, {
        inputTokens: BigInt(entry.usage.inputTokens ?? 0), outputTokens: BigInt(entry.usage.outputTokens ?? 0),
        totalTokens: BigInt(entry.usage.totalTokens ?? 0),
      })
      : undefined,
    costUsd: entry.costUsd ?? undefined,
    createTime: timestampFromDate(entry.createdAt),
    attempt: entry.attempt ?? 0,
    payloadRef: entry.payloadRef ? create(PayloadRefSchema, { sha256: entry.payloadRef.sha256, sizeBytes: BigInt(entry.payloadRef.sizeBytes) }) : undefined,
  });
}

/** An entry as a stream event: a status entry becomes status_changed, anything else the entry itself. */
export function eventOf(entry: DomainEntry): RunEvent {
  const status = statusOf(entry);
  return create(RunEventSchema, {
    runId: entry.runId,
    seq: BigInt(entry.seq),
    createTime: timestampFromDate(entry.createdAt),
    body: status
      ? {
        case: 'statusChanged',
        value: create(RunStatusChangeSchema, {
          status: runStatusToProto(status.status),
          output: status.status === 'SUCCEEDED' ? valueFromJson(status.output ?? null) : undefined,
          error: status.error ? runErrorToProto(status.error) : undefined,
        }),
      }
      : { case: 'entry', value: entryToProto(entry) },
  });
}

const DELTA_KINDS = { start: ModelDeltaKind.ATTEMPT_START, text: ModelDeltaKind.TEXT, tool_input: ModelDeltaKind.TOOL_INPUT } as const;

/** A model call delta as a stream event: `seq` is its call's running entry (already sent), so a client's seq cursor never moves past an unsent entry. */
export function deltaEventOf(delta: DomainDelta): RunEvent {
  return create(RunEventSchema, {
    runId: delta.runId,
    seq: BigInt(delta.entrySeq),
    createTime: timestampFromDate(delta.createdAt),
    body: {
      case: 'modelDelta',
      value: create(ModelDeltaSchema, {
        offset: BigInt(delta.offset), callSeq: BigInt(delta.entrySeq), attempt: BigInt(delta.attempt), index: delta.index,
        kind: DELTA_KINDS[delta.kind], text: delta.text, toolCallId: delta.toolCallId ?? '', toolName: delta.toolName ?? '',
      }),
    },
  });
}
