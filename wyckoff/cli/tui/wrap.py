"""Line breaking for Chinese text: Textual folds a run without spaces at the exact width,
so a line can begin with `，` or `。`. `wrap_text` breaks at spaces where it can and never
starts a line with closing punctuation (the character before moves down with it).
`WrappedStatic` and `WrappedMarkdown` (the answer's paragraphs, headings) apply it."""

from __future__ import annotations

from itertools import pairwise
from typing import TypeVar

from rich.cells import cell_len
from rich.text import Text
from textual.content import Content
from textual.geometry import Offset
from textual.selection import Selection
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock

Styled = TypeVar("Styled", Text, Content)

NO_LINE_START = frozenset("，。、；：！？）》」』】〉…%,.;:!?)]}")


def line_breaks(line: str, width: int) -> list[int]:
    """Where to break one line (no newlines) so each piece fits `width` cells."""
    breaks: list[int] = []
    start, cells = 0, 0
    for index, char in enumerate(line):
        char_cells = cell_len(char)
        if cells + char_cells > width and index > start:
            space = line.rfind(" ", start, index)
            cut = space + 1 if space >= start and space + 1 > start else index
            while cut - 1 > start and line[cut] in NO_LINE_START:
                cut -= 1
            breaks.append(cut)
            start, cells = cut, cell_len(line[cut:index])
        cells += char_cells
    return breaks


def wrap_text(text: Styled, width: int) -> Styled:
    """`text` (Rich Text or Textual Content) with a newline at each break, its styles kept."""
    rows = shown_rows(text.plain, width)
    offsets = [start for (_, end), (start, _) in pairwise(rows) if start == end]  # not at a \n
    if not offsets:
        return text
    return type(text)("\n").join(text.divide(offsets))


def shown_rows(text: str, width: int) -> list[tuple[int, int]]:
    """(start, end) in `text` of each line `wrap_text` shows at `width`."""
    rows: list[tuple[int, int]] = []
    position = 0
    for line in text.split("\n"):
        cuts = [0, *line_breaks(line, width), len(line)]
        rows += [(position + start, position + end) for start, end in pairwise(cuts)]
        position += len(line) + 1
    return rows


def selected_source(text: str, width: int, selection: Selection) -> str:
    """The part of `text` a selection over its wrapped lines covers, without the breaks
    `wrap_text` put in: a copied answer pastes as the sentences it is."""
    rows = shown_rows(text, width or len(text) + 1)  # not laid out yet: not broken

    def index(offset: Offset | None, default: int) -> int:
        if offset is None:
            return default
        start, end = rows[min(offset.y, len(rows) - 1)]
        return min(start + offset.x, end)

    return text[index(selection.start, 0) : index(selection.end, len(text))]


class WrappedStatic(Static):
    """A Static whose text is broken by `wrap_text` at its current width."""

    shown_width = 0  # the width its text was last broken at

    def __init__(self, text: Text | str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.text = Text(text) if isinstance(text, str) else text
        self.show_text(self.text)

    def show_text(self, text: Text) -> None:
        self.text = text
        self.shown_width = width = self.size.width
        self.update(wrap_text(text, width) if width > 0 else text)

    def on_resize(self) -> None:
        self.show_text(self.text)

    def get_selection(self, selection: Selection) -> tuple[str, str]:
        return selected_source(self.text.plain, self.shown_width, selection), "\n"


class WrappedBlock(MarkdownBlock):
    """A Markdown block of running text whose lines break by `wrap_text` at its width."""

    shown_width = 0  # the width its text was last broken at

    def set_content(self, content: Content) -> None:
        self._content = content  # unbroken: what Markdown reads (table of contents, appends)
        self._show_content()

    def _show_content(self) -> None:
        self.shown_width = width = self.size.width
        self.update(wrap_text(self._content, width) if width > 0 else self._content)

    def on_resize(self) -> None:
        self._show_content()

    def get_selection(self, selection: Selection) -> tuple[str, str]:
        return selected_source(self._content.plain, self.shown_width, selection), "\n"


def _wrapped(block: type[MarkdownBlock]) -> type[MarkdownBlock]:
    # Textual's block first: CSS and queries match a widget by its first bases' names
    return type(block.__name__, (block, WrappedBlock), {"__module__": __name__})


class WrappedMarkdown(Markdown):
    """Markdown whose paragraphs and headings (in lists and quotes too) break by `wrap_text`;
    code and tables keep Textual's own layout."""

    BLOCKS = {
        **Markdown.BLOCKS,
        **{
            name: _wrapped(Markdown.BLOCKS[name])
            for name in ("paragraph_open", "h1", "h2", "h3", "h4", "h5", "h6")
        },
    }
