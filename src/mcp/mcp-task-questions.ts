import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import type { Json } from '../journal/run.js';
import type { McpTaskAnswer } from '../engine/index.js';

/*
 * The questions MCP tasks ask (docs/mcp.md "Tasks"). A task in `input_required` sends its client
 * an elicitation/create request (in the SDK, on the stream of the client's tasks/result). The run
 * cannot answer at once: the question becomes an approval, and the run parks. So the request is
 * held here, unanswered, while the run waits; the run's next await of the task brings the
 * decision, which answers the held request on the same connection. An answer that finds no held
 * request (the server had not asked yet) is kept for the task's next question. In memory, per
 * replica: a replica that dies loses what it held (docs/mcp.md "Tasks", limits). A task nobody has
 * awaited here for longer than a task lives (`idleMs`, the TTL Waymark asks tasks for) is dropped
 * and its held question declined: its run was cancelled, forked away from or moved to another
 * replica, and the server has forgotten the task by then anyway.
 */

export interface McpTaskQuestion {
  message: string;
  requestedSchema: Json;
}

interface TaskState {
  /** The request the server is waiting on, with its question; null when none is held. */
  held: { question: McpTaskQuestion; reply: (answer: McpTaskAnswer) => void } | null;
  /** An answer given before the question came. */
  early: McpTaskAnswer | null;
  /** The round whose answer was delivered last (an attempt repeated after a transport failure does not answer twice). */
  answeredRound: number;
  /** The await in progress on this replica, told of a question as it comes. */
  listener: ((question: McpTaskQuestion) => void) | null;
  /** When an await of this task last started or ended here, or its question came (the clock of McpTaskQuestionsOptions). */
  touchedAt: number;
}

export interface McpTaskQuestionsOptions {
  /** How long a task nobody awaits here is kept (default: one day, the TTL Waymark asks tasks for). */
  idleMs?: number;
  /** Milliseconds now (default Date.now); tests move it. */
  now?: () => number;
}

/** What an elicitation/create request carries that this file reads. */
export interface McpElicitation {
  message: string;
  mode?: string;
  requestedSchema?: unknown;
  _meta?: Record<string, unknown>;
}

const DECLINE: McpTaskAnswer = { action: 'decline' };

export class McpTaskQuestions {
  private readonly tasks = new Map<string, TaskState>();
  private readonly idleMs: number;
  private readonly now: () => number;

  constructor(options: McpTaskQuestionsOptions = {}) {
    this.idleMs = options.idleMs ?? 86_400_000;
    this.now = options.now ?? Date.now;
  }

  /** Tasks whose questions are tracked here (awaited now, or asked and waiting for their run). */
  get size(): number {
    return this.tasks.size;
  }

  /**
   * Drops the tasks nobody has awaited here for `idleMs`, declining the question each still holds
   * (the request would otherwise stay open on its connection for good). Called on every listen, so
   * the table is bounded by the tasks of the last `idleMs` with no timer of its own.
   */
  prune(): number {
    const cutoff = this.now() - this.idleMs;
    let dropped = 0;
    for (const [key, state] of this.tasks) {
      if (state.listener !== null || state.touchedAt > cutoff) continue;
      this.tasks.delete(key);
      state.held?.reply(DECLINE);
      dropped++;
    }
    return dropped;
  }

  /**
   * Answers an elicitation/create request a server sent on one connection (`server`: its namespace
   * and name), when the run awaiting its task has an answer; holds it until then. A question
   * outside a task this replica awaits is declined: a run cannot stop in the middle of a plain
   * tools/call to ask a person.
   */
  async ask(server: string, params: McpElicitation): Promise<McpTaskAnswer> {
    const related = params._meta?.[RELATED_TASK_META_KEY] as { taskId?: unknown } | undefined;
    const state = typeof related?.taskId === 'string' ? this.tasks.get(`${server}\u0000${related.taskId}`) : undefined;
    if (!state || params.mode === 'url') return DECLINE;
    if (state.early) {
      const answer = state.early;
      state.early = null;
      return answer;
    }
    const question: McpTaskQuestion = { message: params.message, requestedSchema: JSON.parse(JSON.stringify(params.requestedSchema ?? {})) as Json };
    state.touchedAt = this.now();
    return new Promise<McpTaskAnswer>((reply) => {
      state.held = { question, reply };
      state.listener?.(question);
    });
  }

  /**
   * Starts an await of task `taskId` in round `round`: delivers `answer` (once per round) to the
   * held question or keeps it for the next one, and gives the question the task asks next (at once
   * when one is held and unanswered). `close` ends listening; `finished` forgets the task.
   */
  listen(server: string, taskId: string, round: number, answer: McpTaskAnswer | null): { question: Promise<McpTaskQuestion>; close(): void; finished(): void } {
    this.prune();
    const key = `${server}\u0000${taskId}`;
    let state = this.tasks.get(key);
    if (!state) this.tasks.set(key, (state = { held: null, early: null, answeredRound: -1, listener: null, touchedAt: 0 }));
    const s = state;
    s.touchedAt = this.now();
    if (answer && round > s.answeredRound) {
      s.answeredRound = round;
      if (s.held) {
        s.held.reply(answer);
        s.held = null;
      } else {
        s.early = answer;
      }
    }
    const question = new Promise<McpTaskQuestion>((resolve) => {
      if (s.held) resolve(s.held.question);
      else s.listener = resolve;
    });
    return {
      question,
      close: () => {
        s.listener = null;
        s.touchedAt = this.now();
      },
      finished: () => {
        this.tasks.delete(key);
      },
    };
  }
}
