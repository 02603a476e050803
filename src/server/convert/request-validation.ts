import { randomUUID } from 'node:crypto';
import type { Duration, Value } from '@bufbuild/protobuf/wkt';
import { UnstorableValueError, unstorableReason, WaymarkError, type UnstorableProblem } from '../../journal/errors.js';
import { MAX_JSON_DEPTH, MAX_RUN_TIMEOUT_MS, runTimeoutProblem } from '../../journal/limits.js';
import type { Json } from '../../journal/run.js';
import type { FieldViolation } from '../../engine/index.js';
import { isRunId } from '../../store/run-id.js';
import { assertJsonStorable, textProblem } from '../../store/write-checks.js';
import { jsonFromValue, ValueNotJsonError } from './convert-json.js';

/*
 * Request checks every route runs before it calls the engine, so a malformed request is refused
 * with every problem at once (BadRequest field violations, snake_case proto field names) and
 * nothing is written. The rules are in docs/api.md "Validation".
 */

/**
 * A request that fails validation; error-mapping.ts answers INVALID_ARGUMENT with its violations.
 * The reason is INVALID_REQUEST, or the storage reason (NUL_CHARACTER, UNPAIRED_SURROGATE) when
 * every violation is a character the journal cannot store, as the error table says for labels.
 */
export class InvalidRequestError extends WaymarkError {
  readonly reason: string;
  constructor(readonly violations: FieldViolation[], reason = 'INVALID_REQUEST') {
    super(`the request is invalid: ${violations.map((v) => `${v.field}: ${v.description}`).join('; ')}`);
    this.reason = reason;
  }
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const NAMESPACE = /^[a-z0-9][a-z0-9-]{0,62}$/;
const WORKFLOW = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/;
// NUL and other C0 controls: PostgreSQL text refuses NUL, and the rest only hide mistakes in logs.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Lengths are counted in Unicode code points (an emoji is one), as a person counts characters. */
export const MAX_LABELS = 64;
export const MAX_LABEL_VALUE = 256;
export const MAX_KEY_LENGTH = 256;
export const MAX_TEXT_LENGTH = 4096;

/** The largest seq, attempt or fencing token a request may name: they are 32-bit integers in the store. */
export const MAX_INT32 = 2_147_483_647;

/** Page sizes per listing: 0 asks for the default, larger values are clamped to the maximum. */
export const PAGE_SIZES = { runs: { default: 50, max: 1000 }, journal: { default: 100, max: 1000 }, approvals: { default: 50, max: 1000 }, schedules: { default: 50, max: 1000 } };

/** The length of `text` in code points; a string is never longer in code points than in UTF-16 units. */
export function codePoints(text: string): number {
  if (text.length <= 1) return text.length;
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Collects violations while reading a request; `done()` throws them all at once. */
export class RequestCheck {
  readonly violations: FieldViolation[] = [];
  /** The storage problem of each violation that is one (a NUL or a lone surrogate in text). */
  private readonly unstorable = new Map<FieldViolation, UnstorableProblem>();

  constructor(private readonly defaultNamespace: string) {}

  fail(field: string, description: string): void {
    this.violations.push({ field, description });
  }

  done(): void {
    if (this.violations.length === 0) return;
    const problems = new Set(this.violations.map((v) => this.unstorable.get(v)));
    const only = problems.size === 1 ? [...problems][0] : undefined;
    throw new InvalidRequestError(this.violations, only ? unstorableReason(only) : 'INVALID_REQUEST');
  }

  /** A character PostgreSQL text cannot hold is a violation of its own kind (NUL_CHARACTER, UNPAIRED_SURROGATE). */
  private storableText(field: string, value: string): boolean {
    const problem = textProblem(value);
    if (problem === null) return true;
    const violation = { field, description: new UnstorableValueError(field, problem).message };
    this.violations.push(violation);
    this.unstorable.set(violation, problem);
    return false;
  }

  namespace(value: string): string {
    if (value === '') return this.defaultNamespace;
    if (!NAMESPACE.test(value)) this.fail('namespace', 'must be 1-63 lowercase letters, digits or "-", starting with a letter or digit');
    return value;
  }

  runId(field: string, value: string, options: { required?: boolean } = {}): string {
    if (value === '') {
      if (options.required ?? true) this.fail(field, 'is required');
    } else if (!isRunId(value)) {
      this.fail(field, 'must be a run id (a UUID as StartRun returns it)');
    }
    return value;
  }

  workflow(field: string, value: string, options: { required?: boolean } = {}): string {
    if (value === '') {
      if (options.required ?? true) this.fail(field, 'is required');
    } else if (!WORKFLOW.test(value)) {
      this.fail(field, 'must be a workflow name: 1-128 letters, digits, ".", "_" or "-"');
    }
    return value;
  }

  /** A caller-chosen key or name (idempotency key, signal name or id, request id). */
  key(field: string, value: string, options: { required?: boolean } = {}): string {
    if (value === '') {
      if (options.required) this.fail(field, 'is required');
    } else if (this.storableText(field, value) && (codePoints(value) > MAX_KEY_LENGTH || CONTROL.test(value))) {
      this.fail(field, `must be at most ${MAX_KEY_LENGTH} characters with no control characters`);
    }
    return value;
  }

  /** Free text (a comment, a reason, a name of who decided). */
  text(field: string, value: string, options: { required?: boolean; max?: number } = {}): string {
    const max = options.max ?? MAX_TEXT_LENGTH;
    if (value === '' && options.required) this.fail(field, 'is required');
    else if (this.storableText(field, value) && codePoints(value) > max) this.fail(field, `must be at most ${max} characters`);
    return value;
  }

  labels(field: string, labels: Record<string, string>): Record<string, string> {
    const entries = Object.entries(labels);
    if (entries.length > MAX_LABELS) this.fail(field, `at most ${MAX_LABELS} labels`);
    for (const [k, v] of entries) {
      if (this.storableText(`${field}[${k}]`, k) && !LABEL_KEY.test(k)) this.fail(`${field}[${k}]`, 'a label key is 1-63 letters, digits, ".", "_", "/" or "-", starting with a letter or digit');
      if (this.storableText(`${field}[${k}]`, v) && (codePoints(v) > MAX_LABEL_VALUE || CONTROL.test(v))) {
        this.fail(`${field}[${k}]`, `a label value is at most ${MAX_LABEL_VALUE} characters with no control characters`);
      }
    }
    return labels;
  }

  pageSize(field: string, value: number, sizes: { default: number; max: number }): number {
    if (value < 0) {
      this.fail(field, 'must not be negative (0 asks for the default)');
      return sizes.default;
    }
    return value === 0 ? sizes.default : Math.min(value, sizes.max);
  }

  /** An int64 seq cursor: -1 (or unset) means "from the start". */
  afterSeq(field: string, value: bigint | undefined): number {
    if (value === undefined) return -1;
    if (value < -1n || value > 2_147_483_647n) {
      this.fail(field, 'must be -1 (from the start) or the seq of an entry');
      return -1;
    }
    return Number(value);
  }

  /** A delta offset to resume after (StreamRunEvents after_delta_offset): -1 or an offset. */
  afterOffset(field: string, value: bigint | undefined): number {
    if (value === undefined) return -1;
    if (value < -1n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
      this.fail(field, 'must be -1 (from the first delta) or the offset of a delta');
      return -1;
    }
    return Number(value);
  }

  /**
   * A run timeout (google.protobuf.Duration) in whole milliseconds, a fraction rounded up; null when
   * unset. Zero, negative, malformed (seconds and nanos of opposite signs, nanos out of range) and
   * longer than MAX_RUN_TIMEOUT_MS are violations.
   */
  runTimeout(field: string, value: Duration | undefined): number | null {
    if (value === undefined) return null;
    const { seconds, nanos } = value;
    if (!Number.isInteger(nanos) || nanos <= -1_000_000_000 || nanos >= 1_000_000_000 || (seconds > 0n && nanos < 0) || (seconds < 0n && nanos > 0)) {
      this.fail(field, 'is not a valid duration (nanos must be within ±999,999,999 and have the sign of seconds)');
      return null;
    }
    if (seconds < 0n || (seconds === 0n && nanos <= 0)) {
      this.fail(field, 'must be a positive duration; leave it unset for the workflow\'s default');
      return null;
    }
    if (seconds > BigInt(MAX_RUN_TIMEOUT_MS / 1000)) {
      this.fail(field, `must be at most ${MAX_RUN_TIMEOUT_MS / 86_400_000} days; leave it unset for the workflow's default`);
      return null;
    }
    const ms = Number(seconds) * 1000 + Math.ceil(nanos / 1_000_000);
    const problem = runTimeoutProblem(ms);
    if (problem) {
      this.fail(field, problem);
      return null;
    }
    return ms;
  }

  /** A google.protobuf.Value field as JSON (null when unset); a malformed one is a violation. */
  json(field: string, value: Value | undefined): Json {
    try {
      return jsonFromValue(value, field);
    } catch (err) {
      if (!(err instanceof ValueNotJsonError)) throw err;
      this.fail(err.field, err.description);
      return null;
    }
  }

  /**
   * A key a JavaScript consumer of the value would trip over (`constructor`, `prototype`; a
   * `__proto__` is refused by json() already) anywhere in `value`: a violation naming where.
   * Iterative: the value's depth is bounded by json(), but this walks any Json it is given.
   */
  forbiddenKeys(field: string, value: Json): void {
    const stack: { value: Json; at: string }[] = [{ value, at: field }];
    while (stack.length > 0) {
      const { value: v, at } = stack.pop()!;
      if (v === null || typeof v !== 'object') continue;
      if (Array.isArray(v)) {
        v.forEach((item, i) => stack.push({ value: item, at: `${at}[${i}]` }));
        continue;
      }
      for (const key of Object.keys(v)) {
        if (FORBIDDEN_KEYS.has(key)) this.fail(`${at}.${key}`, `the key "${key}" is not allowed (it names a JavaScript object's internals); rename it`);
        else stack.push({ value: v[key]!, at: `${at}.${key}` });
      }
    }
  }

  /** A caller-chosen id that may be omitted: then a fresh one, and the call is not idempotent. */
  idOrGenerated(field: string, value: string): string {
    return this.key(field, value) || `generated:${randomUUID()}`;
  }

  /**
   * A JSON payload the journal can store: no NUL character or lone surrogate (UnstorableValueError
   * naming where). Its size is checked where its stored form is built (the store for an input, the
   * engine for a signal's or decision's resolution entry), once, against the request field.
   */
  payload(field: string, value: Json): Json {
    assertJsonStorable(field, value, Number.POSITIVE_INFINITY, MAX_JSON_DEPTH);
    return value;
  }
}
