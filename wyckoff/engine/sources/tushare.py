"""tushare over its HTTP API: the whole market one trade date at a time, resumable."""

from __future__ import annotations

import os
import time
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd

from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources.base import Progress, SourceError
from wyckoff.engine.thresholds import MAIN_INDICES, board_of, ts_code

TUSHARE_URL = "http://api.waditu.com/dataapi"
TUSHARE_CALLS_PER_MINUTE = 400
TUSHARE_PAGE_ROWS = 10_000  # the most rows tushare returns per call of a list API


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


MINUTE_FIELDS = "ts_code,trade_time,open,close,high,low,vol,amount"


def tushare_minutes(client: TushareClient, code: str, day: str) -> pd.DataFrame:
    """stk_mins (1-minute bars; a separate permission of the tushare account) of one day."""
    return client.query(
        "stk_mins",
        MINUTE_FIELDS,
        ts_code=ts_code(code),
        freq="1min",
        start_date=f"{day} 09:00:00",
        end_date=f"{day} 15:00:00",
    )


def tushare_minute_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Minute bars from stk_mins rows: trade_time 'YYYY-MM-DD HH:MM:SS' at the bar's end,
    vol in shares, amount in CNY; newest first as tushare sends them."""
    if frame.empty:
        return pd.DataFrame(columns=["ts", "open", "high", "low", "close", "volume", "amount"])
    return frame.rename(columns={"vol": "volume"}).assign(ts=pd.to_datetime(frame["trade_time"]))
