"""What the ledger needs of the market store: the raw (as-traded) closes of held stocks and
an index, a day's traded range (to check a fill's price), and the corporate actions of held stocks on their ex-dates.

A corporate action is read from the exchange's reference prior close (see adjustment.py):
pre_close = (close_prev - cash) / (1 + bonus), so on an ex-date the bonus per share is the
stored ratio (or the BONUS_RULE reading) and the cash per share is
close_prev - pre_close x (1 + bonus), rounded to 0.001 yuan. A pre_close above the previous
close (a rights issue, 配股) is not a dividend and is left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wyckoff.engine.adjustment import BONUS_RULE

if TYPE_CHECKING:
    import pandas as pd

    from wyckoff.engine.market_store import MarketStore


def closes(store: MarketStore, codes: list[str], start: str | None = None) -> pd.DataFrame:
    """code, date (YYYYMMDD), close: every stored bar of `codes` from `start` on."""
    if not codes:
        import pandas as pd

        return pd.DataFrame({"code": [], "date": [], "close": []})
    return store.query_df(
        f"""SELECT code, strftime(date, '%Y%m%d') AS date, close FROM bars
        WHERE code IN ({_marks(codes)}) AND date >= strptime(?, '%Y%m%d') ORDER BY date, code""",
        [*codes, start or "19901219"],
    )


def traded_range(store: MarketStore, code: str, day: str) -> tuple[float, float] | None:
    """(low, high) of `code`'s bar on `day` (YYYYMMDD) as traded, or None when not stored."""
    rows = store.execute(
        """SELECT low, high FROM bars WHERE code = ? AND date = strptime(?, '%Y%m%d')
        AND low IS NOT NULL AND high IS NOT NULL""",
        [code, day],
    )
    return (float(rows[0][0]), float(rows[0][1])) if rows else None


def stored_span(store: MarketStore) -> tuple[str | None, str | None]:
    """The oldest and newest dates (YYYYMMDD) the store has any stock's bar for."""
    first, last = store.execute(
        "SELECT strftime(MIN(date), '%Y%m%d'), strftime(MAX(date), '%Y%m%d') FROM bars"
    )[0]
    return first, last


def index_closes(store: MarketStore, code: str, start: str) -> pd.DataFrame:
    """date (YYYYMMDD), close of the index `code` from `start` on (empty when not stored)."""
    return store.query_df(
        """SELECT strftime(date, '%Y%m%d') AS date, close FROM index_bars
        WHERE code = ? AND date >= strptime(?, '%Y%m%d') ORDER BY date""",
        [code, start],
    )


def ex_events(store: MarketStore, codes: list[str], after: str) -> pd.DataFrame:
    """code, date (YYYYMMDD), bonus (new shares per share), cash (yuan per share), ratio (the
    exchange's reference close / the close before: how far prices moved): the corporate
    actions of `codes` dated after `after`."""
    if not codes:
        import pandas as pd

        return pd.DataFrame({"code": [], "date": [], "bonus": [], "cash": [], "ratio": []})
    return store.query_df(
        f"""WITH ordered AS (
            SELECT code, date, pre_close, bonus_ratio, adj_factor,
                lag(close) OVER w AS prev_close, lag(adj_factor) OVER w AS prev_adj
            FROM bars WHERE code IN ({_marks(codes)})
            WINDOW w AS (PARTITION BY code ORDER BY date)),
        read AS (
            SELECT code, date, prev_close, pre_close,
                COALESCE(bonus_ratio, {BONUS_RULE}) AS bonus
            FROM ordered
            WHERE pre_close > 0 AND prev_close - pre_close >= 0.005)
        SELECT code, strftime(date, '%Y%m%d') AS date, bonus,
            greatest(round(prev_close - pre_close * (1 + bonus), 3), 0) AS cash,
            pre_close / prev_close AS ratio
        FROM read WHERE date > strptime(?, '%Y%m%d') ORDER BY date, code""",
        [*codes, after],
    )


def _marks(codes: list[str]) -> str:
    return ", ".join("?" for _ in codes)
