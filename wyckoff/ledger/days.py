"""The ledger's days: stored and typed as YYYYMMDD, shown in every listing, sentence and brief
as YYYY-MM-DD."""

from __future__ import annotations


def day_text(day: str) -> str:
    """A stored day (20260105) as people read it (2026-01-05); anything else as it is."""
    return f"{day[:4]}-{day[4:6]}-{day[6:]}" if len(day) == 8 and day.isdigit() else day
