import { afterEach, beforeEach, describe } from 'vitest';
import type { ConformanceHarness, HarnessFactory } from './harness.js';
import { apiKeysSection } from './api-keys.conformance.js';
import { attemptsSection } from './attempts.conformance.js';
import { budgetLockSection } from './budget-lock.conformance.js';
import { flowsSection } from './flows.conformance.js';
import { remoteTasksSection } from './remote-tasks.conformance.js';
import { routingSection } from './routing.conformance.js';
import { journalSection } from './journal.conformance.js';
import { mcpServersSection } from './mcp-servers.conformance.js';
import { modelDeltasSection } from './model-deltas.conformance.js';
import { payloadsSection } from './payloads.conformance.js';
import { schedulesSection } from './schedules.conformance.js';
import { leasesSection } from './leases.conformance.js';
import { leaseSessionsSection } from './lease-sessions.conformance.js';
import { limitsSection } from './limits.conformance.js';
import { resolutionsSection } from './resolutions.conformance.js';
import { retentionSection } from './retention.conformance.js';
import { runsSection } from './runs.conformance.js';
import { runPrefixSection } from './run-prefix.conformance.js';
import { runTimeoutsSection } from './run-timeouts.conformance.js';
import { signalsSection } from './signals.conformance.js';
import { spendSection } from './spend.conformance.js';
import { waitsSection } from './waits.conformance.js';
import { sweeperSection } from './sweeper.conformance.js';
import { sweeperLeaderSection } from './sweeper-leader.conformance.js';
import { wakeupsSection } from './wakeups.conformance.js';
import { webhooksSection } from './webhooks.conformance.js';

export type { ConformanceHarness, HarnessFactory } from './harness.js';

/** What each section gets: the current test's harness, and the factory for tests that need their own limits. */
export interface SuiteContext {
  h(): ConformanceHarness;
  factory: HarnessFactory;
}

/**
 * The one suite every JournalStore passes (STYLE habit 3; River's riverdrivertest). Each test gets
 * a fresh, empty store from `factory`. The interface in src/store/store.ts and this suite change
 * together.
 */
export function runConformanceSuite(name: string, factory: HarnessFactory): void {
  describe(`JournalStore conformance: ${name}`, () => {
    let current: ConformanceHarness | undefined;
    beforeEach(async () => {
      current = await factory();
    });
    afterEach(async () => {
      await current?.close();
      current = undefined;
    });
    const ctx: SuiteContext = {
      h: () => {
        if (!current) throw new Error('no harness: called outside a test');
        return current;
      },
      factory,
    };
    describe('runs', () => runsSection(ctx));
    describe('journal', () => journalSection(ctx));
    describe('large payloads', () => payloadsSection(ctx));
    describe('attempts', () => attemptsSection(ctx));
    describe('leases and fencing', () => leasesSection(ctx));
    describe('lease sessions (dead-session reclaim)', () => leaseSessionsSection(ctx));
    describe('spend (journalSpend)', () => spendSection(ctx));
    describe('retention (runPurge)', () => retentionSection(ctx));
    describe('waits (journalWaits)', () => waitsSection(ctx));
    describe('resolutions', () => resolutionsSection(ctx));
    describe('sweeper queries', () => sweeperSection(ctx));
    describe('sweeper leader and child scans', () => sweeperLeaderSection(ctx));
    describe('limits', () => limitsSection(ctx));
    describe('signal inbox and suspension listing', () => signalsSection(ctx));
    describe('wake-ups and following', () => wakeupsSection(ctx));
    describe('budget locks', () => budgetLockSection(ctx));
    describe('routing', () => routingSection(ctx));
    describe('flows', () => flowsSection(ctx));
    describe('mcp servers', () => mcpServersSection(ctx));
    describe('model call deltas', () => modelDeltasSection(ctx));
    describe('schedules', () => schedulesSection(ctx));
    describe('remote tools and tasks', () => remoteTasksSection(ctx));
    describe('webhooks and their outbox', () => webhooksSection(ctx));
    describe('run timeouts', () => runTimeoutsSection(ctx));
    describe('runs created with their first entries (forks)', () => runPrefixSection(ctx));
    describe('API keys', () => apiKeysSection(ctx));
  });
}
