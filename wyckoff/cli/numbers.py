"""Numbers as the command line shows them, one way per kind: prices with 2 decimals,
percentages with 2 and a % sign, share counts and money with thousands separators; an
unknown value (too little history) is "—"."""

from __future__ import annotations

UNKNOWN = "—"


def price(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value:,.2f}"


def pct(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return UNKNOWN
    value = round(value, 2) + 0.0  # a tiny change is 0.00%: no "-0.00%", no "+0.00%"
    return f"{value:+,.2f}%" if signed and value else f"{value:,.2f}%"


def count(value: int | None) -> str:
    return UNKNOWN if value is None else f"{value:,}"


def money(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value:,.2f}"
