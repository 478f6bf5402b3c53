"""Stock entities in a text: 6-digit codes and names from the bundled A-share list.

Names are matched longest first at each position, so "长信科技" resolves to 300088 while a
theme word such as "科技" or "白酒" resolves to nothing. Only the local list is used.
"""

from __future__ import annotations

import csv
import re
from functools import lru_cache
from importlib import resources

CODE = re.compile(r"(?<!\d)(\d{6})(?!\d)")
MIN_NAME_CHARS = 3  # two-character names collide with ordinary words too often


@lru_cache(maxsize=1)
def _names() -> tuple[dict[str, str], int]:
    """name -> code (names of 3+ characters) and the longest name's length."""
    with resources.files("wyckoff.data").joinpath("a_share_list.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    by_name = {r["name"]: r["code"] for r in rows if len(r["name"]) >= MIN_NAME_CHARS}
    return by_name, max(map(len, by_name))


def resolve_codes(text: str) -> list[str]:
    """The stock codes a text names, in order of first mention, without repeats."""
    found: dict[str, None] = {}
    for match in CODE.finditer(text):
        found[match.group(1)] = None
    by_name, longest = _names()
    position = 0
    while position < len(text):
        for length in range(min(longest, len(text) - position), MIN_NAME_CHARS - 1, -1):
            code = by_name.get(text[position : position + length])
            if code is not None:
                found[code] = None
                position += length
                break
        else:
            position += 1
    return list(found)
