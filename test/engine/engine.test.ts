import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { engineSuite } from './engine-suite.js';

engineSuite('MemoryStore', {
  fakeClock: true,
  advance: async (clock, ms) => clock.advance(ms),
  makeStore: async (clock) => new MemoryStore({ clock: clock.now }),
});
