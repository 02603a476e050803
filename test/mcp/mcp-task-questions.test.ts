import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { McpTaskQuestions } from '../../src/mcp/mcp-task-questions.js';

/*
 * The replica's table of MCP task questions (src/mcp/mcp-task-questions.ts, docs/mcp.md "Tasks").
 * A question a task asked waits here, unanswered, for its run's decision. When the run never comes
 * back (cancelled while it waited, forked away from, moved to another replica), the entry and the
 * open request must not stay for the life of the process: a task nobody has awaited here for as long
 * as a task lives is dropped and its question declined. The live protocol, with a real task server
 * as a subprocess, is test/mcp/mcp-tasks.test.ts; this is the bookkeeping, on a clock the test moves.
 */

const DAY = 86_400_000;
const SERVER = 'billing\u0000ns';
const ask = (q: McpTaskQuestions, taskId: string) =>
  q.ask(SERVER, { message: `confirm ${taskId}?`, requestedSchema: { type: 'object', properties: {} }, _meta: { [RELATED_TASK_META_KEY]: { taskId } } });

describe('McpTaskQuestions', () => {
  it('a question whose run never awaits again is declined and forgotten once a task would have expired', async () => {
    let now = 0;
    const q = new McpTaskQuestions({ idleMs: DAY, now: () => now });
    // Round 0 of the await: the task asks; the await ends with the question and the run parks.
    const first = q.listen(SERVER, 'task-1', 0, null);
    const held = ask(q, 'task-1');
    expect((await first.question).message).toBe('confirm task-1?');
    first.close();
    expect(q.size).toBe(1);

    // The run is cancelled: nobody awaits task-1 again. Other tasks come and go meanwhile.
    now += DAY - 1;
    q.listen(SERVER, 'task-2', 0, null).close();
    expect(q.size).toBe(2); // not yet a day idle
    now += 2;
    const third = q.listen(SERVER, 'task-3', 0, null);
    expect(await held).toEqual({ action: 'decline' });
    expect(q.size).toBe(2); // task-1 gone; task-2 and task-3 are recent
    third.finished();
    expect(q.size).toBe(1);
  });

  it('keeps a task that is being awaited, or was within the day, and answers it when its run comes back', async () => {
    let now = 0;
    const q = new McpTaskQuestions({ idleMs: DAY, now: () => now });
    const first = q.listen(SERVER, 'task-1', 0, null);
    const held = ask(q, 'task-1');
    await first.question;
    first.close();
    now += DAY / 2;
    expect(q.prune()).toBe(0);
    // The decision arrives: round 1 delivers the answer to the held request on the same connection.
    const second = q.listen(SERVER, 'task-1', 1, { action: 'accept', content: { confirm: true } });
    expect(await held).toEqual({ action: 'accept', content: { confirm: true } });
    // An await in progress is never dropped, however long it lasts.
    now += 3 * DAY;
    expect(q.prune()).toBe(0);
    second.finished();
    expect(q.size).toBe(0);
  });
});
