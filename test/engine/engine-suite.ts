import { afterAll } from 'vitest';
import { continueAsNewSuite } from './suite/continue-as-new.js';
import { effectsSuite } from './suite/effects.js';
import { effectSpansSuite } from './suite/effect-spans.js';
import { recoverySuite } from './suite/recovery.js';
import { retriesSuite } from './suite/retries.js';
import { timeoutsSuite } from './suite/timeouts.js';
import { makeSuite, type SuiteEnv } from './suite/support.js';
import { waitsSuite } from './suite/waits.js';

export type { SuiteEnv } from './suite/support.js';

/** The engine behaviour every store must support; engine.test.ts and engine-postgres.test.ts run it. */
export function engineSuite(label: string, env: SuiteEnv): void {
  afterAll(async () => env.teardown?.());
  const suite = makeSuite(label, env);
  effectsSuite(suite);
  waitsSuite(suite);
  recoverySuite(suite);
  retriesSuite(suite);
  timeoutsSuite(suite);
  effectSpansSuite(suite);
  continueAsNewSuite(suite);
}
