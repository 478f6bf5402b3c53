"""A web page's readable text: HTML as Markdown-like text with markdownify, or flat text.

BeautifulSoup and markdownify walk the page's tree recursively, so a page nested thousands
deep (100,000 `<div>`s) would cost seconds and end in a RecursionError. Its nesting is
estimated first with one linear scan; a page deeper than MAX_TREE_DEPTH (or one that still
overflows) becomes flat text: tags dropped, scripts and styles skipped, entities decoded.
"""

from __future__ import annotations

import html
import re

MAX_TREE_DEPTH = 200
DROPPED_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "nav", "footer", "form")
# Tags that never close, or whose end tag may be left out: they add no nesting to count.
UNNESTED_TAGS = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
        "p",
        "li",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "option",
        "optgroup",
        "thead",
        "tbody",
        "tfoot",
        "colgroup",
        "rb",
        "rt",
        "rp",
        "html",
        "head",
        "body",
    ]
)
TAG = re.compile(r"<(/?)([a-zA-Z][\w:-]*)[^>]*?(/?)>")
SKIPPED_TAG = re.compile(r"<(/?)(script|style|noscript|template|svg)\b[^>]*>", re.IGNORECASE)
ANY_TAG = re.compile(r"<[^>]*>")
TITLE = re.compile(r"<title[^>]*>([^<]*)", re.IGNORECASE)


def html_to_text(body: bytes, charset: str | None) -> tuple[str, str]:
    """(title, text) of an HTML page."""
    markup = _decoded(body, charset)
    if nesting_depth(markup) > MAX_TREE_DEPTH:
        return flat_text(markup)
    try:
        return _markdown(body, charset)  # bytes: BeautifulSoup also reads <meta charset>
    except RecursionError:  # the estimate missed (e.g. lists nested in lists)
        return flat_text(markup)


def nesting_depth(markup: str) -> int:
    """How deep the page's elements nest, counting only tags that must be closed."""
    depth = deepest = 0
    for closing, name, self_closing in TAG.findall(markup):
        if self_closing or name.lower() in UNNESTED_TAGS:
            continue
        depth = max(depth - 1, 0) if closing else depth + 1
        deepest = max(deepest, depth)
    return deepest


def flat_text(markup: str) -> tuple[str, str]:
    """(title, text) with every tag dropped and scripts and styles skipped, in linear time."""
    title = TITLE.search(markup)
    kept, skipping, position = [], None, 0
    for match in SKIPPED_TAG.finditer(markup):
        closing, name = match.group(1), match.group(2).lower()
        if skipping is None and not closing:
            kept.append(markup[position : match.start()])
            skipping = name
        elif closing and name == skipping:
            skipping, position = None, match.end()
    if skipping is None:
        kept.append(markup[position:])
    text = html.unescape(ANY_TAG.sub(" ", "".join(kept)))
    lines = (" ".join(line.split()) for line in text.splitlines())
    return (html.unescape(title.group(1)).strip() if title else ""), "\n".join(filter(None, lines))


def _markdown(body: bytes, charset: str | None) -> tuple[str, str]:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(body, "html.parser", from_encoding=charset)
    for tag in soup(DROPPED_TAGS):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else ""
    converter = MarkdownConverter(
        heading_style="ATX", strip=["img"], escape_underscores=False, escape_asterisks=False
    )
    text = converter.convert_soup(soup.body or soup)
    return title, re.sub(r"\n{3,}", "\n\n", text).strip()


def _decoded(body: bytes, charset: str | None) -> str:
    """The page as text for the nesting scan and flat text: its declared charset, else
    UTF-8, else GB18030 (Chinese sites)."""
    for encoding in filter(None, (charset, "utf-8")):
        try:
            return body.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("gb18030", errors="replace")
