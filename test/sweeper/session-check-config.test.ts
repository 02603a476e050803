import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/cli/config.js';
import { createSweeper } from '../../src/cli/sweeper-command.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';

/*
 * WAYMARK_SESSION_CHECK_MS (docs/configuration.md, docs/recovery.md "Dead sessions"): how often the
 * sweeper's leader looks for a killed replica's ended lease session between sweeps. 50 ms by default
 * (issue 31 goal 7: a SIGKILLed replica's runs continue elsewhere within 250 ms at p50), 0 leaves it
 * to each sweep, and what the CLI builds is the sweeper the setting names. That the check recovers
 * a killed replica's runs is test/chaos (real processes); this is the setting.
 */

describe('WAYMARK_SESSION_CHECK_MS', () => {
  it('is 50 ms by default, takes 0 and whole milliseconds, and refuses anything else by name', () => {
    expect(loadConfig({}).sessionCheckMs).toBe(50);
    expect(loadConfig({ WAYMARK_SESSION_CHECK_MS: '0' }).sessionCheckMs).toBe(0);
    expect(loadConfig({ WAYMARK_SESSION_CHECK_MS: '250' }).sessionCheckMs).toBe(250);
    expect(() => loadConfig({ WAYMARK_SESSION_CHECK_MS: '-1' })).toThrow(/WAYMARK_SESSION_CHECK_MS/);
    expect(() => loadConfig({ WAYMARK_SESSION_CHECK_MS: 'soon' })).toThrow(/WAYMARK_SESSION_CHECK_MS/);
  });

  it('reaches the sweeper the CLI builds (waymark sweeper, waymark dev)', () => {
    const store = new MemoryStore();
    const logger = pino({ enabled: false });
    expect(createSweeper(loadConfig({}), store, logger, null).sessionCheckMs).toBe(50);
    expect(createSweeper(loadConfig({ WAYMARK_SESSION_CHECK_MS: '125' }), store, logger, null).sessionCheckMs).toBe(125);
    expect(createSweeper(loadConfig({ WAYMARK_SESSION_CHECK_MS: '0' }), store, logger, null).sessionCheckMs).toBe(0);
  });
});
