"""The demo market: a deterministic synthetic A-share market built locally in seconds.

Real codes, names and boards from the bundled stock list; everything else is synthetic:
industries, market caps and daily bars from regime-switching walks in which every stock
cycles through markdown, accumulation (a quiet range with drying volume, sometimes ending
in a spring), an SOS burst, markup and distribution. Daily limits follow the board rules.
The six main indices are cap-weighted averages of their members. Every result computed on
it says `source: "demo"`.

The store is written into a temporary file that replaces the real one only when it is
complete (`built_at` is its last write), so a crash never leaves a half-built demo store.
Bars go in by chunks of days into a table without its key, which is added once at the end,
and DuckDB works under a memory limit: the build stays well below 1 GB.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from wyckoff.engine.market_store import SCHEMA
from wyckoff.engine.thresholds import MAIN_INDICES, board_of, limit_pct
from wyckoff.faults import crash_point

SEED = 20_240_601
DEFAULT_DAYS = 800
INDUSTRIES = (
    "银行", "非银金融", "房地产", "建筑装饰", "建筑材料", "钢铁", "有色金属", "煤炭", "石油石化", "基础化工",
    "电力设备", "机械设备", "国防军工", "汽车", "家用电器", "轻工制造", "纺织服饰", "商贸零售", "社会服务", "食品饮料",
    "农林牧渔", "医药生物", "公用事业", "交通运输", "电子", "计算机", "传媒", "通信", "环保", "美容护理",
)  # fmt: skip
PHASES = ("markdown", "accumulation", "markup", "distribution")
DRIFT = {"markdown": -0.0022, "accumulation": 0.0, "markup": 0.0030, "distribution": 0.0}
VOL_SCALE = {"markdown": 1.0, "accumulation": 0.55, "markup": 1.0, "distribution": 1.25}
VOLUME_SCALE = {"markdown": 0.8, "accumulation": 0.45, "markup": 1.3, "distribution": 1.4}
DAYS_PER_CHUNK = 100  # bars written per insert: about 550k rows on the full market
DUCKDB_MEMORY_LIMIT = "256MB"
BUILT_AT = "built_at"  # sync_state key written last: its presence means the store is complete
INDEX_BASE = {
    "000001.SH": 3000.0,
    "399001.SZ": 10000.0,
    "399006.SZ": 2000.0,
    "000300.SH": 3800.0,
    "000905.SH": 5800.0,
    "000016.SH": 2600.0,
}


def stock_list() -> pd.DataFrame:
    """The bundled A-share list (code, name): parsed once per process (every stock page
    resolves a name against it), a copy per call so that no caller changes another's."""
    return _bundled_list().copy()


@functools.cache
def _bundled_list() -> pd.DataFrame:
    with (
        resources.files("wyckoff.data")
        .joinpath("a_share_list.csv")
        .open(encoding="utf-8") as handle
    ):
        return pd.read_csv(handle, dtype={"code": str, "name": str})


def trading_days(end: date, days: int) -> list[date]:
    """`days` weekdays ending at `end` (the demo calendar has no holidays)."""
    result: list[date] = []
    current = end
    while len(result) < days:
        if current.weekday() < 5:
            result.append(current)
        current -= timedelta(days=1)
    return result[::-1]


@dataclass
class DemoMarket:
    """The simulated market as arrays: bars are (days, stocks) matrices."""

    stocks: pd.DataFrame
    calendar: list[date]
    bars: dict[str, np.ndarray]
    index_bars: pd.DataFrame

    def bar_frame(self, first: int = 0, last: int | None = None) -> pd.DataFrame:
        """Days `first`..`last` of the bars in long form (one row per stock and day)."""
        window = {name: values[first:last] for name, values in self.bars.items()}
        return _long_bars(window, self.stocks["code"].tolist(), self.calendar[first:last])


def simulate(
    end: date | None = None,
    days: int = DEFAULT_DAYS,
    limit: int | None = None,
    on_day: Callable[[int], None] | None = None,
) -> DemoMarket:
    """The synthetic market, deterministic for a given end date, length and stock count;
    `on_day(d)` is told how far the walk has come."""
    rng = np.random.default_rng(SEED)
    stocks = stock_list()
    if limit:
        stocks = stocks.iloc[:limit]
    codes = stocks["code"].tolist()
    n = len(codes)
    calendar = trading_days(end or _last_weekday(date.today()), days)
    boards = np.array([board_of(c) for c in codes])
    is_st = stocks["name"].str.upper().str.contains("ST").to_numpy()
    limits = np.array([limit_pct(b, st) for b, st in zip(boards, is_st, strict=True)])
    industry_ids = rng.integers(0, len(INDUSTRIES), n)
    market_cap0 = np.exp(rng.normal(np.log(8e9), 1.0, n)).clip(5e8, 2e12)
    price0 = np.exp(rng.normal(np.log(15), 0.7, n)).clip(2.5, 400)
    shares = market_cap0 / price0
    sigma = np.where(np.isin(boards, ["chinext", "star"]), 0.026, 0.019) * rng.uniform(0.7, 1.3, n)
    beta = rng.uniform(0.6, 1.4, n)
    turnover = np.exp(rng.normal(np.log(0.012), 0.5, n)) * np.where(market_cap0 > 5e10, 0.4, 1.0)

    market = _market_returns(rng, days)
    sector = rng.normal(0, 0.008, (days, len(INDUSTRIES)))
    bars = _walk(
        rng,
        days,
        n,
        price0,
        sigma,
        beta,
        limits,
        turnover,
        shares,
        market,
        sector[:, industry_ids],
        on_day,
    )
    latest_close = bars["close"][-1]
    stock_frame = pd.DataFrame(
        {
            "code": codes,
            "name": stocks["name"].to_numpy(),
            "industry": [INDUSTRIES[i] for i in industry_ids],
            "board": boards,
            "is_st": is_st,
            "market_cap": shares * latest_close,
            "list_date": calendar[0].strftime("%Y%m%d"),
        }
    )
    index_frame = _indices(bars, codes, boards, shares, calendar)
    return DemoMarket(stock_frame, calendar, bars, index_frame)


def build_demo_market(
    end: date | None = None, days: int = DEFAULT_DAYS, limit: int | None = None
) -> dict[str, pd.DataFrame]:
    """stocks, bars, index_bars and calendar frames of the synthetic market."""
    market = simulate(end, days, limit)
    return {
        "stocks": market.stocks,
        "bars": market.bar_frame(),
        "index_bars": market.index_bars,
        "calendar": pd.DataFrame({"date": market.calendar}),
    }


def build_demo_store(
    path: Path,
    progress: Callable[[str, str, float | None], None] | None = None,
    limit: int | None = None,
) -> None:
    """Write the demo store to `path` atomically (a temporary file renamed into place).
    The caller holds the build lock (see `ensure_demo`)."""
    import duckdb

    def report(stage: str, detail: str, fraction: float | None) -> None:
        if progress:
            progress(stage, detail, fraction)

    market = simulate(
        limit=limit,
        on_day=lambda d: report(
            "生成演示数据", f"合成行情（非真实数据）{d}/{DEFAULT_DAYS} 天", 0.45 * d / DEFAULT_DAYS
        ),
    )
    for stale in path.parent.glob(f"{path.name}.building-*"):  # left by a build that was killed
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    building = path.with_name(f"{path.name}.building-{os.getpid()}")
    conn = duckdb.connect(str(building))
    try:
        conn.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
        conn.execute("SET preserve_insertion_order = false")
        conn.execute("SET enable_progress_bar = false")
        conn.execute(SCHEMA)
        _insert(conn, "stocks", market.stocks.assign(source="demo"))
        _write_bars(conn, market, report)
        crash_point("demo-build")
        report("写入指数", "6 个主要指数", 0.95)
        _insert(conn, "index_bars", market.index_bars.assign(source="demo"))
        calendar = pd.DataFrame({"date": market.calendar, "is_open": True, "source": "demo"})
        _insert(conn, "trade_calendar", calendar)
        built_at = pd.DataFrame(
            {"key": [BUILT_AT], "value": [datetime.now().isoformat(timespec="seconds")]}
        )
        _insert(conn, "sync_state", built_at)
    finally:
        conn.close()
    _wal(path).unlink(missing_ok=True)  # a stale log must not be replayed onto the new file
    os.replace(building, path)
    report("完成", f"{len(market.stocks)} 只股票 × {len(market.calendar)} 个交易日", 1.0)


def _write_bars(conn, market: DemoMarket, report) -> None:
    """Bars by chunks of days into a keyless copy of the table, then the key in one pass."""
    conn.execute("CREATE TABLE bars_load AS FROM bars LIMIT 0")
    days = len(market.calendar)
    for first in range(0, days, DAYS_PER_CHUNK):
        last = min(first + DAYS_PER_CHUNK, days)
        report("写入日线", f"{last}/{days} 个交易日", 0.45 + 0.35 * last / days)
        _insert(
            conn, "bars_load", market.bar_frame(first, last).assign(adj_factor=1.0, source="demo")
        )
    report("建立索引", "日线主键", 0.85)
    conn.execute("DROP TABLE bars")
    conn.execute("ALTER TABLE bars_load RENAME TO bars")
    conn.execute("ALTER TABLE bars ADD PRIMARY KEY (code, date)")


def _insert(conn, table: str, frame: pd.DataFrame) -> None:
    columns = ", ".join(frame.columns)
    conn.register("incoming", frame)
    try:
        conn.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM incoming")
    finally:
        conn.unregister("incoming")


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _last_weekday(day: date) -> date:
    while day.weekday() >= 5:
        day -= timedelta(days=1)
    return day


def _market_returns(rng: np.random.Generator, days: int) -> np.ndarray:
    """A regime-switching market: bull, range and bear spells of a few weeks to months."""
    drift = {0: 0.0009, 1: 0.0, 2: -0.0010}
    vol = {0: 0.010, 1: 0.008, 2: 0.014}
    state, left, out = 1, 0, np.empty(days)
    for d in range(days):
        if left == 0:
            state, left = int(rng.integers(0, 3)), int(rng.integers(25, 90))
        out[d] = rng.normal(drift[state], vol[state])
        left -= 1
    return out


def _walk(
    rng, days, n, price0, sigma, beta, limits, turnover, shares, market, sector, on_day=None
) -> dict[str, np.ndarray]:
    phase = rng.integers(0, len(PHASES), n)
    left = rng.integers(5, 120, n)
    center = price0.copy()
    spring_day = np.full(n, -1)
    age = np.zeros(n, dtype=int)  # days since the current phase began
    close = np.empty((days, n))
    open_, high, low, volume = (np.empty((days, n)) for _ in range(4))
    previous = price0.copy()
    for d in range(days):
        if on_day and d % 50 == 0:
            on_day(d)
        names = np.array(PHASES)[phase]
        drift = np.vectorize(DRIFT.get)(names)
        scale = np.vectorize(VOL_SCALE.get)(names)
        volume_scale = np.vectorize(VOLUME_SCALE.get)(names)
        r = (
            drift
            + beta * market[d] * np.where(names == "accumulation", 0.3, 1.0)
            + sector[d]
            + rng.normal(0, 1, n) * sigma * scale
        )
        accumulating = names == "accumulation"
        r = np.where(accumulating, r - 0.08 * np.log(previous / center), r)
        # A spring: a brief dip under the range that is bought back on volume.
        springing = spring_day == d
        r = np.where(springing, -rng.uniform(0.04, 0.06, n), r)
        recovering = spring_day == d - 1
        r = np.where(recovering, rng.uniform(0.05, 0.08, n), r)
        volume_scale = np.where(recovering, 2.2, volume_scale)
        # SOS: the first day of markup jumps on heavy volume.
        sos = (names == "markup") & (age == 0)
        r = np.where(sos, rng.uniform(0.065, 0.095, n), r)
        volume_scale = np.where(sos, 4.0, volume_scale)
        r = np.clip(r, -limits * 0.999, limits * 0.999)
        c = previous * (1 + r)
        gap = np.clip(rng.normal(0, 0.3, n) * sigma, -limits * 0.9, limits * 0.9)
        o = np.clip(previous * (1 + gap), previous * (1 - limits), previous * (1 + limits))
        wick = np.abs(rng.normal(0, 0.45, (2, n))) * sigma * previous
        h = np.minimum(np.maximum(o, c) + wick[0], previous * (1 + limits))
        lo = np.maximum(np.minimum(o, c) - wick[1], previous * (1 - limits))
        locked = np.abs(r) >= limits * 0.99
        o, h, lo = np.where(locked, c, o), np.where(locked, c, h), np.where(locked, c, lo)
        # Effort and result: in a markup, rallies come on volume and pullbacks on quiet trading.
        volume_scale = np.where(
            names == "markup", volume_scale * np.where(r > 0, 1.3, 0.45), volume_scale
        )
        v = shares * turnover * volume_scale * np.exp(rng.normal(0, 0.35, n)) * (1 + 6 * np.abs(r))
        close[d], open_[d], high[d], low[d], volume[d] = c, o, h, lo, np.round(v / 100) * 100
        previous = c
        left -= 1
        age += 1
        expired = left <= 0
        if expired.any():
            _next_phase(rng, expired, phase, left, center, previous, spring_day, d)
            age[expired] = 0
    amount = volume * (open_ + high + low + close) / 4
    return {
        "open": open_,
        "high": high,
        "low": low,
        "close": close,
        "volume": volume,
        "amount": amount,
    }


def _next_phase(rng, expired, phase, left, center, price, spring_day, d) -> None:
    phase[expired] = (phase[expired] + 1) % len(PHASES)
    lengths = {
        "markdown": (30, 110),
        "accumulation": (50, 150),
        "markup": (30, 120),
        "distribution": (20, 60),
    }
    for index, name in enumerate(PHASES):
        chosen = expired & (phase == index)
        low, high = lengths[name]
        left[chosen] = rng.integers(low, high, chosen.sum())
    starting_accumulation = expired & (phase == PHASES.index("accumulation"))
    center[starting_accumulation] = price[starting_accumulation]
    with_spring = starting_accumulation & (rng.random(len(phase)) < 0.6)
    spring_day[with_spring] = d + left[with_spring] - 2


def _long_bars(bars: dict[str, np.ndarray], codes: list[str], calendar: list[date]) -> pd.DataFrame:
    days, n = bars["close"].shape
    frame = pd.DataFrame(
        {
            "code": np.tile(np.array(codes, dtype=object), days),
            "date": np.repeat(np.array(calendar, dtype="datetime64[D]"), n),
        }
    )
    for name in ("open", "high", "low", "close"):
        frame[name] = np.round(bars[name].reshape(-1), 2)
    frame["volume"] = bars["volume"].reshape(-1)
    frame["amount"] = np.round(bars["amount"].reshape(-1), 0)
    return frame


def _indices(bars, codes, boards, shares, calendar) -> pd.DataFrame:
    caps = bars["close"] * shares
    latest_cap = caps[-1]
    by_cap = np.argsort(-latest_cap)
    sh = np.array([c.startswith("6") for c in codes])
    members = {
        "000001.SH": sh,
        "399001.SZ": np.array([c.startswith(("000", "001", "002", "003")) for c in codes]),
        "399006.SZ": boards == "chinext",
        "000300.SH": np.isin(np.arange(len(codes)), by_cap[:300]),
        "000905.SH": np.isin(np.arange(len(codes)), by_cap[300:800]),
        "000016.SH": np.isin(np.arange(len(codes)), [j for j in by_cap if sh[j]][:50]),
    }
    frames = []
    returns = bars["close"][1:] / bars["close"][:-1] - 1
    for code in MAIN_INDICES:
        mask = (
            members[code] if members[code].any() else np.ones(len(codes), dtype=bool)
        )  # tiny test markets
        weights = caps[:-1, mask]
        daily = (returns[:, mask] * weights).sum(axis=1) / weights.sum(axis=1)
        level = INDEX_BASE[code] * np.concatenate([[1.0], np.cumprod(1 + daily)])
        prev = np.concatenate([[level[0]], level[:-1]])
        frames.append(
            pd.DataFrame(
                {
                    "code": code,
                    "date": np.array(calendar, dtype="datetime64[D]"),
                    "open": prev,
                    "high": np.maximum(prev, level) * 1.003,
                    "low": np.minimum(prev, level) * 0.997,
                    "close": level,
                    "volume": bars["volume"][:, mask].sum(axis=1),
                    "amount": bars["amount"][:, mask].sum(axis=1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
