"""Where market data comes from: tushare (token), akshare (optional extra), baostock (no
token), or the synthetic demo market; and `sync`, which fills the market store.

tushare is spoken directly over its HTTP API (POST {api_name, token, params, fields}) so
that errors are clear and its URL is settable. baostock prints to stdout and has no socket
timeout, so it runs in a child process with captured output and a hard timeout. Nothing
ever falls back to demo silently.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.thresholds import MAIN_INDICES, board_of, ts_code
from wyckoff.errors import WyckoffError

SOURCES = ("auto", "tushare", "akshare", "baostock", "demo", "import")
TUSHARE_URL = "http://api.waditu.com/dataapi"
TUSHARE_CALLS_PER_MINUTE = 400
TUSHARE_PAGE_ROWS = 10_000  # the most rows tushare returns per call of a list API
Progress = Callable[[str, str, float | None], None]


class SourceError(WyckoffError):
    """A data source failed; the message says what to do."""


def chosen_source(config) -> str:
    """WYCKOFF_DATA_SOURCE, else the configured source ('auto' unless `data use` set one)."""
    source = os.environ.get("WYCKOFF_DATA_SOURCE") or config.data.source
    if source not in SOURCES:
        raise SourceError(f"未知的数据源 '{source}'：可选 {', '.join(SOURCES)}。")
    return source


def resolve_source(config) -> str:
    """The concrete source: auto = tushare with a token, else akshare if installed, else baostock."""
    source = chosen_source(config)
    if source != "auto":
        return source
    if tushare_token(config):
        return "tushare"
    try:
        import importlib.util

        if importlib.util.find_spec("akshare") is not None:
            return "akshare"
    except ValueError:
        pass
    return "baostock"


def tushare_token(config) -> str | None:
    return config.data.tushare_token or os.environ.get("TUSHARE_TOKEN") or None


def no_data_hint(source: str) -> str:
    if source == "import":
        return (
            "导入行情库还没有数据：先运行 `wyckoff data import FILE`（格式见 docs/data.md），"
            "或用 `wyckoff data use demo` 改用内置演示数据（合成数据，仅供体验）。"
        )
    return (
        f"本地行情库（数据源 {source}）还没有数据：先运行 `wyckoff data sync`，"
        "或用 `wyckoff data use demo` 改用内置演示数据（合成数据，仅供体验）。"
    )


# --- tushare ------------------------------------------------------------------------------


class TushareClient:
    def __init__(
        self,
        token: str,
        url: str | None = None,
        calls_per_minute: int = TUSHARE_CALLS_PER_MINUTE,
        timeout_s: float = 30,
    ) -> None:
        import httpx

        self.token = token
        self.url = url or os.environ.get("TUSHARE_URL") or TUSHARE_URL
        self.min_interval = 60.0 / calls_per_minute
        self._last_call = 0.0
        self._http = httpx.Client(timeout=timeout_s)

    def query(self, api_name: str, fields: str = "", **params: Any) -> pd.DataFrame:
        import httpx

        wait = self._last_call + self.min_interval - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_call = time.monotonic()
        body = {"api_name": api_name, "token": self.token, "params": params, "fields": fields}
        try:
            response = self._http.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise SourceError(
                f"无法连接 tushare（{self.url}）：{type(exc).__name__}。请检查网络后重试 `wyckoff data sync`，已保存的数据不受影响。"
            ) from None
        if response.status_code != 200:
            raise SourceError(
                f"tushare 返回 HTTP {response.status_code}（{api_name}）。请稍后重试。"
            )
        try:
            payload = response.json()
        except ValueError:
            raise SourceError(f"tushare 返回了无法解析的内容（{api_name}）。") from None
        if payload.get("code") != 0:
            message = str(payload.get("msg") or "未知错误").replace(self.token, "***")
            raise SourceError(f"tushare 拒绝了 {api_name} 请求：{message}")
        data = payload.get("data") or {}
        return pd.DataFrame(data.get("items") or [], columns=data.get("fields") or [])

    def query_all(self, api_name: str, fields: str = "", **params: Any) -> pd.DataFrame:
        """Every row of a list API that caps its answer, page by page (offset/limit) until
        a page comes back short."""
        pages = []
        while True:
            page = self.query(
                api_name,
                fields,
                **params,
                offset=len(pages) * TUSHARE_PAGE_ROWS,
                limit=TUSHARE_PAGE_ROWS,
            )
            pages.append(page)
            if len(page) < TUSHARE_PAGE_ROWS:
                return pd.concat(pages, ignore_index=True)

    def close(self) -> None:
        self._http.close()


def sync_tushare(
    store: MarketStore,
    client: TushareClient,
    days: int,
    codes: list[str] | None,
    progress: Progress,
) -> dict[str, Any]:
    """Incremental and resumable: one call per trade date for the whole market, each date
    committed before the next; dates already stored are skipped."""
    progress("股票列表", "stock_basic", None)
    stocks = _tushare_stocks(client)
    names = client.query_all("namechange", "ts_code,name,start_date,end_date")
    open_dates = _tushare_calendar(store, client, days)
    wanted = {ts_code(c) for c in codes} if codes else None
    done = set((store.get_state("tushare_dates") or "").split(",")) - {""}
    todo = [d for d in open_dates if d not in done]
    stored = 0
    latest_caps: dict[str, float] = {}
    synced: set[str] = set()
    try:
        for number, trade_date in enumerate(todo, 1):
            progress("日线", trade_date, number / max(len(todo), 1))
            rows, caps = _sync_tushare_date(store, client, trade_date, wanted, names)
            latest_caps.update(caps)
            synced |= caps.keys()
            done.add(trade_date)
            store.set_state("tushare_dates", ",".join(sorted(done)))
            stored += rows
    except SourceError as exc:
        missing = [d for d in todo if d not in done]
        raise SourceError(
            f"{exc.message}（已保存 {len(todo) - len(missing)} 个交易日，仍缺 {len(missing)} 个：{missing[0]} 起；重新运行 `wyckoff data sync` 会从断点继续）"
        ) from None
    finally:
        _store_tushare_stocks(store, stocks, latest_caps)
        store.refresh_factors(sorted(synced), derive_price=False)  # tushare gives adj_factor
    _sync_tushare_indices(store, client, open_dates, progress)
    return {"dates": len(todo), "rows": stored}


def _store_tushare_stocks(
    store: MarketStore, stocks: pd.DataFrame, latest_caps: dict[str, float]
) -> None:
    """The stock list with the caps of the dates just synced; kept as stored when no date
    was (a list without caps would blank the stored ones), unless the store is empty."""
    stocks["market_cap"] = stocks["code"].map(latest_caps)
    if stocks["market_cap"].notna().any() or store.is_empty():
        store.upsert("stocks", stocks)


def _tushare_calendar(store: MarketStore, client: TushareClient, days: int) -> list[str]:
    """Store the SSE calendar around the last `days` open dates and return those dates."""
    end = date.today()
    start = end - timedelta(days=int(days * 1.6) + 10)
    calendar = client.query(
        "trade_cal",
        "cal_date,is_open",
        exchange="SSE",
        start_date=start.strftime("%Y%m%d"),
        end_date=end.strftime("%Y%m%d"),
    )
    store.upsert(
        "trade_calendar",
        pd.DataFrame(
            {
                "date": pd.to_datetime(calendar["cal_date"]),
                "is_open": calendar["is_open"].astype(int) == 1,
            }
        ),
    )
    return sorted(
        d
        for d, flag in zip(calendar["cal_date"], calendar["is_open"], strict=True)
        if int(flag) == 1
    )[-days:]


def _sync_tushare_date(
    store: MarketStore,
    client: TushareClient,
    trade_date: str,
    wanted: set[str] | None,
    names: pd.DataFrame,
) -> tuple[int, dict[str, float]]:
    """One trade date's bars and daily facts stored; returns the bar rows and market caps."""
    daily = client.query(
        "daily",
        "ts_code,trade_date,open,high,low,close,pre_close,vol,amount",
        trade_date=trade_date,
    )
    factors = client.query("adj_factor", "ts_code,trade_date,adj_factor", trade_date=trade_date)
    basic = client.query(
        "daily_basic",
        "ts_code,trade_date,total_mv,circ_mv,turnover_rate",
        trade_date=trade_date,
    )
    if wanted is not None:
        daily = daily[daily["ts_code"].isin(wanted)]
    merged = daily.merge(factors, on=["ts_code", "trade_date"], how="left")
    merged["bonus_ratio"] = merged["ts_code"].map(_tushare_bonus(client, trade_date))
    store.upsert("bars", _tushare_bars(merged))
    store.upsert("daily_basic", _tushare_basic(basic, names, trade_date))
    caps = dict(zip(basic["ts_code"].str[:6], basic["total_mv"] * 1e4, strict=True))
    return len(merged), caps


def _tushare_bonus(client: TushareClient, trade_date: str) -> dict[str, float]:
    """ts_code -> shares credited per share (送股 + 转增) by the plans carried out with this
    ex-date; stocks without one are absent (their share factor is read from pre_close)."""
    plans = client.query("dividend", "ts_code,div_proc,stk_div,ex_date", ex_date=trade_date)
    if plans.empty:
        return {}
    done = plans[plans["div_proc"] == "实施"]
    return done.groupby("ts_code")["stk_div"].sum().astype(float).to_dict()


def _tushare_stocks(client: TushareClient) -> pd.DataFrame:
    """Listed, delisted and suspended stocks (list_status L, D, P): no survivorship bias."""
    frames = []
    for status in ("L", "D", "P"):
        basics = client.query(
            "stock_basic", "ts_code,symbol,name,industry,list_date", list_status=status
        )
        frames.append(basics.assign(list_status=status))
    basics = pd.concat(frames).drop_duplicates("symbol")
    return pd.DataFrame(
        {
            "code": basics["symbol"],
            "name": basics["name"],
            "industry": basics["industry"].fillna("未知"),
            "board": [board_of(c) for c in basics["symbol"]],
            "list_date": basics["list_date"],
            "is_st": basics["name"].str.upper().str.contains("ST"),
            "list_status": basics["list_status"],
        }
    )


def _tushare_bars(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "code": frame["ts_code"].str[:6],
            "date": pd.to_datetime(frame["trade_date"]),
            "open": frame["open"],
            "high": frame["high"],
            "low": frame["low"],
            "close": frame["close"],
            "pre_close": frame.get("pre_close", np.nan),  # the exchange's reference price
            "volume": frame["vol"] * 100,  # tushare: lots of 100 shares
            "amount": frame["amount"] * 1000,  # tushare: thousands of CNY
            "adj_factor": frame["adj_factor"],  # NULL when missing: the load carries it forward
            "bonus_ratio": frame["bonus_ratio"],  # NULL unless a dividend plan says it
        }
    )


def _tushare_basic(frame: pd.DataFrame, names: pd.DataFrame, trade_date: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "code": frame["ts_code"].str[:6],
            "date": pd.to_datetime(frame["trade_date"]),
            "total_mv": frame["total_mv"] * 1e4,  # tushare: ten-thousands of CNY
            "float_mv": frame["circ_mv"] * 1e4 if "circ_mv" in frame else np.nan,
            "turnover_rate": frame["turnover_rate"],
            "is_st": frame["ts_code"].map(st_on(names, trade_date)).astype("boolean"),
        }
    )


def st_on(names: pd.DataFrame, trade_date: str) -> dict[str, bool]:
    """ts_code -> whether its name on `trade_date` (namechange history) marks it ST; codes
    without a name record on that date are absent (stored NULL, never guessed)."""
    if names.empty:
        return {}
    current = names[
        (names["start_date"] <= trade_date)
        & (names["end_date"].isna() | (names["end_date"] >= trade_date))
    ]
    current = current.sort_values("start_date").drop_duplicates("ts_code", keep="last")
    return dict(
        zip(current["ts_code"], current["name"].str.upper().str.contains("ST"), strict=True)
    )


def _sync_tushare_indices(
    store: MarketStore, client: TushareClient, open_dates: list[str], progress: Progress
) -> None:
    if not open_dates:
        return
    for number, code in enumerate(MAIN_INDICES, 1):
        progress("指数", code, number / len(MAIN_INDICES))
        frame = client.query(
            "index_daily",
            "ts_code,trade_date,open,high,low,close,vol,amount",
            ts_code=code,
            start_date=open_dates[0],
            end_date=open_dates[-1],
        )
        store.upsert(
            "index_bars",
            pd.DataFrame(
                {
                    "code": frame["ts_code"],
                    "date": pd.to_datetime(frame["trade_date"]),
                    "open": frame["open"],
                    "high": frame["high"],
                    "low": frame["low"],
                    "close": frame["close"],
                    "volume": frame["vol"] * 100,
                    "amount": frame["amount"] * 1000,
                }
            ),
        )


# --- baostock (isolated) -------------------------------------------------------------------


def run_isolated(target: Callable[..., Any], args: tuple, timeout_s: float) -> Any:
    """Run `target(*args)` in a child process with stdout captured and a hard timeout."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        pending = pool.apply_async(_quiet_call, (target, args))
        try:
            return pending.get(timeout=timeout_s)
        except multiprocessing.TimeoutError:
            pool.terminate()
            raise SourceError(
                f"数据源在 {timeout_s:g} 秒内没有响应，已中止。请检查网络后重试。"
            ) from None
        except Exception as exc:  # the library's own failure, raised in the child
            raise SourceError(
                f"数据源出错：{exc}。请检查网络后重试 `wyckoff data sync`，已保存的数据不受影响。"
            ) from None


def _quiet_call(target: Callable[..., Any], args: tuple) -> Any:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return target(*args)


@dataclass(frozen=True)
class PerCodeSource:
    """A source fetched stock by stock (baostock, akshare). `listing` and `fetch` run in an
    isolated child and return library-shaped rows; `frames` normalises them in the parent."""

    listing: Callable[[str, str], pd.DataFrame]  # (start, end) -> code, name, industry, ...
    fetch: Callable[[list[str], str, str], list]  # (codes, start, end) -> rows per stock
    frames: Callable[[list], tuple[pd.DataFrame, pd.DataFrame]]  # rows -> bars, daily_basic
    indices: Callable[[str, str], pd.DataFrame]  # (start, end) -> index_bars of MAIN_INDICES


def sync_per_code(
    store: MarketStore,
    source: PerCodeSource,
    days: int,
    codes: list[str] | None,
    progress: Progress,
    timeout_s: float = 120,
) -> dict[str, Any]:
    """Raw bars with the exchange's reference prior close (the factors are derived from it,
    see adjustment.py) and per-date facts, fetched per stock in isolated batches of 50. The
    universe includes stocks delisted inside the window."""
    end = date.today()
    start = (end - timedelta(days=int(days * 1.6) + 10)).isoformat()
    progress("股票列表", "", None)
    stocks = run_isolated(source.listing, (start, end.isoformat()), timeout_s)
    if codes:
        stocks = stocks[stocks["code"].isin(codes)]
    store.upsert("stocks", stocks)
    todo = stocks["code"].tolist()
    stored = 0
    for first in range(0, len(todo), 50):
        batch = todo[first : first + 50]
        progress("日线", f"{batch[0]}…", first / max(len(todo), 1))
        bars, basic = source.frames(
            run_isolated(source.fetch, (batch, start, end.isoformat()), timeout_s)
        )
        stored += len(bars)
        store.write({"bars": bars, "daily_basic": basic}, derive_price=True)
    progress("指数", "", None)
    store.upsert("index_bars", run_isolated(source.indices, (start, end.isoformat()), timeout_s))
    return {"rows": stored}


def _listing_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The stocks table from code, name, industry, list_date, list_status columns."""
    return frame.assign(
        board=[board_of(c) for c in frame["code"]],
        is_st=frame["name"].str.upper().str.contains("ST"),
        market_cap=None,
    ).reset_index(drop=True)


def _daily_frames(frame: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """bars and daily_basic from normalised columns: code, date, raw open..close, pre_close
    (the exchange's reference price), volume (shares), amount (CNY), turnover_rate (%),
    is_st and bonus_ratio (or absent). Days without trading are dropped (a suspended day has
    no bar). The float cap is derived per day: close x volume / turnover rate."""
    if frame is None or frame.empty:
        return pd.DataFrame(), pd.DataFrame()
    frame = _typed(frame)
    frame = frame[(frame["volume"] > 0) & (frame["close"] > 0)]
    columns = ["code", "date", "open", "high", "low", "close", "pre_close", "volume", "amount"]
    bars = frame[columns + (["bonus_ratio"] if "bonus_ratio" in frame else [])]
    with np.errstate(invalid="ignore", divide="ignore"):
        float_mv = frame["close"] * frame["volume"] / (frame["turnover_rate"] / 100)
    basic = pd.DataFrame(
        {
            "code": frame["code"],
            "date": frame["date"],
            "total_mv": np.nan,
            "float_mv": float_mv.where(frame["turnover_rate"] > 0),
            "turnover_rate": frame["turnover_rate"],
            "is_st": frame.get("is_st"),
        }
    )
    return bars.reset_index(drop=True), basic.reset_index(drop=True)


# --- baostock (isolated) -------------------------------------------------------------------

BAOSTOCK_FIELDS = "date,code,open,high,low,close,preclose,volume,amount,turn,tradestatus,isST"


def _baostock_rows(result) -> list[list[str]]:
    rows = []
    while result.error_code == "0" and result.next():
        rows.append(result.get_row_data())
    if result.error_code != "0":
        raise RuntimeError(f"baostock 查询失败：{result.error_msg}")
    return rows


def _baostock_session():
    import baostock as bs

    login = bs.login()
    if login.error_code != "0":
        raise RuntimeError(f"baostock 登录失败：{login.error_msg}")
    return bs


def _baostock_listing(start: str, end: str) -> pd.DataFrame:
    bs = _baostock_session()
    try:
        basics = _baostock_rows(bs.query_stock_basic())
        industries = _baostock_rows(bs.query_stock_industry())
    finally:
        bs.logout()
    return baostock_listing(basics, industries, start, end)


def baostock_listing(
    basics: list[list[str]], industries: list[list[str]], start: str, end: str
) -> pd.DataFrame:
    """query_stock_basic rows (code, code_name, ipoDate, outDate, type, status) and
    query_stock_industry rows (updateDate, code, code_name, industry, industryClassification)
    -> the stocks table: A shares listed by `end`, delisted ones only if still trading
    after `start`."""
    frame = pd.DataFrame(basics, columns=["code", "name", "ipo", "out", "type", "status"])
    frame = frame[(frame["type"] == "1") & (frame["ipo"] <= end)]
    frame = frame[(frame["status"] == "1") | (frame["out"] >= start)]
    industry = {row[1]: row[3] for row in industries if row[3]}
    return _listing_frame(
        pd.DataFrame(
            {
                "code": frame["code"].str[3:],
                "name": frame["name"],
                "industry": [industry.get(c, "未知") for c in frame["code"]],
                "list_date": frame["ipo"].str.replace("-", ""),
                "list_status": np.where(frame["status"] == "1", "L", "D"),
            }
        )
    )


def _baostock_fetch(codes: list[str], start: str, end: str) -> list[list[list[str]]]:
    """Per stock: unadjusted k-data rows (BAOSTOCK_FIELDS). baostock's own adjusted prices
    are not needed: the factors come from `preclose`."""
    bs = _baostock_session()
    fetched = []
    try:
        for code in codes:
            symbol = f"{'sh' if code.startswith('6') else 'sz'}.{code}"
            query = bs.query_history_k_data_plus(
                symbol,
                BAOSTOCK_FIELDS,
                start_date=start,
                end_date=end,
                frequency="d",
                adjustflag="3",
            )
            fetched.append(_baostock_rows(query))
    finally:
        bs.logout()
    return fetched


def _baostock_indices(start: str, end: str) -> pd.DataFrame:
    bs = _baostock_session()
    try:
        fetched = {
            code: _baostock_rows(
                bs.query_history_k_data_plus(
                    f"{code[-2:].lower()}.{code[:6]}",
                    INDEX_FIELDS,
                    start_date=start,
                    end_date=end,
                    frequency="d",
                    adjustflag="3",
                )
            )
            for code in MAIN_INDICES
        }
    finally:
        bs.logout()
    return baostock_index_frame(fetched)


INDEX_FIELDS = "date,code,open,high,low,close,volume,amount"


def baostock_index_frame(fetched: dict[str, list[list[str]]]) -> pd.DataFrame:
    """index_bars from baostock index rows (INDEX_FIELDS, strings) per index code."""
    frames = [
        pd.DataFrame(rows, columns=INDEX_FIELDS.split(",")).assign(code=code)
        for code, rows in fetched.items()
        if rows
    ]
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames)
    for column in INDEX_FIELDS.split(",")[2:]:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame.assign(date=pd.to_datetime(frame["date"])).reset_index(drop=True)


def baostock_frames(fetched: list[list[list[str]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """bars and daily_basic from baostock rows: all values are strings ('' when empty),
    preclose the exchange's reference price, volume in shares, amount in CNY, turn in %,
    tradestatus '1' = traded, isST '1' = ST."""
    frames = []
    for raw in fetched:
        frame = pd.DataFrame(raw, columns=BAOSTOCK_FIELDS.split(","))
        frames.append(
            frame[frame["tradestatus"] == "1"].assign(
                code=frame["code"].str[3:],
                pre_close=frame["preclose"],
                turnover_rate=frame["turn"],
                is_st=frame["isST"] == "1",
            )
        )
    return _daily_frames(pd.concat(frames) if frames else None)


NUMERIC = ("open", "high", "low", "close", "pre_close", "volume", "amount", "turnover_rate")


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Numbers and dates from library values; empty strings become NaN."""
    frame = frame.copy()
    for column in NUMERIC:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame["date"] = pd.to_datetime(frame["date"])
    return frame


# --- akshare (isolated) --------------------------------------------------------------------

AKSHARE_COLUMNS = {
    "日期": "date",
    "开盘": "open",
    "最高": "high",
    "最低": "low",
    "收盘": "close",
    "成交量": "volume",
    "成交额": "amount",
    "换手率": "turnover_rate",
}


def _akshare_listing(start: str, end: str) -> pd.DataFrame:
    import akshare as ak

    return akshare_listing(ak.stock_info_a_code_name())


def akshare_listing(frame: pd.DataFrame) -> pd.DataFrame:
    """stock_info_a_code_name (code, name): listed stocks only, no industry."""
    return _listing_frame(
        pd.DataFrame(
            {
                "code": frame["code"].astype(str).str.zfill(6),
                "name": frame["name"],
                "industry": "未知",
                "list_date": None,
                "list_status": "L",
            }
        )
    )


def _akshare_fetch(codes: list[str], start: str, end: str) -> list[tuple[str, list, list]]:
    """Per stock: unadjusted stock_zh_a_hist records and its dividends (stock_fhps_detail_em).
    akshare's hfq prices are not used: they are not a clean multiplicative series."""
    import akshare as ak

    fetched = []
    for code in codes:
        raw = ak.stock_zh_a_hist(
            symbol=code,
            period="daily",
            start_date=start.replace("-", ""),
            end_date=end.replace("-", ""),
            adjust="",
        )
        dividends = ak.stock_fhps_detail_em(symbol=code)
        fetched.append((code, raw.to_dict("records"), dividends.to_dict("records")))
    return fetched


def _akshare_indices(start: str, end: str) -> pd.DataFrame:
    import akshare as ak

    fetched = {
        code: ak.stock_zh_index_daily(symbol=f"{code[-2:].lower()}{code[:6]}")
        for code in MAIN_INDICES
    }
    return akshare_index_frame(fetched, start, end)


def akshare_index_frame(fetched: dict[str, pd.DataFrame], start: str, end: str) -> pd.DataFrame:
    """index_bars from stock_zh_index_daily frames (date, open, high, low, close, volume;
    no amount), cut to the sync window."""
    frames = []
    for code, frame in fetched.items():
        frame = frame.assign(code=code, date=pd.to_datetime(frame["date"]), amount=np.nan)
        frames.append(frame[(frame["date"] >= start) & (frame["date"] <= end)])
    columns = ["code", "date", "open", "high", "low", "close", "volume", "amount"]
    return pd.concat(frames)[columns].reset_index(drop=True) if frames else pd.DataFrame()


def akshare_frames(fetched: list[tuple[str, list, list]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """bars and daily_basic from stock_zh_a_hist records (Chinese columns; 成交量 in lots of
    100 shares, 成交额 in CNY, 换手率 in %) and stock_fhps_detail_em records. Its 涨跌额
    counts from the previous raw close, not the exchange's reference price, so pre_close is
    rebuilt from the dividends (`reference_prices`). It has no ST status per date."""
    frames = []
    for code, raw, dividends in fetched:
        frame = pd.DataFrame(raw).rename(columns=AKSHARE_COLUMNS)
        if frame.empty:
            continue
        frame = frame.assign(
            code=code,
            date=pd.to_datetime(frame["date"].astype(str)),
            close=pd.to_numeric(frame["close"]),
            volume=pd.to_numeric(frame["volume"]) * 100,
        )
        frames.append(reference_prices(frame, akshare_dividends(dividends)))
    return _daily_frames(pd.concat(frames) if frames else None)


def akshare_dividends(records: list[dict]) -> pd.DataFrame:
    """ex_date, cash (CNY per share) and bonus (shares per share) of the carried-out plans
    (方案进度 实施分配) in stock_fhps_detail_em records, whose ratios are per 10 shares."""
    frame = pd.DataFrame(
        records, columns=["除权除息日", "方案进度", "现金分红-现金分红比例", "送转股份-送转总比例"]
    )
    frame = frame[frame["方案进度"].astype(str).str.contains("实施") & frame["除权除息日"].notna()]
    return pd.DataFrame(
        {
            "ex_date": pd.to_datetime(frame["除权除息日"].astype(str)),
            "cash": pd.to_numeric(frame["现金分红-现金分红比例"], errors="coerce").fillna(0) / 10,
            "bonus": pd.to_numeric(frame["送转股份-送转总比例"], errors="coerce").fillna(0) / 10,
        }
    )


def reference_prices(bars: pd.DataFrame, dividends: pd.DataFrame) -> pd.DataFrame:
    """One stock's bars (date order) with the exchange's reference prior close: the previous
    close, and on the first bar on or after an ex-date (close_prev - cash) / (1 + bonus)
    rounded to the cent, the exchange's formula; bonus_ratio is that bonus (0 elsewhere)."""
    bars = bars.sort_values("date").reset_index(drop=True)
    previous = bars["close"].shift(1)
    bonus = pd.Series(0.0, index=bars.index)
    cash = pd.Series(0.0, index=bars.index)
    for action in dividends.itertuples():
        on = bars.index[bars["date"] >= action.ex_date]
        if len(on) and on[0] > 0:  # an ex-date before the first bar changes nothing stored
            bonus[on[0]] += action.bonus
            cash[on[0]] += action.cash
    ex_rights = np.floor((previous - cash) / (1 + bonus) * 100 + 0.5) / 100
    reference = previous.where((bonus == 0) & (cash == 0), ex_rights)
    return bars.assign(pre_close=reference, bonus_ratio=bonus)


BAOSTOCK = PerCodeSource(_baostock_listing, _baostock_fetch, baostock_frames, _baostock_indices)
AKSHARE = PerCodeSource(_akshare_listing, _akshare_fetch, akshare_frames, _akshare_indices)


# --- demo -----------------------------------------------------------------------------------


def ensure_demo(
    home: Path, progress: Progress | None = None, limit: int | None = None
) -> MarketStore:
    """The demo store, built (or rebuilt, when an earlier build was cut short) on first use.

    Processes that need it at the same time take turns: one builds, the others then find it.
    """
    import fcntl

    from wyckoff.engine.demo import build_demo_store

    store = MarketStore.for_source(home, "demo")
    if demo_complete(store):
        return store
    home.mkdir(parents=True, exist_ok=True)
    with open(store.path.with_name(store.path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not demo_complete(store):
            build_demo_store(store.path, progress, limit)
    return store


def demo_complete(store: MarketStore) -> bool:
    """A demo store counts only when its build finished (it records `built_at` last)."""
    from wyckoff.engine.demo import BUILT_AT

    return store.path.exists() and store.get_state(BUILT_AT) is not None


def sync(
    home: Path, config, days: int, codes: list[str] | None, progress: Progress
) -> dict[str, Any]:
    """Fill the store of the chosen source."""
    source = resolve_source(config)
    store = MarketStore.for_source(home, source)
    if source == "demo":
        ensure_demo(home, progress)
        return {"source": "demo", "note": "演示数据是本地合成的，不需要同步。"}
    if source == "import":
        raise SourceError(
            "数据源 import 的行情来自你导入的文件，不能同步：用 `wyckoff data import FILE` 追加新数据，"
            "或用 `wyckoff data use baostock`（或 tushare、akshare）改用可同步的数据源。"
        )
    if source == "tushare":
        token = tushare_token(config)
        if not token:
            raise SourceError(
                "tushare 需要 token：设置环境变量 TUSHARE_TOKEN，或运行 `wyckoff data use tushare --token TOKEN`。"
            )
        client = TushareClient(token, config.data.tushare_url)
        try:
            return {"source": source, **sync_tushare(store, client, days, codes, progress)}
        finally:
            client.close()
    per_code = BAOSTOCK if source == "baostock" else AKSHARE
    return {"source": source, **sync_per_code(store, per_code, days, codes, progress)}
