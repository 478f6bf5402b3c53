"""Data sources, the DuckDB store, the demo market and the market tools end to end."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from tests.conftest import add_scripted_model, cli, marked_data
from tests.engine_fixtures import chatty
from wyckoff.config import DataConfig, WyckoffConfig
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources.base import SourceError, run_isolated
from wyckoff.engine.sources.sync import sync
from wyckoff.engine.thresholds import MAIN_INDICES

TOKEN = "tushare-token-0123456789abcdef"
DATES = ["20261125", "20261126", "20261127"]


class TushareServer:
    """Speaks tushare's HTTP API: POST {api_name, token, params, fields} -> {code, msg, data}."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.fail_daily_on: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                if (
                    body["api_name"] == "daily"
                    and body["params"].get("trade_date") in server.fail_daily_on
                ):
                    self.send_response(502)
                    self.end_headers()
                    return
                payload = json.dumps(server.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/dataapi"

    def answer(self, body: dict) -> dict:
        if body["token"] != TOKEN:
            return {"code": 40101, "msg": f"您的token不对，请确认。token={body['token']}"}
        api, params = body["api_name"], body["params"]
        fields, items = [], []
        if api == "stock_basic":
            fields = ["ts_code", "symbol", "name", "industry", "list_date"]
            items = [
                ["600519.SH", "600519", "贵州茅台", "白酒", "20010827"],
                ["000001.SZ", "000001", "平安银行", "银行", "19910403"],
            ]
        elif api == "trade_cal":
            fields = ["cal_date", "is_open"]
            items = [["20261124", 1], *[[d, 1] for d in DATES], ["20261128", 0]]
        elif api == "daily":
            day = DATES.index(params["trade_date"]) if params["trade_date"] in DATES else 0
            fields = ["ts_code", "trade_date", "open", "high", "low", "close", "vol", "amount"]
            # 600519 splits 2-for-1 on the last day: its raw price halves.
            moutai = 1700.0 + day if day < 2 else 851.0
            items = [
                ["600519.SH", params["trade_date"], moutai, moutai, moutai, moutai, 1000, 170000],
                ["000001.SZ", params["trade_date"], 11, 11, 11, 11.0 + day, 5000, 5500],
            ]
        elif api == "adj_factor":
            fields = ["ts_code", "trade_date", "adj_factor"]
            day = DATES.index(params["trade_date"])
            items = [
                ["600519.SH", params["trade_date"], 1.0 if day < 2 else 2.0],
                ["000001.SZ", params["trade_date"], 1.0],
            ]
        elif api == "daily_basic":
            fields = ["ts_code", "trade_date", "total_mv", "turnover_rate"]
            items = [
                ["600519.SH", params["trade_date"], 2.1e8, 0.3],
                ["000001.SZ", params["trade_date"], 2.2e7, 0.5],
            ]
        elif api == "index_daily":
            fields = ["ts_code", "trade_date", "open", "high", "low", "close", "vol", "amount"]
            items = [
                [params["ts_code"], d, 3000, 3000, 3000, 3000 + i, 1, 1]
                for i, d in enumerate(DATES)
            ]
        return {"code": 0, "msg": "", "data": {"fields": fields, "items": items}}

    def daily_dates(self) -> list[str]:
        return [r["params"]["trade_date"] for r in self.requests if r["api_name"] == "daily"]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def tushare():
    server = TushareServer()
    yield server
    server.close()


def _config(url: str, token: str = TOKEN) -> WyckoffConfig:
    return WyckoffConfig(data=DataConfig(source="tushare", tushare_token=token, tushare_url=url))


def test_tushare_sync_stores_bars_qfq_and_indices(home, tushare):
    home.mkdir(parents=True)
    result = sync(home, _config(tushare.url), 3, None, lambda *a: None)
    assert result == {"source": "tushare", "dates": 3, "rows": 6}
    store = MarketStore.for_source(home, "tushare")
    status = store.status()
    assert (status["stocks"], status["bars"], status["indices"], status["last_date"]) == (
        2,
        6,
        len(MAIN_INDICES),
        "2026-11-27",
    )
    panel = store.load_panel(10)
    moutai = panel.close[:, panel.column("600519")]
    assert list(moutai) == [1700.0 / 2, 1701.0 / 2, 851.0]  # qfq: earlier prices follow the split
    assert panel.stocks.loc["600519", "market_cap"] == pytest.approx(2.1e12)
    assert panel.stocks.loc["600519", "industry"] == "白酒"


def test_tushare_sync_resumes_after_a_failure_and_keeps_what_it_stored(home, tushare):
    home.mkdir(parents=True)
    tushare.fail_daily_on = {DATES[1]}
    with pytest.raises(SourceError) as caught:
        sync(home, _config(tushare.url), 3, None, lambda *a: None)
    assert "已保存 1 个交易日" in caught.value.message and "仍缺 2 个" in caught.value.message
    store = MarketStore.for_source(home, "tushare")
    assert store.status()["bars"] == 2  # the first date is kept
    tushare.fail_daily_on = set()
    tushare.requests.clear()
    sync(home, _config(tushare.url), 3, None, lambda *a: None)
    assert tushare.daily_dates() == DATES[1:]  # resumed: the stored date is not fetched again
    assert store.status()["bars"] == 6


def test_tushare_api_error_is_clear_and_hides_the_token(home, tushare):
    home.mkdir(parents=True)
    with pytest.raises(SourceError) as caught:
        sync(home, _config(tushare.url, token="wrong-token-987654321"), 3, None, lambda *a: None)
    assert "tushare 拒绝了 stock_basic 请求" in caught.value.message
    assert "wrong-token-987654321" not in caught.value.message


def test_isolated_source_calls_time_out_cleanly_and_swallow_stdout(capfd):
    assert run_isolated(chatty, (0.0,), timeout_s=30) == "done"
    started = time.monotonic()
    with pytest.raises(SourceError, match="没有响应"):
        run_isolated(chatty, (30.0,), timeout_s=1.0)
    assert time.monotonic() - started < 15
    assert "login success" not in capfd.readouterr().out


def test_demo_market_is_deterministic_and_complete():
    from wyckoff.engine.demo import build_demo_market

    first, second = build_demo_market(limit=40, days=300), build_demo_market(limit=40, days=300)
    assert first["bars"][["open", "close", "volume"]].equals(
        second["bars"][["open", "close", "volume"]]
    )
    assert set(first["index_bars"]["code"]) == set(MAIN_INDICES)
    bars = first["bars"]
    assert (bars["high"] >= bars[["open", "close"]].max(axis=1) - 0.011).all()
    assert (bars["low"] <= bars[["open", "close"]].min(axis=1) + 0.011).all()
    assert first["stocks"]["code"].tolist()[:2] == ["000001", "000002"]


def test_demo_daily_moves_respect_board_limits():
    from wyckoff.engine.demo import build_demo_market
    from wyckoff.engine.thresholds import limit_pct

    market = build_demo_market(limit=300, days=260)
    wide = market["bars"].pivot(index="date", columns="code", values="close")
    stocks = market["stocks"].set_index("code")
    limits = np.array(
        [limit_pct(stocks.loc[c, "board"], stocks.loc[c, "is_st"]) for c in wide.columns]
    )
    previous = wide.shift(1).to_numpy()[1:]
    excess = np.abs(wide.to_numpy()[1:] - previous) - limits * previous
    assert np.nanmax(excess) <= 0.011  # prices are in cents, like the exchange's limit prices


def test_every_channel_and_trigger_occurs_on_the_demo_market(home, install_demo):
    from wyckoff.engine.funnel import run_funnel

    panel = install_demo(home, 1500).load_panel(520)
    seen_channels, seen_triggers = set(), set()
    for t in range(len(panel.dates) - 1, 260, -4):
        result = run_funnel(panel, t)
        seen_channels |= {name for name, mask in result.channels.items() if mask.any()}
        seen_triggers |= {name for name, mask in result.triggers.items() if mask.any()}
        if len(seen_channels) == 8 and len(seen_triggers) == 6:
            break
    assert seen_channels == {
        "momentum",
        "ambush",
        "accumulation",
        "dry_volume",
        "divergence",
        "trend",
        "breakout",
        "sos_ignition",
    }
    assert seen_triggers == {"spring", "lps", "evr", "sos", "compression", "pullback"}


# --- tools and commands on the demo market ---------------------------------------------------------


def test_no_data_is_a_clear_error_that_suggests_demo(home):
    result = cli("screen")
    assert result.returncode == 1
    assert "wyckoff data use demo" in result.stderr and "Traceback" not in result.stderr


def test_analyze_and_market_commands_label_demo_data(demo_home):
    result = cli("analyze", "平安银行", "--cost", "5", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert (
        payload["source"] == "demo"
        and "合成" in payload["data_note"]
        and payload["code"] == "000001"
    )
    assert payload["health"] in ("healthy", "caution", "danger") and payload["reasons"]
    text = cli("analyze", "000001")
    assert "演示数据" in text.stderr and "健康度" in text.stdout
    market = cli("market")
    assert "上证指数" in market.stdout and "演示数据" in market.stderr


def test_unknown_stock_names_the_closest_matches(demo_home):
    result = cli("analyze", "平安银")
    assert result.returncode == 0  # a partial name resolves
    wrong = cli("analyze", "平按银行")
    assert wrong.returncode == 2 and "000001.SZ 平安银行" in wrong.stderr


def test_screen_command_runs_the_funnel_and_saves_recommendations(demo_home):
    result = cli("screen", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    summary = payload["summary"]
    assert summary["total_scanned"] == 400
    assert (
        summary["total_scanned"]
        >= summary["layer1_passed"]
        >= summary["layer2_passed"]
        >= summary["layer3_passed"]
        >= summary["report_candidates"]
    )
    assert payload["source"] == "demo" and payload["data_note"]
    from wyckoff.store import Store

    rows = (
        Store.in_home(demo_home).conn.execute("SELECT COUNT(*) FROM recommendations").fetchone()[0]
    )
    assert rows == len(payload["top_candidates"])


def test_data_status_reports_the_demo_store(demo_home):
    status = json.loads(cli("data", "status", "--json").stdout)
    assert status["source"] == "demo" and status["stocks"] == 400 and status["indices"] == 6


def test_agent_screens_in_the_background_and_diagnoses_on_demo(demo_home, openai_server):
    from tests.model_servers import Reply

    add_scripted_model(openai_server)
    openai_server.script(
        Reply(
            tool_calls=[("screen_stocks", {"board": "all"}), ("analyze_stock", {"code": "000001"})]
        ),
        Reply(text="筛选在后台运行。"),
        Reply(text="筛选完成（演示数据）。"),
    )
    result = cli("ask", "全市场筛选一下，再看看平安银行", "-o", "json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["text"] == "筛选完成（演示数据）。"
    second = openai_server.bodies[1]["messages"]
    analysis = json.loads(
        marked_data([m for m in second if m["role"] == "tool"][1]["content"], "analyze_stock")
    )
    assert analysis["source"] == "demo" and analysis["code"] == "000001"
    notification = openai_server.bodies[2]["messages"][-1]["content"]
    assert "SYSTEM NOTIFICATION" in notification and '"source": "demo"' in notification
    assert np.isfinite(analysis["close"])


def test_signal_ttl_counts_trading_days_on_the_stored_calendar(demo_home):
    import pandas as pd

    from wyckoff.agents.history import HistoryQueryParams, query_history
    from wyckoff.agents.market_data import MarketData
    from wyckoff.agents.screening import save_screen
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.config import load_config
    from wyckoff.store import Store

    market = MarketStore.for_source(demo_home, "demo")
    as_of = market.status()["last_date"]
    # the stored calendar knows the exchange reopens only after a week-long holiday
    first = np.busday_offset(np.datetime64(as_of), 1)
    reopen = np.busday_offset(first, 6)
    market.upsert(
        "trade_calendar", pd.DataFrame({"date": pd.to_datetime([first, reopen]), "is_open": True})
    )
    store = Store.in_home(demo_home)
    candidate = {
        "code": "000001",
        "name": "平安银行",
        "channels": [],
        "triggers": ["SOS"],
        "trigger_keys": ["sos"],
        "score": 50.0,
        "close": 10.0,
    }
    open_days = MarketData(demo_home, load_config(demo_home)).open_days()
    save_screen(store, "demo", as_of, [candidate], open_days)
    # SOS lives 5 trading days: the day after, the reopening day, then 3 more weekdays
    expected = str(np.busday_offset(reopen, 3))
    saved = store.conn.execute("SELECT expires_on FROM signals").fetchone()[0]
    assert saved == expected
    context = ToolContext(home=demo_home, registry=default_registry(), store=store)
    (row,) = query_history(HistoryQueryParams(source="signal"), context)["rows"]
    assert row["expires_on"] == expected and row["status"] == "pending"


def test_index_history_sums_up_the_days_asked_for(demo_home):
    from tests.integration.test_local_tools import call, result

    bars = MarketStore.for_source(demo_home, "demo").query_df(
        "SELECT date, close FROM index_bars WHERE code = '399006.SZ' ORDER BY date"
    )
    history = result(call(demo_home, "get_market_history", index="399006.sz", days=20))
    assert history["index"] == "399006.SZ" and history["name"] == MAIN_INDICES["399006.SZ"]
    assert history["source"] == "demo" and history["data_note"]
    assert [r["date"] for r in history["rows"]] == [str(d)[:10] for d in bars["date"][-20:]]
    closes = bars["close"].to_numpy()[-20:]
    summary = history["summary"]
    assert summary["period_return_pct"] == round(float(closes[-1] / closes[0] - 1) * 100, 2)
    drawdown = np.max(1 - closes / np.maximum.accumulate(closes))
    assert summary["max_drawdown_pct"] == round(float(drawdown) * 100, 2)
    unknown = call(demo_home, "get_market_history", index="000300.XX")
    assert not unknown.ok and "不支持的指数 000300.XX" in unknown.error


def test_query_history_finds_saved_recommendations_newest_first(demo_home):
    from tests.integration.test_local_tools import call, result
    from wyckoff.agents.market_data import MarketData
    from wyckoff.agents.screening import save_screen
    from wyckoff.config import load_config
    from wyckoff.store import Store

    open_days = MarketData(demo_home, load_config(demo_home)).open_days()
    store = Store.in_home(demo_home)
    for day, code, name in (
        ("2026-11-30", "000001", "平安银行"),
        ("2026-12-01", "600519", "贵州茅台"),
    ):
        candidate = {"code": code, "name": name, "channels": ["潜伏"], "triggers": ["SOS"],
                     "trigger_keys": ["sos"], "score": 60.0, "close": 10.0}  # fmt: skip
        save_screen(store, "demo", day, [candidate], open_days)
    rows = result(call(demo_home, "query_history", source="recommendation"))["rows"]
    assert [(r["code"], r["as_of"]) for r in rows] == [
        ("600519", "2026-12-01"),
        ("000001", "2026-11-30"),
    ]
    assert rows[0]["channels"] == ["潜伏"] and rows[0]["triggers"] == ["SOS"]
    one = result(call(demo_home, "query_history", source="recommendation", code="000001"))
    assert [r["name"] for r in one["rows"]] == ["平安银行"]
    signals = result(call(demo_home, "query_history", source="signal", limit=1))["rows"]
    assert [(s["code"], s["status"]) for s in signals] == [("600519", "pending")]
    archive = result(call(demo_home, "query_history", source="archive", code="000001"))
    assert archive["rows"] == [] and archive["note"] == "没有匹配的上下文压缩归档。"


def test_a_market_store_from_the_previous_version_is_upgraded_not_a_crash(demo_home):
    """A store written before the reference-price columns existed (no pre_close, share_factor,
    bonus_ratio or per-date name): the first read adds them, and every command works."""
    import duckdb

    path = demo_home / "market-demo.duckdb"
    with duckdb.connect(str(path)) as conn:
        code = conn.execute("SELECT code FROM bars LIMIT 1").fetchone()[0]
        for table, column in [
            ("bars", "pre_close"),
            ("bars", "share_factor"),
            ("bars", "bonus_ratio"),
            ("daily_basic", "name"),
        ]:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    screened = cli("screen", "--json")
    assert screened.returncode == 0, screened.stderr
    assert json.loads(screened.stdout)["source"] == "demo"
    analyzed = cli("analyze", code)
    assert analyzed.returncode == 0 and "Traceback" not in analyzed.stderr, analyzed.stderr


def test_a_store_file_from_an_older_version_is_brought_up_to_date_when_read(tmp_path):
    """A file written before daily_basic had float_mv, is_st and name is upgraded on the
    first read, including one that replaces, at the same path, a file already read as
    current in this process."""
    import duckdb

    path = tmp_path / "market.duckdb"

    def write_old_file() -> None:
        path.unlink(missing_ok=True)
        with duckdb.connect(str(path)) as conn:
            conn.execute(
                "CREATE TABLE daily_basic (code VARCHAR, date DATE, total_mv DOUBLE, "
                "turnover_rate DOUBLE, source VARCHAR, PRIMARY KEY (code, date))"
            )
            conn.execute("INSERT INTO daily_basic VALUES ('600519', '2026-12-01', 1e9, 1.5, 'x')")

    query = "SELECT code, total_mv, float_mv, is_st FROM daily_basic"
    for _ in range(2):
        write_old_file()
        store = MarketStore(path, "baostock")
        assert store.execute(query) == [("600519", 1e9, None, None)]
        assert store.is_empty()  # the tables it lacked exist now
