// A research agent: it searches a small set of notes, drafts a report and asks a person before
// saving it, then answers. Every model call and tool call is journaled, so a crash costs at most
// the model call in flight, and the run can wait for the approval for days.
//
//   waymark dev --workflows examples/research-agent.ts
//   StartRun { workflow: "research-agent", input: { "question": "Why do tides happen?" }, budget_usd: 0.05 }
//
// With no model API key set, `default` is the built-in scripted model (offline, deterministic):
// it searches, drafts, asks, and answers from what the tools returned. Set OPENAI_API_KEY or
// ANTHROPIC_API_KEY (or WAYMARK_DEFAULT_MODEL) and the same workflow runs on a real model.
// budget_usd caps what the run may spend: a model call whose estimate would pass it is not made,
// and the run ends FAILED with reason budget_exceeded (docs/agents.md).
import { z } from 'zod';
import { defineTool, defineWorkflow } from 'waymark';

const NOTES = [
  { id: 'n1', title: 'Tides', text: 'Tides are caused mainly by the Moon\'s gravity pulling on the oceans; the Sun adds a smaller pull.' },
  { id: 'n2', title: 'Spring and neap tides', text: 'When Sun and Moon line up (new and full moon) tides are larger: spring tides. At quarter moons they are smaller: neap tides.' },
  { id: 'n3', title: 'Tidal period', text: 'Most coasts see two high tides a day, about 12 hours 25 minutes apart, because the Moon moves along its orbit.' },
  { id: 'n4', title: 'Durable execution', text: 'A journal records every effect so a crashed run resumes without repeating finished work.' },
];

/** Read-only: one journal entry per call, and it runs in dry runs too. */
export const searchNotes = defineTool({
  name: 'search_notes',
  description: 'Searches the research notes. Returns the best matching notes with their ids.',
  input: z.object({ query: z.string().min(1), limit: z.number().int().min(1).max(10).default(3) }),
  mutating: false,
  execute: ({ query, limit }) => {
    const words = query.toLowerCase().split(/\W+/).filter((w) => w.length > 2);
    const scored = NOTES.map((n) => ({ n, score: words.filter((w) => `${n.title} ${n.text}`.toLowerCase().includes(w)).length }));
    return scored.filter((s) => s.score > 0).sort((a, b) => b.score - a.score).slice(0, limit).map(({ n }) => n);
  },
});

/** Where saved reports go in this example; a real tool would call a document store with the key. */
const saved = new Map<string, { title: string; body: string }>();

/** Mutating, and a person must allow each call: the run parks on an approval before it executes. */
export const saveReport = defineTool({
  name: 'save_report',
  description: 'Saves a research report. A person approves each save.',
  input: z.object({ title: z.string().min(1), body: z.string().min(1) }),
  policy: 'ask',
  execute: ({ title, body }, { idempotencyKey }) => {
    // The idempotency key is the same on every redispatch of this call: saving by it is exactly once.
    saved.set(idempotencyKey, { title, body });
    return { reportId: `report-${idempotencyKey.slice(-8)}`, title };
  },
});

export const researchAgent = defineWorkflow(
  {
    name: 'research-agent',
    description: 'Searches notes, drafts a report, asks before saving it, and answers with what it found.',
    input: z.object({ question: z.string().min(1), model: z.string().default('default') }),
  },
  async (ctx, { question, model }) => {
    const result = await ctx.agent(question, {
      model,
      agentType: 'researcher',
      system: 'You are a careful researcher. Search the notes first, then save a short report with save_report, then answer in two sentences naming the notes you used.',
      tools: [searchNotes, saveReport],
      maxSteps: 6,
      maxOutputTokens: 800,
    });
    return {
      answer: result.text,
      steps: result.steps,
      costUsd: result.costUsd,
      tools: result.toolCalls.map((c) => `${c.toolName}:${c.outcome}`),
    };
  },
);
