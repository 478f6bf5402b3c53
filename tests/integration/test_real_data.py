"""The real market around the engine: sources without a token, point-in-time facts,
adjustments of prices and volumes, and honest labels (issue 10)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import cli, model_config
from tests.engine_fixtures import (
    DAYS,
    DELISTED_CODE,
    SPLIT_CODE,
    SUSPENDED_CODE,
    baostock_index_rows,
    baostock_listing_rows,
    baostock_rows,
    make_panel,
    series,
    store_from_panel,
)
from tests.integration.test_market_data import DATES, TOKEN, TushareServer, _config
from tests.model_servers import Reply
from wyckoff.agents.reports import ReportParams, generate_ai_report
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.providers.factory import make_provider
from wyckoff.cli.tools import ToolContext
from wyckoff.engine.backtest import Trade, cash_portfolio
from wyckoff.engine.funnel import run_funnel
from wyckoff.engine.health import diagnose
from wyckoff.engine.indicators import features_at
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources.akshare import akshare_frames, akshare_index_frame, akshare_listing
from wyckoff.engine.sources.baostock import baostock_frames, baostock_listing
from wyckoff.engine.sources.per_code import PerCodeSource, sync_per_code
from wyckoff.engine.sources.sync import sync
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.engine.triggers import TRIGGER_LABELS, TRIGGERS
from wyckoff.store import Store

T = DAYS - 1
BAOSTOCK_ENV = {"WYCKOFF_DATA_SOURCE": "baostock"}


# --- sources without a token: baostock and akshare ------------------------------------------


def test_baostock_rows_become_raw_bars_with_reference_prices_and_per_date_facts():
    raw = [  # query_history_k_data_plus: date,code,open,high,low,close,preclose,volume,amount,turn,tradestatus,isST
        ["2026-11-25", "sh.600000", "9.8000", "10.0000", "9.7000", "9.9000", "9.8000", "2000000", "19800000.0000", "0.500000", "1", "0"],
        ["2026-11-26", "sh.600000", "9.9000", "9.9000", "9.9000", "9.9000", "9.9000", "0", "", "", "0", "0"],
        ["2026-11-27", "sh.600000", "5.0000", "5.1000", "4.9000", "5.0000", "4.9500", "4000000", "20000000.0000", "0.500000", "1", "1"],
    ]  # fmt: skip
    bars, basic = baostock_frames([raw])
    assert bars["code"].tolist() == ["600000", "600000"]  # the suspended day has no bar
    assert bars["close"].tolist() == [9.9, 5.0]  # as traded
    assert bars["pre_close"].tolist() == [9.8, 4.95]  # 10送10 on the 27th: 9.90 / 2
    assert basic["turnover_rate"].tolist() == [0.5, 0.5]  # %
    # float cap = close x volume / turnover: 9.9 x 2,000,000 / 0.5% = 3.96 billion CNY
    assert basic["float_mv"].tolist() == pytest.approx([3.96e9, 4.0e9])
    assert basic["is_st"].tolist() == [False, True]  # ST as of each date


def test_akshare_records_become_raw_bars_with_the_exchange_reference_price():
    # 000066 around its 2022-07-20 ex-date (10派0.5), as stock_zh_a_hist returned them
    # (quoted in waditu/tushare#1805): its 涨跌额 counts from the raw 9.94, while the
    # exchange's reference price that day was 9.89 (tushare's pre_close).
    raw = [
        {"日期": "2022-07-19", "股票代码": "000066", "开盘": 9.48, "收盘": 9.94, "最高": 9.94,
         "最低": 9.44, "成交量": 345848, "成交额": 338989950.93, "振幅": 5.28, "涨跌幅": 4.96,
         "涨跌额": 0.47, "换手率": 1.18},
        {"日期": "2022-07-20", "股票代码": "000066", "开盘": 9.89, "收盘": 9.88, "最高": 9.95,
         "最低": 9.76, "成交量": 230508, "成交额": 227294143.17, "振幅": 1.91, "涨跌幅": -0.6,
         "涨跌额": -0.06, "换手率": 0.78},
    ]  # fmt: skip
    dividends = [  # stock_fhps_detail_em: per 10 shares; a plan not carried out is ignored
        {"除权除息日": "2022-07-20", "方案进度": "实施分配", "现金分红-现金分红比例": 0.5,
         "送转股份-送转总比例": None},
        {"除权除息日": None, "方案进度": "董事会预案", "现金分红-现金分红比例": 3.0,
         "送转股份-送转总比例": 10.0},
    ]  # fmt: skip
    bars, basic = akshare_frames([("000066", raw, dividends)])
    assert bars["volume"].tolist() == [34_584_800, 23_050_800]  # lots of 100 -> shares
    assert bars["pre_close"].tolist()[1] == 9.89
    assert bars["bonus_ratio"].tolist() == [0.0, 0.0]  # cash only: no new shares
    assert basic["turnover_rate"].tolist() == [1.18, 0.78]
    index = akshare_index_frame(
        {"000001.SH": pd.DataFrame({"date": ["2026-11-26", "2026-11-27"], "open": [3000.0] * 2,
                                    "high": [3010.0] * 2, "low": [2990.0] * 2,
                                    "close": [3005.0, 3008.0], "volume": [3e10] * 2})},
        "2026-11-27", "2026-11-30",
    )  # fmt: skip
    assert index[["code", "close"]].values.tolist() == [["000001.SH", 3008.0]]
    listing = akshare_listing(
        pd.DataFrame({"code": ["000001", "600519"], "name": ["平安银行", "贵州茅台"]})
    )
    assert listing["industry"].tolist() == ["未知", "未知"]


def test_baostock_listing_keeps_stocks_delisted_in_the_window_and_drops_indices():
    basics = [
        ["sh.000001", "上证综合指数", "1991-07-15", "", "2", "1"],
        ["sh.600000", "浦发银行", "1999-11-10", "", "1", "1"],
        ["sz.000013", "*ST石化A", "1992-05-06", "2004-09-20", "1", "0"],
        ["sh.600087", "退市长油", "1997-06-12", "2026-06-05", "1", "0"],
    ]
    industries = [["2026-11-30", "sh.600000", "浦发银行", "J66货币金融服务", "证监会行业分类"]]
    stocks = baostock_listing(basics, industries, "2025-06-01", "2026-11-30")
    assert stocks["code"].tolist() == ["600000", "600087"]
    assert stocks["list_status"].tolist() == ["L", "D"]
    assert stocks["industry"].tolist() == ["J66货币金融服务", "未知"]


@pytest.fixture(scope="module")
def baostock_store(tmp_path_factory) -> Path:
    """A baostock-style sync of a small fixture universe into a real DuckDB store (once)."""
    source = PerCodeSource(
        baostock_listing_rows, baostock_rows, baostock_frames, baostock_index_rows
    )
    store = MarketStore.for_source(tmp_path_factory.mktemp("baostock"), "baostock")
    sync_per_code(store, source, DAYS, None, lambda *a: None, timeout_s=110)
    return store.path


@pytest.fixture
def baostock_home(home, baostock_store):
    home.mkdir(parents=True)
    shutil.copy(baostock_store, home / baostock_store.name)
    return home


def test_screen_finds_candidates_after_a_baostock_sync_and_says_what_is_weakened(baostock_home):
    result = cli("screen", "--json", env=BAOSTOCK_ENV)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["source"] == "baostock"
    assert payload["summary"]["layer1_passed"] > 20 and payload["top_candidates"]
    assert any("流通市值" in c for c in payload["data_caveats"])

    text = cli("screen", env=BAOSTOCK_ENV).stdout  # the second run reads the cached panel
    assert "数据缺口 — 总市值" in text and "候选股" in text
    again = json.loads(cli("screen", "--json", env=BAOSTOCK_ENV).stdout)
    assert again == payload  # same caps, turnover, ST and caveats as the store itself
    status = json.loads(cli("data", "status", "--json", env=BAOSTOCK_ENV).stdout)
    assert (status["delisted_or_suspended"], status["indices"]) == (1, 6)
    total_cap, factors = status["caveats"]  # the total cap is missing; factors are derived
    assert "总市值" in total_cap
    assert "baostock 的复权因子由交易所前收盘价推导" in factors and "共 1 个除权除息日" in factors


def _analyze_disagreements(panel, days: int) -> tuple[list[str], int]:
    """Over the last `days` days, every Layer-3 stock whose analyze triggers differ from the
    funnel's that day, and how many funnel EVRs there were."""
    wrong, evr = [], 0
    for t in range(len(panel.dates) - days, len(panel.dates)):
        funnel = run_funnel(panel, t)
        for j in np.flatnonzero(funnel.layer3):
            expected = [TRIGGER_LABELS[key] for key in funnel.trigger_labels(j)]
            evr += "evr" in funnel.trigger_labels(j)
            if diagnose(panel, panel.codes[j], t=t)["triggers"] != expected:
                wrong.append(f"{panel.dates[t]} {panel.codes[j]}")
    return wrong, evr


def test_analyze_shows_the_funnels_triggers_on_a_baostock_store(baostock_home):
    # the store's per-date turnover rate decides EVR: analyze must read it as the funnel does
    panel = MarketStore.for_source(baostock_home, "baostock").load_panel(DAYS)
    wrong, evr = _analyze_disagreements(panel, 10)
    assert evr and not wrong


def test_analyze_shows_the_funnels_triggers_on_the_demo_market(demo_home):
    panel = MarketStore.for_source(demo_home, "demo").load_panel(320)
    wrong, evr = _analyze_disagreements(panel, 3)
    assert evr and not wrong


def test_baostock_panel_is_split_adjusted_suspension_aware_and_keeps_the_delisted(baostock_home):
    panel = MarketStore.for_source(baostock_home, "baostock").load_panel(DAYS)
    j = panel.column(SPLIT_CODE)  # 2-for-1 forty days before the end
    before, after = T - 40, T - 39
    assert panel.raw_close[after, j] / panel.raw_close[before, j] < 0.6  # as traded: halved
    assert 0.85 < panel.close[after, j] / panel.close[before, j] < 1.15  # qfq: continuous
    ratio = features_at(panel, T, DEFAULT_CONFIG)
    assert 0.5 < (ratio.volume20 / ratio.volume_prior60)[j] < 1.6  # no split-made surge
    assert np.isnan(panel.close[T - 59 : T - 54, panel.column(SUSPENDED_CODE)]).all()
    delisted = panel.column(DELISTED_CODE)
    assert panel.stocks.loc[DELISTED_CODE, "list_status"] == "D"
    assert np.isnan(panel.close[-5:, delisted]).all() and not np.isnan(panel.close[100, delisted])
    assert panel.is_st[100, delisted]  # its name carries *ST: flagged on every date


# --- point in time: caps, ST and the universe ------------------------------------------------


class PointInTimeTushare(TushareServer):
    """000001 was *ST until the second day; 600519's cap grows; 000002 is delisted; the
    adjustment factor of 000001 on the second day is missing."""

    def answer(self, body: dict) -> dict:
        api, params = body["api_name"], body["params"]
        if api == "stock_basic" and params.get("list_status") == "D":
            fields = ["ts_code", "symbol", "name", "industry", "list_date"]
            items = [["000002.SZ", "000002", "退市某某", "地产", "19910129"]]
            return {"code": 0, "msg": "", "data": {"fields": fields, "items": items}}
        if api == "namechange":
            fields = ["ts_code", "name", "start_date", "end_date"]
            items = [
                ["000001.SZ", "*ST平安", "20200101", DATES[0]],
                ["000001.SZ", "平安银行", DATES[1], None],
            ]
            return {"code": 0, "msg": "", "data": {"fields": fields, "items": items}}
        answer = super().answer(body)
        data = answer["data"]
        day = DATES.index(params["trade_date"]) if params.get("trade_date") in DATES else 0
        if api == "daily_basic":
            data["items"][0][2] = 2.1e8 * (1 + day)  # 600519: 2.1, 4.2, 6.3 trillion
        if api == "adj_factor":
            data["items"] = [
                row for row in data["items"] if not (row[0] == "000001.SZ" and day == 1)
            ]
            for row in data["items"]:
                row[2] = row[2] * (2.0 if row[0] == "000001.SZ" else 1.0)
            if day == 0:
                data["items"].append(["000002.SZ", DATES[0], 1.0])
        if api == "daily" and day == 0:
            data["items"].append(["000002.SZ", DATES[0], 5, 5, 5, 5, 100, 500])
        return answer


@pytest.fixture
def tushare_pit():
    server = PointInTimeTushare()
    yield server
    server.close()


def test_tushare_caps_and_st_are_those_of_each_date_and_the_delisted_stay(home, tushare_pit):
    home.mkdir(parents=True)
    sync(home, _config(tushare_pit.url), 3, None, lambda *a: None)
    panel = MarketStore.for_source(home, "tushare").load_panel(10)
    moutai, ping_an = panel.column("600519"), panel.column("000001")
    caps = [features_at(panel, t, DEFAULT_CONFIG).market_cap[moutai] for t in range(3)]
    assert caps == pytest.approx([2.1e12, 4.2e12, 6.3e12])
    st = [bool(features_at(panel, t, DEFAULT_CONFIG).is_st[ping_an]) for t in range(3)]
    assert st == [True, False, False]
    assert panel.has("000002") and panel.stocks.loc["000002", "list_status"] == "D"


def test_a_missing_adjustment_factor_carries_the_last_one_and_is_reported(home, tushare_pit):
    home.mkdir(parents=True)
    sync(home, _config(tushare_pit.url), 3, None, lambda *a: None)
    panel = MarketStore.for_source(home, "tushare").load_panel(10)
    assert list(panel.close[:, panel.column("000001")]) == [11.0, 12.0, 13.0]  # not 6.0
    status = cli("data", "status", env={"WYCKOFF_DATA_SOURCE": "tushare", "TUSHARE_TOKEN": TOKEN})
    assert "复权因子：缺失 1 条（1 只股票）" in status.stdout


# --- prices and volumes -----------------------------------------------------------------------


def _split_factor(panel, at: int) -> np.ndarray:
    """The target stock splits 2-for-1 at day index `at` (its factor doubles)."""
    factor = np.ones(panel.close.shape)
    factor[at:, 0] = 2.0
    return factor


def test_volume_is_adjusted_with_the_price_so_a_split_is_no_volume_surge(home):
    home.mkdir(parents=True)
    quiet = make_panel(series((DAYS, 0.0005)), np.full(DAYS, 1e7))
    store = store_from_panel(home, quiet, adj_factor=_split_factor(quiet, DAYS - 15))
    panel = store.load_panel(DAYS)
    f = features_at(panel, T, DEFAULT_CONFIG)
    assert f.volume20[0] / f.volume_prior60[0] == pytest.approx(1.0)  # breakout's volume test
    assert panel.raw_close[T, 0] == pytest.approx(panel.close[T, 0])
    assert panel.raw_close[0, 0] == pytest.approx(2 * panel.close[0, 0])


def test_the_price_floor_uses_the_price_as_traded_that_day(home):
    home.mkdir(parents=True)
    # Traded at 3.00-3.30 through day 200; a later 2-for-1 split makes its qfq price ~1.5.
    cheap_now = make_panel(series((DAYS, 0.0003)) * 0.3 / 2, np.full(DAYS, 4e7))
    store = store_from_panel(home, cheap_now, adj_factor=_split_factor(cheap_now, 250))
    panel = store.load_panel(DAYS)
    assert panel.raw_close[200, 0] > 3.0 and panel.close[200, 0] < 2.0
    assert run_funnel(panel, 200).layer1[0]  # 3 CNY that day: tradable
    assert not run_funnel(panel, T).layer1[0]  # ~1.6 CNY after the split: not


def test_cash_portfolio_sizes_lots_at_the_price_as_traded(home):
    home.mkdir(parents=True)
    # qfq entry 100 CNY, but traded at 400 before a later 4-for-1 split: one lot is 40,000
    # CNY, more than a 100,000 account's third.
    panel = make_panel(np.full(DAYS, 100.0))
    factor = np.ones(panel.close.shape)
    factor[-5:, 0] = 4.0
    panel = store_from_panel(home, panel, adj_factor=factor).load_panel(DAYS)
    trade = Trade("600000", 100, 100.0, exit_t=110, exit=105.0, reason="到期")
    result = cash_portfolio(panel, [trade], 99, 120, 3, DEFAULT_CONFIG)
    assert result["skipped_for_cash"] == 1 and result["final_equity"] == DEFAULT_CONFIG.start_cash


def test_evr_reads_the_stored_turnover_rate_of_that_day():
    close = np.full(DAYS, 10.0)
    close[-2] = close[-1] = 10.1
    volume = np.full(DAYS, 1e7)
    volume[-2] = 3e7  # 3e8 CNY: 1% of a 30 billion total cap
    panel = make_panel(close, volume, low=close * 0.99, market_cap=3e10)
    assert not TRIGGERS["evr"](panel, T, features_at(panel, T, DEFAULT_CONFIG), DEFAULT_CONFIG)[0][
        0
    ]
    turnover = np.full(panel.close.shape, 0.01)
    turnover[-2, 0] = 0.04  # 4% of the float traded that day
    stored = dataclasses.replace(panel, turnover_rate=turnover)
    assert TRIGGERS["evr"](stored, T, features_at(stored, T, DEFAULT_CONFIG), DEFAULT_CONFIG)[0][0]


# --- labels -----------------------------------------------------------------------------------


def test_data_status_speaks_chinese(demo_home):
    out = cli("data", "status").stdout
    assert "股票数" in out and "日线条数" in out and "最新日期" in out
    assert "size_mb" not in out and "stocks_with_bars" not in out


def test_piped_analyze_output_carries_the_demo_notice(demo_home):
    result = cli("analyze", "000001")
    assert result.returncode == 0, result.stderr
    assert "演示数据" in result.stdout


def test_report_prompt_tells_the_model_the_data_is_demo(demo_home, openai_server):
    openai_server.script(Reply(text='{"stocks": []}'))
    context = ToolContext(
        home=demo_home,
        registry=default_registry(),
        store=Store.in_home(demo_home),
        provider=make_provider(model_config(openai_server), stream_timeout_s=5),
    )
    generate_ai_report(ReportParams(stock_codes=["000001"]), context)
    (body,) = openai_server.bodies
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    assert "演示数据" in system and "起跳板" in system


def test_analyze_says_a_return_it_cannot_know_is_unknown_not_zero(home):
    panel = make_panel(series((DAYS, 0.001)))
    panel.close[: DAYS - 60, 0] = np.nan  # listed 60 trading days ago: no 120-day return
    home.mkdir(parents=True)
    store_from_panel(home, panel)
    out = cli("analyze", "600000", env={"WYCKOFF_DATA_SOURCE": "tushare"})
    assert out.returncode == 0, out.stderr
    (returns,) = [line for line in out.stdout.splitlines() if line.startswith("收益：")]
    assert "120日 —（未知）" in returns and "20日 +2.0" in returns and "0.0%" not in returns
