"""Minute bars on demand, cached per stock and day in their own DuckDB file.

Each market store has a minute file beside it (`market.duckdb` -> `market-minutes.duckdb`,
`market-demo.duckdb` -> `market-demo-minutes.duckdb`), so writing minutes never touches the
daily file. `minute_bars` holds the bars (timestamps label the bar's end, Beijing time, as the
vendors do: 09:31 is 09:30-09:31); `minute_days` says per stock and day which source they came
from, their bar length, the minute they are as of and whether the day is complete (its 15:00
bar is in). A complete day is never fetched again; today's partial day is refetched when it is
behind the clock, and replaced in one transaction.

A feed is checked before anything is written: duplicate minutes that disagree, a gap inside
the session, a past day that stops before 15:00 (a half day) or a day with no bars at all are
refused with one sentence (`MinuteFeedError`); nothing of that feed is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

import pandas as pd

from wyckoff.engine.market_store import MarketStore
from wyckoff.errors import WyckoffError

MINUTE_SCHEMA = """
CREATE TABLE IF NOT EXISTS minute_bars (
    code VARCHAR, day DATE, ts TIMESTAMP, open DOUBLE, high DOUBLE, low DOUBLE, close DOUBLE,
    volume DOUBLE, amount DOUBLE, source VARCHAR, PRIMARY KEY (code, ts));
CREATE TABLE IF NOT EXISTS minute_days (
    code VARCHAR, day DATE, freq INTEGER, source VARCHAR, as_of TIMESTAMP, complete BOOLEAN,
    PRIMARY KEY (code, day));
"""
COLUMNS = ["ts", "open", "high", "low", "close", "volume", "amount"]
MORNING = (time(9, 30), time(11, 30))
AFTERNOON = (time(13, 0), time(15, 0))
STALE_AFTER = timedelta(minutes=10)  # a live feed further behind the clock than this is stale

# fetch(code, day) -> (bars with COLUMNS, bar length in minutes)
MinuteFetch = Callable[[str, date], tuple[pd.DataFrame, int]]


class MinuteFeedError(WyckoffError):
    """A minute feed that cannot be used as it is (no bars, a gap, disagreeing duplicates)."""


@dataclass(frozen=True)
class MinuteDay:
    code: str
    day: date
    bars: pd.DataFrame  # COLUMNS, oldest first
    freq: int
    source: str
    as_of: datetime
    complete: bool


class MinuteStore(MarketStore):
    schema = MINUTE_SCHEMA

    @classmethod
    def beside(cls, daily: MarketStore) -> MinuteStore:
        """The minute file of a daily store."""
        return cls(daily.path.with_name(f"{daily.path.stem}-minutes.duckdb"), daily.source)

    def cached(self, code: str, day: date) -> MinuteDay | None:
        if not self.path.exists():
            return None
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT freq, source, as_of, complete FROM minute_days WHERE code = ? AND day = ?",
                [code, day],
            ).fetchall()
            if not rows:
                return None
            freq, source, as_of, complete = rows[0]
            bars = conn.execute(
                f"SELECT {', '.join(COLUMNS)} FROM minute_bars WHERE code = ? AND day = ? ORDER BY ts",
                [code, day],
            ).df()
        return MinuteDay(code, day, bars, int(freq), source, as_of, bool(complete))

    def save(self, minutes: MinuteDay) -> None:
        """The day's bars and its label in one transaction."""
        label = pd.DataFrame(
            {
                "code": [minutes.code],
                "day": [minutes.day],
                "freq": [minutes.freq],
                "source": [minutes.source],
                "as_of": [minutes.as_of],
                "complete": [minutes.complete],
            }
        )
        bars = minutes.bars.assign(code=minutes.code, day=minutes.day, source=minutes.source)
        self.write({"minute_bars": bars, "minute_days": label})


def session_slots(day: date, freq: int) -> list[datetime]:
    """Every bar end of a full trading day for bars of `freq` minutes."""
    slots = []
    for start, end in (MORNING, AFTERNOON):
        moment = datetime.combine(day, start) + timedelta(minutes=freq)
        while moment.time() <= end:
            slots.append(moment)
            moment += timedelta(minutes=freq)
    return slots


def day_minutes(
    store: MinuteStore, code: str, day: date, now: datetime, fetch: MinuteFetch
) -> MinuteDay:
    """`code`'s minute bars of `day` up to `now` (naive Beijing time): from the cache when it
    is complete or current, else fetched, checked and stored."""
    cached = store.cached(code, day)
    if cached is not None and (cached.complete or now - cached.as_of < timedelta(minutes=1)):
        return _until(cached, now)
    raw, freq = fetch(code, day)
    bars = checked_feed(raw, code, day, freq, now)
    last = bars["ts"].iloc[-1].to_pydatetime()
    complete = last.time() == AFTERNOON[1]
    minutes = MinuteDay(code, day, bars, freq, store.source, min(now, last), complete)
    store.save(minutes)
    return minutes


def _until(minutes: MinuteDay, now: datetime) -> MinuteDay:
    bars = minutes.bars[minutes.bars["ts"] <= pd.Timestamp(now)].reset_index(drop=True)
    if len(bars) == len(minutes.bars):
        return minutes
    as_of = bars["ts"].iloc[-1].to_pydatetime() if len(bars) else now
    return MinuteDay(minutes.code, minutes.day, bars, minutes.freq, minutes.source, as_of, False)


def checked_feed(raw: pd.DataFrame, code: str, day: date, freq: int, now: datetime) -> pd.DataFrame:
    """The feed's bars of `day` up to `now`, the opening auction folded into the first bar;
    MinuteFeedError when they cannot be trusted."""
    where = f"{code} 在 {day:%Y-%m-%d}"
    if raw.empty:
        raise MinuteFeedError(f"{where} 没有分钟线（停牌，或数据源还没有这一天）：无法做分时检查。")
    bars = raw[COLUMNS].assign(ts=pd.to_datetime(raw["ts"]))
    bars = bars[(bars["ts"].dt.date == day) & (bars["ts"] <= pd.Timestamp(now))]
    bars = _fold_auction(bars.drop_duplicates(), freq).sort_values("ts", kind="stable")
    repeated = bars["ts"][bars["ts"].duplicated()]
    if len(repeated):
        raise MinuteFeedError(
            f"{where} 的分钟线有重复且不一致的分钟（{repeated.iloc[0]:%H:%M}）：数据源有误，"
            "本次没有写入，请稍后重试。"
        )
    if bars.empty:
        raise MinuteFeedError(f"{where} 截至 {now:%H:%M} 还没有成交的分钟线：开盘后再试。")
    expected = [s for s in session_slots(day, freq) if s <= bars["ts"].iloc[-1]]
    missing = sorted(set(expected) - set(bars["ts"]))
    if missing:
        raise MinuteFeedError(
            f"{where} 的分钟线有缺口（缺 {missing[0]:%H:%M} 等 {len(missing)} 个时段）：不完整的"
            "分时无法判断量能和 VWAP，本次没有写入，请稍后重试。"
        )
    last = bars["ts"].iloc[-1].to_pydatetime()
    closes_by = min(now, datetime.combine(day, AFTERNOON[1]))
    at_lunch = closes_by.time() < AFTERNOON[0] and last.time() == MORNING[1]
    if closes_by - last > STALE_AFTER and not at_lunch:
        raise MinuteFeedError(
            f"{where} 的分钟线只到 {last:%H:%M}（应到 {closes_by:%H:%M}，只有半天或数据源滞后）："
            "不完整的分时无法判断尾盘，本次没有写入。"
        )
    return bars.reset_index(drop=True)


def _fold_auction(bars: pd.DataFrame, freq: int) -> pd.DataFrame:
    """A 09:30 bar (the opening auction, which some vendors send) joins the first bar."""
    opening = bars["ts"].dt.time == MORNING[0]
    if not opening.any():
        return bars
    auction = bars[opening].iloc[0]
    first_slot = auction["ts"] + pd.Timedelta(minutes=freq)
    bars = bars[~opening].reset_index(drop=True)
    first = bars.index[bars["ts"] == first_slot]
    if not len(first):
        return pd.concat([bars, auction.to_frame().T.assign(ts=first_slot)]).sort_values("ts")
    i = first[0]
    bars.loc[i, "open"] = auction["open"]
    bars.loc[i, "high"] = max(bars.loc[i, "high"], auction["high"])
    bars.loc[i, "low"] = min(bars.loc[i, "low"], auction["low"])
    bars.loc[i, "volume"] += auction["volume"]
    bars.loc[i, "amount"] += auction["amount"]
    return bars
