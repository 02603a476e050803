import { create, fromJson, type JsonValue } from '@bufbuild/protobuf';
import { EntryStatus, GetJournalResponseSchema, GetRunResponseSchema, isTerminal, JournalEntrySchema, runStatusName, type JournalEntry, type Run, type RunEvent, type WaitingOn } from '@waymark-dev/client/browser';
import { rerender } from './app.js';
import { errorText } from './format.js';
import { fold, type Folded } from './journal-model.js';
import { FIRST_PAGE, takeFirstRequests, type FirstRequests } from './first-requests.js';
import type { Session } from './session.js';

/*
 * One run's data for its page: the run, its journal, and, while it is not finished, its live
 * events (StreamRunEvents with follow_suspended, from the last seq loaded). The journal is read in
 * pages (docs/console.md "Performance"): the first screen is drawn from the first page alone, and
 * nothing more is asked for until it is on the screen. A finished run's further pages are read on
 * demand: when a list is scrolled near the end of what is loaded, or a view needs the whole journal
 * (conversation, tools, a text filter, an export). A live run's are read behind the first screen,
 * one page after another, because its live events append to the journal and must not leave a gap.
 * A dropped stream reconnects with backoff from the last seq it delivered (the browser client's
 * events()), so the journal on the page has no gaps and no repeats; the page says when it is
 * reconnecting. With a stream token (GetRun and StreamRunEvents only) the journal comes from the
 * stream's history.
 */

const PAGE = 1000;
/** Rows below the last one in view under which a list asks for the next page. */
const AHEAD_ROWS = 50;

export interface EventLine {
  seq: bigint;
  at: number;
  what: string;
  /** A line the page wrote itself (a reconnect), not an event of the run. */
  note?: boolean;
}

export class RunData {
  run: Run | undefined;
  waitingOn: WaitingOn[] = [];
  entries: JournalEntry[] = [];
  events: EventLine[] = [];
  error = '';
  /** 'loading' until the first page; 'paging' while a live run's further pages load; 'live' while following. */
  state: 'loading' | 'paging' | 'complete' | 'live' | 'reconnecting' | 'ended' | 'offline' = 'loading';
  /** The journal's next page ('' once every entry is loaded). */
  private nextPage = '';
  private reading: Promise<void> | undefined;
  private firstPageIn: () => void = () => undefined;
  /** Settles once the first page is in (or the first load failed). */
  readonly firstPage = new Promise<void>((resolve) => {
    this.firstPageIn = resolve;
  });
  reconnects = 0;
  private folded: Folded | undefined;
  private foldedAt = -1;
  private readonly stop = new AbortController();

  constructor(private readonly session: Session | undefined, readonly runId: string) {}

  /** The journal folded into effects; recomputed only when entries were added. */
  fold(): Folded {
    if (!this.folded || this.foldedAt !== this.entries.length) {
      this.folded = fold(this.entries);
      this.foldedAt = this.entries.length;
    }
    return this.folded;
  }

  /** Shows an exported journal: no server, nothing live. */
  static offline(run: Run | undefined, entries: JournalEntry[]): RunData {
    const d = new RunData(undefined, run?.id ?? entries[0]?.runId ?? '');
    d.run = run;
    d.entries = entries;
    d.state = 'offline';
    return d;
  }

  /** Entries the journal holds (the run's next_seq), whether or not they are loaded yet. */
  get total(): number {
    return Math.max(this.entries.length, Number(this.run?.nextSeq ?? 0n));
  }

  /** Whether entries remain to be read. */
  get partial(): boolean {
    return this.nextPage !== '';
  }

  async load(): Promise<void> {
    const s = this.session;
    if (!s) return;
    this.entries = [];
    this.nextPage = '';
    try {
      // The run and the journal's first page at once: the first screen waits for the slower of the two only.
      const first = takeFirstRequests(this.runId);
      const journal = s.kind === 'key' ? this.readFirstPage(s, first) : Promise.resolve();
      await Promise.all([this.refreshRun(first), journal]);
    } catch (err) {
      this.fail(err);
      return;
    } finally {
      this.firstPageIn();
    }
    if (s.kind === 'stream-token' || (this.run && !isTerminal(this.run.status))) {
      // Behind the first screen (after the frame that draws it): the rest of a live run's journal, then its events.
      await afterPaint();
      try {
        await this.readAll();
      } catch (err) {
        this.fail(err);
        return;
      }
      void this.follow();
    } else {
      this.state = 'ended';
      rerender();
    }
  }

  /**
   * Asks for the next page when a list's last row in view, `index` of `count`, is fewer than
   * AHEAD_ROWS from the end of what is loaded (two screens or so: the next page is in before the
   * reader gets there); at most one read at a time. The first screen of a first page rarely is.
   */
  near(index: number, count: number): void {
    if (this.partial && !this.reading && count - 1 - index < AHEAD_ROWS) void this.readNext().catch((err: unknown) => this.fail(err));
  }

  /** Reads every remaining page (a view or an export that needs the whole journal). */
  async readAll(): Promise<void> {
    while (this.partial && !this.stop.signal.aborted) await this.readNext();
  }

  private async readFirstPage(s: Session, first: FirstRequests | undefined): Promise<void> {
    const prefetched = await first?.journal;
    const r = prefetched ? fromJson(GetJournalResponseSchema, prefetched as JsonValue, { ignoreUnknownFields: true })
      : await s.clients.runs.getJournal({ runId: this.runId, pageSize: FIRST_PAGE }, { signal: this.stop.signal });
    this.entries.push(...r.entries);
    this.nextPage = r.nextPageToken;
    this.state = this.nextPage ? 'paging' : 'complete';
    rerender();
  }

  /** The next page, once: callers that ask while it is read wait for the same read. */
  private readNext(): Promise<void> {
    this.reading ??= (async () => {
      try {
        const r = await this.session!.clients.runs.getJournal({ runId: this.runId, pageSize: PAGE, pageToken: this.nextPage }, { signal: this.stop.signal });
        this.entries.push(...r.entries);
        this.nextPage = r.nextPageToken;
        if (!this.nextPage && this.state === 'paging') this.state = 'complete';
        rerender();
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }

  private fail(err: unknown): void {
    if (this.stop.signal.aborted) return;
    this.error = errorText(err);
    rerender();
  }

  async refreshRun(first?: FirstRequests): Promise<void> {
    if (!this.session) return;
    const prefetched = await first?.run;
    const r = prefetched ? fromJson(GetRunResponseSchema, prefetched as JsonValue, { ignoreUnknownFields: true })
      : await this.session.clients.runs.getRun({ runId: this.runId }, { signal: this.stop.signal });
    this.run = r.run;
    this.waitingOn = r.waitingOn;
    rerender();
  }

  private async follow(): Promise<void> {
    const s = this.session!;
    const last = this.entries.at(-1)?.seq ?? -1n;
    this.state = 'live';
    rerender();
    try {
      const events = s.clients.events(this.runId, {
        afterSeq: last, followSuspended: true, signal: this.stop.signal,
        onReconnect: (info) => {
          this.state = 'reconnecting';
          // One line per outage: the attempts of one outage update it.
          const line = { seq: info.afterSeq, at: Date.now(), what: `connection lost (${info.error.message}); reconnecting after seq ${info.afterSeq}, attempt ${info.attempt}`, note: true };
          const last = this.events.at(-1);
          if (info.attempt > 1 && last?.note) this.events[this.events.length - 1] = { ...line, at: last.at };
          else {
            this.reconnects += 1;
            this.events.push(line);
          }
          rerender();
        },
      });
      for await (const event of events) this.onEvent(event);
      this.state = 'ended';
    } catch (err) {
      if (this.stop.signal.aborted) return;
      this.error = `The live stream stopped: ${errorText(err)}`;
      this.state = 'ended';
    }
    rerender();
  }

  private onEvent(event: RunEvent): void {
    if (this.state === 'reconnecting') this.state = 'live';
    const body = event.body;
    if (body.case === 'entry') {
      const last = this.entries.at(-1)?.seq ?? -1n;
      if (body.value.seq > last) this.entries.push(body.value);
      this.events.push({ seq: event.seq, at: Date.now(), what: `${body.value.kind} ${body.value.name}: entry ${entryWord(body.value)}` });
    } else if (body.case === 'statusChanged') {
      const name = runStatusName(body.value.status);
      this.events.push({ seq: event.seq, at: Date.now(), what: `run ${name.toLowerCase()}` });
      // The journal's status entry, as GetJournal would have it, so the page's journal has every seq.
      if (event.seq > (this.entries.at(-1)?.seq ?? -1n)) {
        this.entries.push(create(JournalEntrySchema, {
          runId: this.runId, seq: event.seq, kind: 'status', name, status: EntryStatus.INFO, createTime: event.createTime,
          ...(body.value.error ? { error: body.value.error } : {}),
        }));
      }
      if (this.run) this.run.status = body.value.status;
      // Output, error and spend come with the run.
      void this.refreshRun().catch(() => undefined);
    }
    rerender();
  }

  dispose(): void {
    this.stop.abort();
  }
}

/** Resolves after the next frame has been drawn (a frame callback, then a task after it). */
function afterPaint(): Promise<void> {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

function entryWord(e: JournalEntry): string {
  return ['unspecified', 'running', 'ok', 'error', 'cancelled', 'suspended', 'resolved', 'noop', 'info'][e.status] ?? String(e.status);
}
