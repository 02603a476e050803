// runtime/: named crash points in the effect path for the chaos tests (WAYMARK_CRASHPOINT).
// Must not change behaviour unless that variable is set: compiled in, inert otherwise.
import { writeSync } from 'node:fs';

/*
 * Crash points (FoundationDB's BUGGIFY, reliability.md §4.0): named places in the effect path where
 * a test can make this process die as abruptly as a power cut. Compiled into production code and
 * inert unless WAYMARK_CRASHPOINT is set, so the chaos tests exercise the binary users run.
 *
 *   WAYMARK_CRASHPOINT=<kind>:<boundary>[:<nth>]    e.g. tool:after-intent:2, model:after-execute
 *
 * `kind` is the effect kind (tool, step, model, ...; `*` for any), `boundary` one of
 * EFFECT_BOUNDARIES, and the process dies with SIGKILL at the nth hit (default 1). Also here, the
 * test-only switch of a negative control (docs/recovery.md "Negative controls").
 */

/** The boundaries of a dispatched effect, in the order they are passed. */
export const EFFECT_BOUNDARIES = ['before-intent', 'after-intent', 'after-execute', 'after-terminal'] as const;
export type EffectBoundary = (typeof EFFECT_BOUNDARIES)[number];

export interface CrashpointSpec {
  kind: string;
  boundary: EffectBoundary;
  nth: number;
}

/** Parses a WAYMARK_CRASHPOINT value; TypeError naming the problem for a malformed one. */
export function parseCrashpoint(value: string): CrashpointSpec {
  const [kind, boundary, nth = '1', ...rest] = value.split(':');
  if (!kind || !boundary || rest.length > 0) throw new TypeError(`WAYMARK_CRASHPOINT="${value}" must be <kind>:<boundary>[:<nth>]`);
  if (!(EFFECT_BOUNDARIES as readonly string[]).includes(boundary)) {
    throw new TypeError(`WAYMARK_CRASHPOINT boundary "${boundary}" must be one of ${EFFECT_BOUNDARIES.join(', ')}`);
  }
  const n = Number(nth);
  if (!Number.isInteger(n) || n < 1) throw new TypeError(`WAYMARK_CRASHPOINT hit number "${nth}" must be a whole number >= 1`);
  return { kind, boundary: boundary as EffectBoundary, nth: n };
}

/** Counts hits of one armed crash point and calls `die` at the nth. */
export class Crashpoints {
  private hits = 0;
  constructor(readonly spec: CrashpointSpec | null, private readonly die: (spec: CrashpointSpec) => void) {}

  hit(kind: string, boundary: EffectBoundary): void {
    const spec = this.spec;
    if (!spec || spec.boundary !== boundary || (spec.kind !== '*' && spec.kind !== kind)) return;
    if (++this.hits === spec.nth) this.die(spec);
  }
}

/** SIGKILL ourselves: no exit handlers, no flushing, no graceful release (what a crash is). */
function kill(spec: CrashpointSpec): void {
  // One synchronous line first, so a test can tell this death from any other.
  writeSync(1, `${JSON.stringify({ level: 'warn', msg: 'crashpoint hit', crashpoint: `${spec.kind}:${spec.boundary}:${spec.nth}` })}\n`);
  process.kill(process.pid, 'SIGKILL');
}

const armed = process.env.WAYMARK_CRASHPOINT ? parseCrashpoint(process.env.WAYMARK_CRASHPOINT) : null;
const points = new Crashpoints(armed, kill);

/** One call per boundary in the effect path (effect-runner.ts); a no-op unless armed. */
export function crashpoint(kind: string, boundary: EffectBoundary): void {
  points.hit(kind, boundary);
}

/**
 * NEGATIVE CONTROL, test only: WAYMARK_UNSAFE_KEY_WITH_EPOCH=1 derives the idempotency key handed
 * to an effect with the lease epoch, the mistake reliability.md §1.1 warns about. A redispatch
 * after a crash then presents a new key and the downstream applies the effect twice; the crash
 * matrix must notice (test/chaos/crash-matrix.test.ts). Never set it anywhere else.
 */
const keyWithEpoch = process.env.WAYMARK_UNSAFE_KEY_WITH_EPOCH === '1';

/**
 * NEGATIVE CONTROL, test only: WAYMARK_UNSAFE_REMOTE_NO_FENCE=1 makes CompleteTask present the
 * task's current holder and token instead of the caller's, so a worker that lost its task has its
 * late result journaled: the mistake the fencing token exists to prevent. The stale-worker chaos
 * test must notice (test/chaos/remote-workers.test.ts). Never set it anywhere else.
 */
export const unsafeRemoteNoFence = process.env.WAYMARK_UNSAFE_REMOTE_NO_FENCE === '1';

/**
 * NEGATIVE CONTROL, test only: WAYMARK_UNSAFE_CONTINUE_TWO_STEPS=1 makes a continue-as-new hand
 * over in two writes, the successor created (without its key) before the run's end is written,
 * with the crash point `continue-as-new:after-intent` between them: the non-atomic hand-over the
 * store's one-step runContinueAsNew exists to prevent. A crash there leaves a successor beside a
 * run that will hand over again; the continue-as-new chaos test must notice
 * (test/chaos/continue-as-new.test.ts). Never set it anywhere else.
 */
export const unsafeContinueTwoSteps = process.env.WAYMARK_UNSAFE_CONTINUE_TWO_STEPS === '1';

export function unsafeTestKey(key: string, epoch: number | undefined): string {
  return keyWithEpoch && epoch !== undefined ? `${key}:epoch-${epoch}` : key;
}
