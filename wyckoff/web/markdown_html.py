"""Markdown as HTML for the pages (the chat's answers, the briefs). The model's text may carry
what a hostile page or tool result talked it into: raw HTML is escaped (never passed through) and
images are not rendered (an image URL would be a request the page makes on its own, a way
out for what the model read)."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _renderer() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")


def markdown_html(text: str) -> str:
    return str(_renderer().render(text))
