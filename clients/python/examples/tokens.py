"""Follows the text of a run's model calls as the models write it (``client.tokens``,
docs/clients.md "Token streams") and prints each token as one JSON object a line: an attempt's
start, each text delta, and each call's journaled result. Through a restart or a crash of the
server it reconnects by itself and resumes after the last delta it printed; when an attempt starts
that supersedes another, drop what that older attempt printed.

    python examples/tokens.py ADDRESS RUN_ID

test/chaos/token-streams.test.ts runs it as a reader while it SIGKILLs the replica making the call."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

import waymark


def line(token: waymark.Token) -> dict[str, Any]:
    """The token with the field names of the TypeScript client's token events."""
    names = {"call_seq": "callSeq", "tool_call_id": "toolCallId", "tool_name": "toolName"}
    return {"type": token.type, **{names.get(k, k): v for k, v in asdict(token).items()}}


def main(address: str, run_id: str) -> None:
    def reconnecting(r: waymark.Reconnect) -> None:
        print(f"reconnecting after seq {r.after_seq}, offset {r.after_offset}: {r.error}", file=sys.stderr, flush=True)

    with waymark.Client(address, connect_timeout=30) as client:
        for token in client.tokens(run_id, follow_suspended=True, on_reconnect=reconnecting):
            print(json.dumps(line(token)), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: tokens.py ADDRESS RUN_ID")
    main(sys.argv[1], sys.argv[2])
