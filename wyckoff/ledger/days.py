"""The ledger keeps days as YYYYMMDD; every listing and brief shows them as YYYY-MM-DD."""

from __future__ import annotations


def shown_day(day: str) -> str:
    """20261203 -> 2026-12-03 (anything else as it is)."""
    return f"{day[:4]}-{day[4:6]}-{day[6:]}" if len(day) == 8 and day.isdigit() else day
