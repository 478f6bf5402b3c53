"""Which stock the user means: one exact answer, or the candidates to choose from.

Only an exact code (optionally with its exchange as `600519.SH` or `SH600519`, full-width
characters allowed), an exact name, a short name from the bundled alias list (招行, the same
list memory recall reads), or a name fragment that fits exactly one stock resolves.
Anything else raises `StockNotResolved` with the candidates, so the CLI lists them (exit 2)
and the model asks the user instead of analysing the wrong stock.
"""

from __future__ import annotations

import difflib
import re
import unicodedata

from wyckoff.cli.tools import ToolFailure
from wyckoff.engine.thresholds import MAIN_INDICES, ts_code
from wyckoff.memory.codes import stock_aliases

EXCHANGE_NAMES = {"SH": "上交所", "SZ": "深交所", "BJ": "北交所"}
CODE_PATTERN = re.compile(r"^(SH|SZ|BJ)?(\d{6})(?:\.(SH|SZ|BJ))?$")
MAX_LISTED = 10


class StockNotResolved(ToolFailure):
    """No single stock fits the text; `candidates` are '代码 名称' lines to choose from."""

    exit_code = 2

    def __init__(self, message: str, candidates: list[str]) -> None:
        listed = "".join(f"\n  {line}" for line in candidates[:MAX_LISTED])
        more = f"\n  …共 {len(candidates)} 只" if len(candidates) > MAX_LISTED else ""
        super().__init__(message + listed + more)
        self.candidates = candidates


def exchange_of(code: str) -> str:
    """SH | SZ | BJ for a 6-digit A-share code."""
    return ts_code(code)[-2:]


def normalize(text: str) -> str:
    """Full-width digits, letters and dots to ASCII; spaces dropped; letters upper-case."""
    return "".join(unicodedata.normalize("NFKC", text).split()).upper()


def resolve_stock(stocks, text: str) -> str:
    """The 6-digit code `text` names in `stocks` (columns code, name: a pandas frame or a dict
    of lists), or StockNotResolved."""
    wanted = normalize(text)
    codes = list(stocks["code"])
    names = [name if isinstance(name, str) else "" for name in stocks["name"]]
    name_of = dict(zip(codes, names, strict=True))
    if not wanted:
        raise StockNotResolved("没有给出股票：请给出 6 位代码或股票名称。", [])
    match = CODE_PATTERN.match(wanted)
    if match:
        return _exact_code(match, wanted, name_of)
    if wanted.isdigit():
        partial = [c for c in codes if c.startswith(wanted)]
        raise StockNotResolved(
            f"'{text}' 不是完整的 6 位代码，请给出完整代码或股票名称。"
            + ("以该数字开头的有：" if partial else ""),
            [_line(c, name_of[c]) for c in partial],
        )
    by_name = [c for c, n in zip(codes, names, strict=True) if normalize(n) == wanted]
    if len(by_name) == 1:
        return by_name[0]
    if stock_aliases().get(wanted) in name_of:
        return stock_aliases()[wanted]
    containing = by_name or [
        c for c, n in zip(codes, names, strict=True) if len(wanted) >= 2 and wanted in normalize(n)
    ]
    if len(containing) == 1:
        return containing[0]
    if containing:
        raise StockNotResolved(
            f"'{text}' 对应 {len(containing)} 只股票，请用 6 位代码或完整名称指定其中一只：",
            [_line(c, name_of[c]) for c in containing],
        )
    similar = closest_stocks(name_of, wanted)
    raise StockNotResolved(
        f"找不到股票 '{text}'。请给出 6 位代码或完整名称" + ("，相近的有：" if similar else "。"),
        similar,
    )


def _exact_code(match: re.Match, wanted: str, name_of: dict[str, str]) -> str:
    prefix, code, suffix = match.groups()
    if prefix and suffix and prefix != suffix:
        raise StockNotResolved(f"'{wanted}' 的前缀与后缀是不同的交易所，请只写 6 位代码。", [])
    exchange = prefix or suffix
    known = code in name_of
    if exchange and exchange != exchange_of(code):
        index = MAIN_INDICES.get(f"{code}.{exchange}")
        what = f"是{index}（指数），不是股票" if index else f"不是{EXCHANGE_NAMES[exchange]}的股票"
        actual = f"；{EXCHANGE_NAMES[exchange_of(code)]}的 {code} 是：" if known else "。"
        raise StockNotResolved(
            f"{code}.{exchange} {what}{actual}",
            [_line(code, name_of[code])] if known else [],
        )
    if not known:
        raise StockNotResolved(f"{code} 不是 A 股代码表中的股票，请检查代码。", [])
    return code


def _line(code: str, name: str) -> str:
    return f"{ts_code(code)} {name}"


def closest_stocks(name_of: dict[str, str], text: str, limit: int = 5) -> list[str]:
    """'代码 名称' of the stocks most like `text`: shared characters first, then spelling."""
    scored = []
    for code, name in name_of.items():
        overlap = len(set(text) & set(name)) / max(len(set(text)), 1)
        name_score = 0.8 * overlap + 0.2 * difflib.SequenceMatcher(None, text, name).ratio()
        score = max(name_score, difflib.SequenceMatcher(None, text, code).ratio())
        if score >= 0.4:
            scored.append((score, code, name))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [_line(code, name) for _, code, name in scored[:limit]]
