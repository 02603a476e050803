import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * No EventEmitter of src/ emits an `error` event. Node throws an `error` event nobody listens to,
 * so a component reporting a failed store call that way killed its process while PostgreSQL
 * restarted (DueTimers, then the schedule ticker: test/chaos/postgres-restart.test.ts). Failures
 * are reported as `failed` (or any other name) and logged.
 */

const EMITS_ERROR = /\.emit\(\s*['"`]error['"`]/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'gen' ? [] : sources(p);
    return /\.(ts|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

describe('error events', () => {
  it('no file under src/ emits an `error` event', () => {
    const offenders = sources('src').filter((f) => EMITS_ERROR.test(readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('negative control: the check sees an emitted error event', () => {
    expect(EMITS_ERROR.test("this.events.emit('error', { error });")).toBe(true);
    expect(EMITS_ERROR.test("this.events.emit('failed', { error });")).toBe(false);
  });
});
