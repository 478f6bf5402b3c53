"""Sub-agents in the chat: one collapsible block per delegation under its delegate row,
the blocks of one batch of tool calls side by side."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.containers import Horizontal
from textual.widgets import Collapsible

from wyckoff.cli.tui.widgets import ToolRow, error_outcome
from wyckoff.cli.tui.wrap import WrappedMarkdown, WrappedStatic


class DelegationBlock(Collapsible):
    """One sub-agent's run under its delegate row: grey italic streaming text, its own
    tool rows, then its status and elapsed time in the title."""

    def __init__(self, agent: str, call_id: str) -> None:
        from wyckoff.cli.sub_agents import agent_title

        self.agent, self.call_id = agent, call_id
        self.text = ""
        self.status: str | None = None
        self.body = WrappedStatic(classes="delegate-text")
        self.rows: dict[str, ToolRow] = {}
        super().__init__(
            self.body, title=f"{agent_title(agent)} · 运行中", collapsed=False, classes="delegation"
        )

    def add_text(self, text: str) -> None:
        self.text += text
        self.body.show_text(Text(self.text))

    def start_tool(self, event: dict[str, Any]) -> None:
        row = ToolRow(event["id"], event["name"], event["title"], event["args"])
        self.rows[event["id"]] = row
        self.query_one(Collapsible.Contents).mount(row, before=self.body)

    def finish_tool(self, event: dict[str, Any]) -> None:
        row = self.rows.get(event["id"])
        if row is not None:
            failed = event["type"] == "tool_error"
            outcome = error_outcome(event["error"]) if failed else event.get("summary")
            row.finish(outcome or "完成", event["elapsed_s"], failed=failed)

    def finish(self, event: dict[str, Any]) -> None:
        from wyckoff.cli.sub_agents import STATUS_LABELS, agent_title

        self.status = event["status"]
        self.title = (
            f"{agent_title(self.agent)} · {STATUS_LABELS.get(self.status, self.status)}"
            f" · {event['elapsed_s']:.1f}s"
        )
        self.set_class(self.status != "completed", "failed")
        if self.text:  # streamed as plain text; the conclusion is Markdown, shown as such
            self.body.remove()
            self.query_one(Collapsible.Contents).mount(
                WrappedMarkdown(self.text, classes="delegate-text")
            )


class DelegationView:
    """Routes sub-agent events to their blocks; the delegations of one batch of tool calls
    sit side by side in one row."""

    def __init__(self, app, call_order: Callable[[], list[str]]) -> None:
        self.app = app
        self.call_order = call_order  # the ids of this chat's tool calls, as they started
        self.blocks: dict[str, DelegationBlock] = {}
        self.row: Horizontal | None = None

    async def show(self, event: dict[str, Any]) -> None:
        block = self.blocks.get(event["delegation_id"])
        if block is None:
            block = DelegationBlock(event["agent"], event["call_id"])
            self.blocks[event["delegation_id"]] = block
            await self._mount_in_call_order(block)
        kind = event["type"]
        if kind == "text_delta":
            block.add_text(event["text"])
        elif kind == "tool_start":
            block.start_tool(event)
        elif kind in ("tool_result", "tool_error"):
            block.finish_tool(event)
        elif kind == "done":
            block.finish(event)

    async def _mount_in_call_order(self, block: DelegationBlock) -> None:
        row = await self._row()
        calls = self.call_order()
        later = [
            other
            for other in row.query(DelegationBlock)
            if calls.index(other.call_id) > calls.index(block.call_id)
        ]
        await row.mount(block, before=later[0] if later else None)

    async def _row(self) -> Horizontal:
        """The row for this batch: a new one once the chat has moved past the last."""
        chat = self.app.query_one("#chat")
        if self.row is None or chat.children[-1] is not self.row:
            self.row = Horizontal(classes="delegations")
            await self.app.mount_chat(self.row)
        return self.row
