"""Stock entities in a text: 6-digit codes, names from the bundled A-share list, and the short
names people use for them (茅台, 招行) from the bundled alias list.

Names are matched longest first at each position, so "长信科技" resolves to 300088 while a
theme word such as "科技" or "白酒" resolves to nothing. Full names count from 3 characters
(two-character names collide with ordinary words too often); a short name counts only when
it is in the alias list, which holds names checked not to occur inside ordinary words (no
"工行": 加工行业). Only the local lists are used.
"""

from __future__ import annotations

import csv
import re
from functools import lru_cache
from importlib import resources

CODE = re.compile(r"(?<!\d)(\d{6})(?!\d)")
MIN_NAME_CHARS = 3


def _rows(file_name: str) -> list[dict[str, str]]:
    with resources.files("wyckoff.data").joinpath(file_name).open(encoding="utf-8") as f:
        reader = csv.reader(f)  # not DictReader: its rows cost twice as much (read every ask)
        header = next(reader)
        return [dict(zip(header, row, strict=True)) for row in reader if row]


@lru_cache(maxsize=1)
def stock_aliases() -> dict[str, str]:
    """Short name -> code, e.g. 茅台 -> 600519."""
    return {r["alias"]: r["code"] for r in _rows("stock_aliases.csv")}


@lru_cache(maxsize=1)
def listed_names() -> dict[str, str]:
    """Code -> name of every stock in the bundled A-share list (not to be changed)."""
    return {r["code"]: r["name"] for r in _rows("a_share_list.csv")}


@lru_cache(maxsize=1)
def _names() -> tuple[dict[str, str], int]:
    """name or short name -> code, and the longest name's length."""
    by_name = {name: code for code, name in listed_names().items()}
    by_name = {name: code for name, code in by_name.items() if len(name) >= MIN_NAME_CHARS}
    by_name.update(stock_aliases())
    return by_name, max(map(len, by_name))


def resolve_codes(text: str) -> list[str]:
    """The stock codes a text names, in order of first mention, without repeats."""
    found: dict[str, None] = {}
    for match in CODE.finditer(text):
        found[match.group(1)] = None
    by_name, longest = _names()
    position = 0
    while position < len(text):
        for length in range(min(longest, len(text) - position), 1, -1):
            code = by_name.get(text[position : position + length])
            if code is not None:
                found[code] = None
                position += length
                break
        else:
            position += 1
    return list(found)
