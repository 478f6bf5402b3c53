"""Minute bars: the demo's synthetic paths, the vendors' recorded answers, the checks a feed
must pass before it is stored, and the cache beside the daily store."""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from wyckoff.engine.demo import simulate
from wyckoff.engine.demo_minutes import demo_minute_bars
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.minute_bars import (
    MinuteFeedError,
    MinuteStore,
    checked_feed,
    day_minutes,
    session_slots,
)
from wyckoff.engine.sources.akshare import akshare_minute_frame
from wyckoff.engine.sources.baostock import baostock_minute_frame
from wyckoff.engine.sources.base import SourceError
from wyckoff.engine.sources.tushare import TushareClient, tushare_minute_frame, tushare_minutes

DAY = date(2026, 12, 2)
AFTER_CLOSE = datetime(2026, 12, 2, 16, 0)


def test_demo_minutes_add_up_exactly_to_every_daily_bar():
    market = simulate(end=DAY, days=120, limit=8)
    daily = market.bar_frame()
    for row in daily.itertuples():
        bars = demo_minute_bars(row.code, row.date.date(), row._asdict())
        assert len(bars) == 240
        assert (bars["open"].iloc[0], bars["close"].iloc[-1]) == (row.open, row.close)
        assert (bars["high"].max(), bars["low"].min()) == (row.high, row.low)
        assert (bars["volume"].sum(), bars["amount"].sum()) == (row.volume, row.amount)
        assert (bars["low"] <= bars[["open", "close"]].min(axis=1)).all()


def test_a_demo_path_is_the_same_every_time():
    bar = {"open": 10.0, "high": 10.5, "low": 9.8, "close": 10.3, "volume": 1e6, "amount": 1.02e7}
    assert demo_minute_bars("600000", DAY, bar).equals(demo_minute_bars("600000", DAY, bar))


def baostock_rows(day: date, price: float = 10.0) -> list[list[str]]:
    """query_history_k_data_plus(frequency='5') rows, as baostock sends them: all strings."""
    rows = []
    for slot in session_slots(day, 5):
        rows.append(
            [
                f"{day:%Y-%m-%d}",
                f"{slot:%Y%m%d%H%M%S}000",
                "sh.600000",
                f"{price:.4f}",
                f"{price + 0.05:.4f}",
                f"{price - 0.05:.4f}",
                f"{price + 0.01:.4f}",
                "123400",
                f"{123400 * price:.4f}",
                "3",
            ]
        )
    return rows


def test_baostock_five_minute_rows_become_a_checked_day():
    frame = baostock_minute_frame(baostock_rows(DAY))
    bars = checked_feed(frame, "600000", DAY, 5, AFTER_CLOSE)
    assert len(bars) == 48
    assert bars["ts"].iloc[0] == pd.Timestamp("2026-12-02 09:35")
    assert bars["ts"].iloc[-1] == pd.Timestamp("2026-12-02 15:00")
    assert bars["volume"].iloc[0] == 123400 and bars["close"].iloc[0] == pytest.approx(10.01)


def akshare_records(day: date) -> list[dict]:
    """stock_zh_a_hist_min_em(period='1') records: the 09:30 auction, then 240 minutes;
    成交量 in lots."""
    times = [datetime.combine(day, datetime.min.time()).replace(hour=9, minute=30)]
    times += session_slots(day, 1)
    return [
        {
            "时间": f"{t:%Y-%m-%d %H:%M:%S}",
            "开盘": 20.0,
            "收盘": 20.1,
            "最高": 20.2,
            "最低": 19.9,
            "成交量": 50 if i == 0 else 10,
            "成交额": 100000.0 if i == 0 else 20100.0,
            "最新价": 20.05,
        }
        for i, t in enumerate(times)
    ]


def test_akshare_one_minute_records_fold_the_auction_into_the_first_minute():
    bars = checked_feed(akshare_minute_frame(akshare_records(DAY)), "000001", DAY, 1, AFTER_CLOSE)
    assert len(bars) == 240 and bars["ts"].iloc[0] == pd.Timestamp("2026-12-02 09:31")
    assert bars["volume"].iloc[0] == (50 + 10) * 100  # lots -> shares, auction included
    assert bars["amount"].iloc[0] == 120100.0


class TushareStub:
    """A loopback tushare endpoint answering stk_mins the way tushare does."""

    def __init__(self, answer: dict) -> None:
        stub = self
        self.requests: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                stub.requests.append(
                    json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                )
                payload = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/dataapi"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def stk_mins_payload(day: date) -> dict:
    fields = ["ts_code", "trade_time", "open", "close", "high", "low", "vol", "amount"]
    items = [
        ["600000.SH", f"{t:%Y-%m-%d %H:%M:%S}", 8.0, 8.01, 8.02, 7.99, 3000.0, 24030.0]
        for t in reversed(session_slots(day, 1))  # newest first
    ]
    return {"code": 0, "msg": "", "data": {"fields": fields, "items": items, "has_more": False}}


def test_tushare_stk_mins_answer_becomes_a_checked_day():
    stub = TushareStub(stk_mins_payload(DAY))
    client = TushareClient("secret-token", url=stub.url)
    try:
        raw = tushare_minutes(client, "600000", DAY.isoformat())
    finally:
        client.close()
        stub.close()
    (request,) = stub.requests
    assert request["api_name"] == "stk_mins" and request["params"]["freq"] == "1min"
    assert request["params"]["ts_code"] == "600000.SH"
    bars = checked_feed(tushare_minute_frame(raw), "600000", DAY, 1, AFTER_CLOSE)
    assert len(bars) == 240 and bars["ts"].is_monotonic_increasing
    assert bars["volume"].sum() == 3000.0 * 240


def test_tushare_without_the_minute_permission_says_so_and_hides_the_token():
    stub = TushareStub(
        {"code": 40203, "msg": "抱歉，您没有访问该接口的权限 secret-token", "data": None}
    )
    client = TushareClient("secret-token", url=stub.url)
    try:
        with pytest.raises(SourceError) as caught:
            tushare_minutes(client, "600000", DAY.isoformat())
    finally:
        client.close()
        stub.close()
    assert "stk_mins" in caught.value.message and "没有访问该接口的权限" in caught.value.message
    assert "secret-token" not in caught.value.message


def one_minute_day(day: date = DAY) -> pd.DataFrame:
    bar = {"open": 10.0, "high": 10.5, "low": 9.8, "close": 10.3, "volume": 1e6, "amount": 1.02e7}
    return demo_minute_bars("600000", day, bar)


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        (lambda f: f.iloc[0:0], "没有分钟线（停牌"),
        (lambda f: f.drop(index=range(30, 45)), "有缺口（缺 10:01 等 15 个时段）"),
        (lambda f: f.iloc[:120], "只到 11:30"),
        (
            lambda f: pd.concat([f, f.iloc[[50]].assign(close=99.0)]),
            "重复且不一致的分钟（10:21）",
        ),
    ],
    ids=["suspended", "gap", "half-day", "duplicate"],
)
def test_a_bad_feed_is_one_sentence_and_nothing_is_written(tmp_path, broken, words):
    store = MinuteStore(tmp_path / "market-minutes.duckdb", "baostock")
    with pytest.raises(MinuteFeedError) as caught:
        day_minutes(
            store, "600000", DAY, AFTER_CLOSE, lambda code, day: (broken(one_minute_day()), 1)
        )
    assert words in caught.value.message
    assert store.cached("600000", DAY) is None
    assert store.execute("SELECT COUNT(*) FROM minute_bars")[0][0] == 0


def test_identical_duplicate_minutes_are_dropped():
    frame = one_minute_day()
    bars = checked_feed(pd.concat([frame, frame.iloc[[10]]]), "600000", DAY, 1, AFTER_CLOSE)
    assert len(bars) == 240


def test_a_complete_day_is_fetched_once_and_a_partial_one_again_when_behind(tmp_path):
    store = MinuteStore(tmp_path / "market-minutes.duckdb", "akshare")
    calls: list[date] = []

    def fetch(code: str, day: date):
        calls.append(day)
        return one_minute_day(day), 1

    morning = datetime(2026, 12, 2, 10, 5)
    early = day_minutes(store, "600000", DAY, morning, fetch)
    assert not early.complete and early.bars["ts"].iloc[-1] == pd.Timestamp("2026-12-02 10:05")
    assert early.source == "akshare" and early.as_of == morning
    late = day_minutes(store, "600000", DAY, datetime(2026, 12, 2, 14, 46), fetch)
    assert len(late.bars) == 120 + 106 and len(calls) == 2
    done = day_minutes(store, "600000", DAY, AFTER_CLOSE, fetch)
    again = day_minutes(store, "600000", DAY, AFTER_CLOSE, fetch)
    assert done.complete and len(again.bars) == 240 and len(calls) == 3


def test_minutes_live_beside_the_daily_store_which_stays_byte_identical(tmp_path):
    from wyckoff.engine.sources.demo import ensure_demo
    from wyckoff.engine.sources.minutes import minute_fetch

    daily = ensure_demo(tmp_path, limit=5)
    before = hashlib.sha256(daily.path.read_bytes()).hexdigest()
    code, last = daily.execute("SELECT code, MAX(date) FROM bars GROUP BY code LIMIT 1")[0]
    minutes = MinuteStore.beside(daily)
    got = day_minutes(
        minutes, code, last, datetime.combine(last, AFTER_CLOSE.time()), minute_fetch(daily)
    )
    assert got.complete and got.source == "demo"
    assert minutes.path.name == "market-demo-minutes.duckdb"
    assert hashlib.sha256(daily.path.read_bytes()).hexdigest() == before
    assert not MarketStore.for_source(tmp_path, "demo").path.with_suffix(".duckdb.wal").exists()


def test_a_minute_source_that_does_not_answer_in_time_is_one_sentence(tmp_path, monkeypatch):
    import time as clock

    from wyckoff.engine.sources.minutes import minute_fetch

    class Slow(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            clock.sleep(3)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("TUSHARE_URL", f"http://127.0.0.1:{httpd.server_address[1]}/dataapi")
    daily = MarketStore(tmp_path / "market.duckdb", "tushare")
    store = MinuteStore.beside(daily)
    try:
        with pytest.raises(SourceError) as caught:
            day_minutes(store, "600000", DAY, AFTER_CLOSE, minute_fetch(daily, "token-x", 0.5))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert "无法连接 tushare" in caught.value.message and "Timeout" in caught.value.message
    assert store.cached("600000", DAY) is None


def test_a_source_without_minutes_says_which_to_use(tmp_path):
    from wyckoff.engine.sources.minutes import minute_fetch

    with pytest.raises(MinuteFeedError) as caught:
        minute_fetch(MarketStore(tmp_path / "market-import.duckdb", "import"))
    assert "没有分钟线" in caught.value.message and "baostock" in caught.value.message
