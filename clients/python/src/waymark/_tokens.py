"""A run's model call deltas as text (docs/clients.md "Token streams"): the ``tokens`` operation both
clients run (``_steps.py``). The event stream below it resumes from the last seq and delta offset
it delivered, so across reconnects and replicas every delta arrives once and in order; this turns
the events into what a consumer wants: text per attempt, a mark when a newer attempt of a call
replaces an aborted one (drop that attempt's text), and the call's journaled text when its result
is recorded (the truth, whatever the deltas said)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, Union

from waymark import _follow
from waymark._json import from_value
from waymark._steps import END, Core, Driver, Item, Items, next_item
from waymark.v1 import run_pb2


@dataclass(frozen=True)
class AttemptStarted:
    """An attempt of a model call began. ``supersedes``: an older attempt of the same call, now
    aborted (its replica died); drop the text collected for it. None when there was none."""

    call_seq: int
    """The seq of the model call's running entry: which call this belongs to."""
    attempt: int
    """The lease epoch the attempt runs under; a redispatch after a crash has a higher one."""
    supersedes: int | None
    type: ClassVar[Literal["attempt"]] = "attempt"


@dataclass(frozen=True)
class TokenText:
    """Text the model produced (``type`` ``"text"``), or a piece of a tool call's arguments
    (``"tool-input"``, with ``tool_call_id`` and ``tool_name``)."""

    call_seq: int
    attempt: int
    index: int
    """Position within the attempt, from 1 (0 is its start); a gap means deltas were lost."""
    text: str
    offset: int
    """The stream's delta cursor: pass the last one as ``after_offset`` to resume in a new stream."""
    type: Literal["text", "tool-input"] = "text"
    tool_call_id: str = ""
    tool_name: str = ""


@dataclass(frozen=True)
class CallFinished:
    """The call's result was journaled: ``text`` is the recorded answer; ``attempt`` the last one
    seen (None if none)."""

    call_seq: int
    attempt: int | None
    text: str
    type: ClassVar[Literal["result"]] = "result"


Token = Union[AttemptStarted, TokenText, CallFinished]


class Tokenizer:
    """Turns the events of a stream with deltas into tokens; keeps the newest attempt per call."""

    def __init__(self) -> None:
        self.current: dict[int, int] = {}

    def tokens(self, event: run_pb2.RunEvent) -> list[Token]:
        body = event.WhichOneof("body")
        if body == "entry":
            e = event.entry
            # A model call's result: its ok entry, pointing at the call's running entry.
            if e.kind != "model" or e.status != run_pb2.ENTRY_STATUS_OK or not e.HasField("ref_seq"):
                return []
            record = from_value(e.payload) if e.HasField("payload") else None
            text = record.get("text") if isinstance(record, dict) else None
            return [CallFinished(e.ref_seq, self.current.get(e.ref_seq), text if isinstance(text, str) else "")]
        if body != "model_delta":
            return []
        d = event.model_delta
        newest = self.current.get(d.call_seq)
        if newest is not None and d.attempt < newest:
            return []  # a stale replica's late delta of an aborted attempt
        out: list[Token] = []
        if newest != d.attempt:
            # A new attempt: its start, or (its start swept or read before this stream began) its first delta.
            self.current[d.call_seq] = d.attempt
            out.append(AttemptStarted(d.call_seq, d.attempt, newest))
        if d.kind == run_pb2.MODEL_DELTA_KIND_ATTEMPT_START:
            return out
        tool = d.kind == run_pb2.MODEL_DELTA_KIND_TOOL_INPUT
        out.append(
            TokenText(
                d.call_seq, d.attempt, d.index, d.text, d.offset, "tool-input" if tool else "text",
                d.tool_call_id if tool else "", d.tool_name if tool else "",
            )
        )
        return out


def tokens(
    core: Core,
    run_id: str,
    *,
    after_seq: int | None = None,
    after_offset: int | None = None,
    follow_suspended: bool = False,
    on_reconnect: Callable[[_follow.Reconnect], None] | None = None,
    timeout: float | None = None,
) -> Items[Token]:
    """Yields the text of a run's model calls as the models write it (docs/clients.md "Token
    streams"): an :class:`waymark.AttemptStarted` when an attempt of a call begins (``supersedes``
    set: that older attempt was aborted, drop its text), a :class:`waymark.TokenText` per delta,
    and a :class:`waymark.CallFinished` with the journaled text when the call's result is recorded.

    It reconnects as ``events`` does and resumes after the last seq and delta offset it yielded
    (``after_seq`` and ``after_offset`` start a new stream there), so across reconnects and
    replicas every delta arrives once and in order. It ends when the run ends (or parks, unless
    ``follow_suspended``); failures raise as ``events``' do; closing the generator cancels the stream.
    """
    follow = _follow.Follow(core.backoff, after_seq, timeout, deltas=True, after_offset=after_offset)
    events = Driver(_follow.follow_events(core, run_id, follow, follow_suspended, on_reconnect))
    tokenizer = Tokenizer()
    try:
        while (event := (yield from next_item(events))) is not END:
            for token in tokenizer.tokens(event):
                yield Item(token)
    finally:
        events.op.close()
