"""Text shown for the user's consent, with every invisible or reordering character made visible.

An approval sentence quotes what the model chose (a URL, a command, a path, a file's lines).
Control characters (C0 and C1, e.g. U+009B, a terminal's CSI), line and paragraph separators
(U+2028/U+2029), format characters (soft hyphen, zero-width and word joiners, BOM, Arabic
letter mark, bidi embeddings, overrides and isolates) could hide or reorder what the user
reads, so each is shown as its `\\uXXXX` code instead.
"""

from __future__ import annotations

import unicodedata

# Cc control, Cf format, Zl line / Zp paragraph separator, Cs lone surrogate
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def visible(text: str, keep_newlines: bool = False) -> str:
    """`text` with each hidden character as `\\uXXXX` (a newline as `\\n`, or kept as a line
    break when `keep_newlines`)."""
    if text.isprintable():  # the common case, checked in C
        return text
    return "".join(_shown(ch, keep_newlines) for ch in text)


def _shown(ch: str, keep_newlines: bool) -> str:
    if ch == "\n":
        return ch if keep_newlines else "\\n"
    if unicodedata.category(ch) in HIDDEN_CATEGORIES:
        return f"\\u{ord(ch):04x}"
    return ch
