import { create } from '@bufbuild/protobuf';
import { EntryStatus, isTerminal, JournalEntrySchema, runStatusName, type JournalEntry, type Run, type RunEvent, type WaitingOn } from '@waymark-dev/client/browser';
import { rerender } from './app.js';
import { errorText } from './format.js';
import { fold, type Folded } from './journal-model.js';
import type { Session } from './session.js';

/*
 * One run's data for its page: the run, its journal (paged: the first page is drawn as soon as it
 * arrives, the rest load behind it), and, while it is not finished, its live events
 * (StreamRunEvents with follow_suspended, from the last seq loaded). A dropped stream reconnects
 * with backoff from the last seq it delivered (the browser client's events()), so the journal
 * on the page has no gaps and no repeats; the page says when it is reconnecting. With a stream
 * token (GetRun and StreamRunEvents only) the journal comes from the stream's history.
 */

const FIRST_PAGE = 100;
const PAGE = 1000;

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
  /** 'loading' until the first page; 'paging' while older pages load; 'live' while following. */
  state: 'loading' | 'paging' | 'complete' | 'live' | 'reconnecting' | 'ended' | 'offline' = 'loading';
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

  async load(): Promise<void> {
    const s = this.session;
    if (!s) return;
    try {
      // The run and the journal's first page at once: the first screen waits for the slower of the two only.
      const journal = s.kind === 'key' ? this.readJournal(s) : Promise.resolve();
      await Promise.all([this.refreshRun(), journal]);
    } catch (err) {
      if (this.stop.signal.aborted) return;
      this.error = errorText(err);
      rerender();
      return;
    }
    if (s.kind === 'stream-token' || (this.run && !isTerminal(this.run.status))) void this.follow();
    else {
      this.state = 'ended';
      rerender();
    }
  }

  private async readJournal(s: Session): Promise<void> {
    let token = '';
    let first = true;
    do {
      const r = await s.clients.runs.getJournal({ runId: this.runId, pageSize: first ? FIRST_PAGE : PAGE, pageToken: token }, { signal: this.stop.signal });
      this.entries.push(...r.entries);
      token = r.nextPageToken;
      this.state = token ? 'paging' : 'complete';
      first = false;
      rerender();
    } while (token && !this.stop.signal.aborted);
  }

  async refreshRun(): Promise<void> {
    if (!this.session) return;
    const r = await this.session.clients.runs.getRun({ runId: this.runId }, { signal: this.stop.signal });
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

function entryWord(e: JournalEntry): string {
  return ['unspecified', 'running', 'ok', 'error', 'cancelled', 'suspended', 'resolved', 'noop', 'info'][e.status] ?? String(e.status);
}
