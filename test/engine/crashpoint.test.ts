import { describe, expect, it } from 'vitest';
import { Crashpoints, parseCrashpoint, type CrashpointSpec } from '../../src/engine/runtime/crashpoint.js';

// The parsing and counting of WAYMARK_CRASHPOINT; the kill itself is exercised by test/chaos/.
describe('crash points', () => {
  it('parses kind:boundary[:nth] and refuses anything else', () => {
    expect(parseCrashpoint('tool:after-intent:2')).toEqual({ kind: 'tool', boundary: 'after-intent', nth: 2 });
    expect(parseCrashpoint('*:before-intent')).toEqual({ kind: '*', boundary: 'before-intent', nth: 1 });
    expect(() => parseCrashpoint('tool')).toThrow(TypeError);
    expect(() => parseCrashpoint('tool:sometime')).toThrow(/boundary/);
    expect(() => parseCrashpoint('tool:after-intent:0')).toThrow(/hit number/);
    expect(() => parseCrashpoint('tool:after-intent:1:x')).toThrow(TypeError);
  });

  it('fires once, at the nth hit of its own kind and boundary', () => {
    const fired: CrashpointSpec[] = [];
    const points = new Crashpoints(parseCrashpoint('tool:after-execute:2'), (s) => fired.push(s));
    points.hit('tool', 'after-intent');
    points.hit('model', 'after-execute');
    points.hit('tool', 'after-execute');
    expect(fired).toEqual([]);
    points.hit('tool', 'after-execute');
    points.hit('tool', 'after-execute');
    expect(fired).toHaveLength(1);
    const inert = new Crashpoints(null, (s) => fired.push(s));
    inert.hit('tool', 'after-execute');
    expect(fired).toHaveLength(1);
  });
});
