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
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from wyckoff.engine.config import MAIN_INDICES, board_of, ts_code
from wyckoff.engine.store import MarketStore
from wyckoff.errors import WyckoffError

SOURCES = ("auto", "tushare", "akshare", "baostock", "demo")
TUSHARE_URL = "http://api.waditu.com/dataapi"
TUSHARE_CALLS_PER_MINUTE = 400
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
    basics = client.query("stock_basic", "ts_code,symbol,name,industry,list_date", list_status="L")
    stocks = pd.DataFrame(
        {
            "code": basics["symbol"],
            "name": basics["name"],
            "industry": basics["industry"].fillna("未知"),
            "board": [board_of(c) for c in basics["symbol"]],
            "list_date": basics["list_date"],
            "is_st": basics["name"].str.upper().str.contains("ST"),
        }
    )
    end = date.today()
    start = end - timedelta(days=int(days * 1.6) + 10)
    calendar = client.query(
        "trade_cal",
        "cal_date,is_open",
        exchange="SSE",
        start_date=start.strftime("%Y%m%d"),
        end_date=end.strftime("%Y%m%d"),
    )
    open_dates = sorted(
        d
        for d, flag in zip(calendar["cal_date"], calendar["is_open"], strict=True)
        if int(flag) == 1
    )[-days:]
    store.upsert(
        "trade_calendar",
        pd.DataFrame(
            {
                "date": pd.to_datetime(calendar["cal_date"]),
                "is_open": calendar["is_open"].astype(int) == 1,
            }
        ),
    )
    wanted = {ts_code(c) for c in codes} if codes else None
    done = set((store.get_state("tushare_dates") or "").split(",")) - {""}
    todo = [d for d in open_dates if d not in done]
    stored, missing = 0, []
    latest_caps: dict[str, float] = {}
    try:
        for number, trade_date in enumerate(todo, 1):
            progress("日线", trade_date, number / max(len(todo), 1))
            daily = client.query(
                "daily", "ts_code,trade_date,open,high,low,close,vol,amount", trade_date=trade_date
            )
            factors = client.query(
                "adj_factor", "ts_code,trade_date,adj_factor", trade_date=trade_date
            )
            basic = client.query(
                "daily_basic", "ts_code,trade_date,total_mv,turnover_rate", trade_date=trade_date
            )
            if wanted is not None:
                daily = daily[daily["ts_code"].isin(wanted)]
            merged = daily.merge(factors, on=["ts_code", "trade_date"], how="left")
            store.upsert("bars", _tushare_bars(merged))
            store.upsert("daily_basic", _tushare_basic(basic))
            latest_caps.update(
                dict(zip(basic["ts_code"].str[:6], basic["total_mv"] * 1e4, strict=True))
            )
            done.add(trade_date)
            store.set_state("tushare_dates", ",".join(sorted(done)))
            stored += len(merged)
    except SourceError as exc:
        missing = [d for d in todo if d not in done]
        raise SourceError(
            f"{exc.message}（已保存 {len(todo) - len(missing)} 个交易日，仍缺 {len(missing)} 个：{missing[0]} 起；重新运行 `wyckoff data sync` 会从断点继续）"
        ) from None
    finally:
        stocks["market_cap"] = stocks["code"].map(latest_caps)
        if stocks["market_cap"].notna().any() or store.is_empty():
            store.upsert("stocks", stocks)
    _sync_tushare_indices(store, client, open_dates, progress)
    return {"dates": len(todo), "rows": stored}


def _tushare_bars(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "code": frame["ts_code"].str[:6],
            "date": pd.to_datetime(frame["trade_date"]),
            "open": frame["open"],
            "high": frame["high"],
            "low": frame["low"],
            "close": frame["close"],
            "volume": frame["vol"] * 100,  # tushare: lots of 100 shares
            "amount": frame["amount"] * 1000,  # tushare: thousands of CNY
            "adj_factor": frame["adj_factor"].fillna(1.0),
        }
    )


def _tushare_basic(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "code": frame["ts_code"].str[:6],
            "date": pd.to_datetime(frame["trade_date"]),
            "total_mv": frame["total_mv"] * 1e4,  # tushare: ten-thousands of CNY
            "turnover_rate": frame["turnover_rate"],
        }
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


def _quiet_call(target: Callable[..., Any], args: tuple) -> Any:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return target(*args)


def _baostock_fetch(codes: list[str], start: str, end: str) -> list[dict[str, Any]]:
    import baostock as bs

    login = bs.login()
    if login.error_code != "0":
        raise RuntimeError(f"baostock 登录失败：{login.error_msg}")
    rows: list[dict[str, Any]] = []
    try:
        for code in codes:
            prefix = "sh" if code.startswith("6") else "sz"
            result = bs.query_history_k_data_plus(
                f"{prefix}.{code}",
                "date,open,high,low,close,volume,amount",
                start_date=start,
                end_date=end,
                frequency="d",
                adjustflag="2",
            )
            while result.error_code == "0" and result.next():
                values = result.get_row_data()
                rows.append(
                    {
                        "code": code,
                        **dict(
                            zip(
                                ["date", "open", "high", "low", "close", "volume", "amount"],
                                values,
                                strict=True,
                            )
                        ),
                    }
                )
    finally:
        bs.logout()
    return rows


def sync_per_code(
    store: MarketStore,
    fetch: Callable,
    days: int,
    codes: list[str] | None,
    progress: Progress,
    timeout_s: float = 120,
) -> dict[str, Any]:
    """baostock/akshare: bars fetched per stock (already qfq), in isolated batches of 50."""
    from wyckoff.engine.demo import stock_list

    listing = stock_list()
    if codes:
        listing = listing[listing["code"].isin(codes)]
    stocks = pd.DataFrame(
        {
            "code": listing["code"],
            "name": listing["name"],
            "industry": "未知",
            "board": [board_of(c) for c in listing["code"]],
            "list_date": None,
            "is_st": listing["name"].str.upper().str.contains("ST"),
            "market_cap": None,
        }
    )
    store.upsert("stocks", stocks)
    end = date.today()
    start = (end - timedelta(days=int(days * 1.6) + 10)).isoformat()
    todo = stocks["code"].tolist()
    stored = 0
    for first in range(0, len(todo), 50):
        batch = todo[first : first + 50]
        progress("日线", f"{batch[0]}…", first / max(len(todo), 1))
        rows = run_isolated(fetch, (batch, start, end.isoformat()), timeout_s)
        frame = pd.DataFrame(rows)
        if frame.empty:
            continue
        for column in ("open", "high", "low", "close", "volume", "amount"):
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
        frame["date"] = pd.to_datetime(frame["date"])
        frame["adj_factor"] = 1.0
        stored += store.upsert("bars", frame)
    return {"rows": stored}


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
    if source == "baostock":
        return {"source": source, **sync_per_code(store, _baostock_fetch, days, codes, progress)}
    return {"source": source, **sync_per_code(store, _akshare_fetch, days, codes, progress)}


def _akshare_fetch(codes: list[str], start: str, end: str) -> list[dict[str, Any]]:
    import akshare as ak

    rows: list[dict[str, Any]] = []
    names = {
        "日期": "date",
        "开盘": "open",
        "最高": "high",
        "最低": "low",
        "收盘": "close",
        "成交量": "volume",
        "成交额": "amount",
    }
    for code in codes:
        frame = ak.stock_zh_a_hist(
            symbol=code,
            period="daily",
            start_date=start.replace("-", ""),
            end_date=end.replace("-", ""),
            adjust="qfq",
        )
        frame = frame.rename(columns=names)[list(names.values())]
        frame["volume"] = frame["volume"] * 100
        rows += [{"code": code, **r} for r in frame.to_dict("records")]
    return rows
