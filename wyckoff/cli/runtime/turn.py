"""What one user turn carries while it runs: its trace, usage, the calls made so far, the
background tasks it started and the answer text."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from wyckoff.cli.events import Usage, UsageTotals
from wyckoff.cli.loop_guard import DoomLoopDetector
from wyckoff.cli.messages import ToolCall
from wyckoff.cli.traces import TurnTrace


class TurnCancelled(Exception):
    pass


@dataclass
class TurnState:
    session_id: str | None
    trace: TurnTrace | None
    session_usage: UsageTotals = field(default_factory=UsageTotals)  # the runtime's, shared
    usage: UsageTotals = field(default_factory=UsageTotals)
    calls: list[ToolCall] = field(default_factory=list)
    started_tasks: list[str] = field(default_factory=list)
    text: str = ""
    doom: DoomLoopDetector = field(default_factory=DoomLoopDetector)
    started: float = field(default_factory=time.monotonic)

    def add_usage(self, event: Usage) -> None:
        """A model call's usage counts for this turn and its session."""
        self.usage.add(event)
        self.session_usage.add(event)

    def record(self, kind: str, **fields: Any) -> None:
        """One line in the turn's trace (none when traces are off)."""
        if self.trace is not None:
            self.trace.record(kind, **fields)
