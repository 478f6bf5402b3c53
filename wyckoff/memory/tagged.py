"""The model's tagged replies: one `[标签] 内容` line per memory, read by extraction and layers."""

from __future__ import annotations

import re

TAGGED_LINE = re.compile(r"^\s*[-*]?\s*\[([^\]]+)\]\s*(.+?)\s*$")


def parse_tagged(reply: str, tags: dict[str, str], limit: int) -> list[tuple[str, str]]:
    """(type, content) for each `[tag] content` line whose tag is known."""
    found = []
    for line in reply.splitlines():
        match = TAGGED_LINE.match(line)
        if match and match.group(1).strip() in tags and match.group(2):
            found.append((tags[match.group(1).strip()], match.group(2)))
    return found[:limit]
