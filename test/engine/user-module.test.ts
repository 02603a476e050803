import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DefinitionError } from '../../src/engine/errors.js';
import { Registry } from '../../src/engine/registry.js';
import { loadUserModule } from '../../src/engine/user-module.js';
import { NS, setup } from './harness.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');

describe('loadUserModule', () => {
  it('registers every exported workflow and tool of a TypeScript module that imports from "waymark"', async () => {
    const registry = new Registry();
    const loaded = await loadUserModule(path.join(fixtures, 'user-workflows.ts'), registry);
    expect(loaded).toMatchObject({ workflows: ['greet'], tools: ['shout'] });
    expect(registry.tools().map((t) => t.name)).toEqual(['echo', 'http', 'shout']);
    const { engine } = setup([registry.workflow('greet'), registry.tool('shout')]);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'greet', input: { name: 'ada' }, execute: true });
    expect(run.output).toEqual({ greeting: 'hello ADA' });
  });

  it('loads JavaScript modules, including definitions grouped in a default export, into a new registry by default', async () => {
    const loaded = await loadUserModule(path.join(fixtures, 'plain-module.mjs'));
    expect(loaded).toMatchObject({ workflows: ['twice'], tools: [] });
    expect(loaded.registry.workflow('twice').name).toBe('twice');
    expect(loaded.registry.tools().map((t) => t.name)).toEqual(['echo', 'http']);
  });

  it('refuses a missing file and a module that exports nothing runnable', async () => {
    await expect(loadUserModule(path.join(fixtures, 'missing.ts'), new Registry())).rejects.toThrow(/no file at/);
    await expect(loadUserModule(path.join(fixtures, 'nothing.mjs'), new Registry())).rejects.toBeInstanceOf(DefinitionError);
  });
});
