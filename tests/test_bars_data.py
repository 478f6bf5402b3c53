"""Bars as the exchange made them (issue 23): factors from the reference prior close, volume
across bonus issues and cash dividends, the whole ST history from tushare, and bars brought
by `wyckoff data import`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.test_market_data import DATES, TushareServer, _config
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources import TUSHARE_PAGE_ROWS, akshare_frames, sync


def _bars(code: str, closes: list[float], pre_closes: list[float | None]) -> pd.DataFrame:
    """One stock's raw bars on consecutive weekdays from 2025-03-03, one million shares a day."""
    days = len(closes)
    return pd.DataFrame(
        {
            "code": code,
            "date": pd.bdate_range("2025-03-03", periods=days),
            **dict.fromkeys(("open", "high", "low", "close"), closes),
            "pre_close": pre_closes,
            "volume": 1e6,
            "amount": [c * 1e6 for c in closes],
        }
    )


def _load(home, frame: pd.DataFrame, source: str = "import"):
    store = MarketStore.for_source(home, source)
    store.write({"bars": frame}, derive_price=True)
    return store, store.load_panel(len(frame))


# --- factors and volume from the reference prior close ----------------------------------------

# 600000: 10送10 on the third day (reference 10.20 / 2 = 5.10), then 0.30 cash on the fifth
# (reference 5.30 - 0.30 = 5.00).
CLOSES = [10.00, 10.20, 5.20, 5.30, 5.05, 5.10]
PRE_CLOSES = [None, 10.00, 5.10, 5.20, 5.00, 5.05]


def test_factors_change_only_on_ex_dates_and_adjusted_returns_equal_raw_ones(tmp_path):
    store, panel = _load(tmp_path, _bars("600000", CLOSES, PRE_CLOSES))
    factors = store.execute("SELECT adj_factor, share_factor FROM bars ORDER BY date")
    assert [f for f, _ in factors] == pytest.approx([1, 1, 2, 2, 2.12, 2.12])
    adjusted = panel.close[:, 0] / np.roll(panel.close[:, 0], 1) - 1
    raw = np.array(CLOSES) / np.array([np.nan, *CLOSES[:-1]]) - 1
    normal = [1, 3, 5]  # not ex-dates: the same return as traded
    assert adjusted[normal] == pytest.approx(raw[normal], abs=1e-12)
    # on an ex-date the return counts from the reference price, as the exchange's does
    assert adjusted[2] == pytest.approx(5.20 / 5.10 - 1) and adjusted[4] == pytest.approx(0.01)
    assert panel.close[-1, 0] == pytest.approx(5.10)  # qfq: today's price as traded


def test_a_bonus_issue_doubles_earlier_volume_and_a_cash_dividend_leaves_it(tmp_path):
    _, panel = _load(tmp_path, _bars("600000", CLOSES, PRE_CLOSES))
    # before the 10送10 every share is two of today's; the cash dividend adds no shares
    assert panel.volume[:, 0].tolist() == [2e6, 2e6, 1e6, 1e6, 1e6, 1e6]


@pytest.mark.parametrize(
    ("previous", "reference", "bonus"),
    [
        (10.00, 9.20, 0.0),  # 0.80 cash: 8.7% of the price, still cash only
        (10.00, 7.61, 0.3),  # 10转3 with 0.10 cash: (10 - 0.1) / 1.3 = 7.615 -> 7.61
        (3.01, 2.32, 0.3),  # 10转3 with the reference rounded up to the cent
        (2.01, 1.01, 1.0),  # 10送10 of a low-priced stock: 1.005 -> 1.01
        (30.00, 10.00, 2.0),  # 10转20
    ],
)
def test_the_bonus_ratio_read_from_the_reference_price(tmp_path, previous, reference, bonus):
    store, panel = _load(tmp_path, _bars("600000", [previous, reference], [None, reference]))
    shares = store.execute("SELECT share_factor FROM bars ORDER BY date")
    assert shares[-1][0] == pytest.approx(1 + bonus)
    assert panel.volume[0, 0] == pytest.approx(1e6 * (1 + bonus))


def test_later_bars_chain_onto_the_stored_factors(tmp_path):
    frame = _bars("600000", CLOSES, PRE_CLOSES)
    store = MarketStore.for_source(tmp_path, "import")
    store.write({"bars": frame.iloc[:3]}, derive_price=True)
    store.write({"bars": frame.iloc[3:]}, derive_price=True)
    factors = store.execute("SELECT adj_factor, share_factor FROM bars ORDER BY date")
    assert factors == pytest.approx([(1, 1), (1, 1), (2, 2), (2, 2), (2.12, 2), (2.12, 2)])


def test_akshare_factors_come_from_its_dividends_and_status_says_so(tmp_path):
    def record(day: str, close: float) -> dict:
        return {"日期": day, "开盘": close, "收盘": close, "最高": close, "最低": close,
                "成交量": 1000, "成交额": close * 1e5, "换手率": 1.0}  # fmt: skip

    # a 10送10 with 0.20 cash on 2025-06-12: reference (10.20 - 0.2) / 2 = 5.00
    raw = [record("2025-06-10", 10.00), record("2025-06-11", 10.20), record("2025-06-12", 5.05)]
    dividends = [{"除权除息日": "2025-06-12", "方案进度": "实施分配",
                  "现金分红-现金分红比例": 2.0, "送转股份-送转总比例": 10.0}]  # fmt: skip
    bars, basic = akshare_frames([("000066", raw, dividends)])
    store = MarketStore.for_source(tmp_path, "akshare")
    store.write({"bars": bars, "daily_basic": basic}, derive_price=True)
    panel = store.load_panel(3)
    assert panel.close[:, 0] == pytest.approx([10.00 / 2.04, 10.20 / 2.04, 5.05])
    assert panel.volume[:, 0].tolist() == [2e5, 2e5, 1e5]  # the stated bonus, not the rule
    (caveat,) = [c for c in store.status()["caveats"] if c.startswith("复权因子")]
    assert "akshare 的复权因子由交易所前收盘价推导" in caveat and "共 1 个除权除息日" in caveat


# --- tushare: the whole name history ------------------------------------------------------------


class LongNameHistory(TushareServer):
    """namechange answers at most TUSHARE_PAGE_ROWS rows per call, like tushare; the record
    that makes 000001 *ST comes after a full page of other stocks' renames."""

    def answer(self, body: dict) -> dict:
        if body["api_name"] != "namechange":
            return super().answer(body)
        fields = ["ts_code", "name", "start_date", "end_date"]
        items = [[f"{i:06d}.SH", "某某", "20000101", "20010101"] for i in range(TUSHARE_PAGE_ROWS)]
        items.append(["000001.SZ", "*ST平安", DATES[0], None])
        offset = int(body["params"].get("offset") or 0)
        limit = min(int(body["params"].get("limit") or TUSHARE_PAGE_ROWS), TUSHARE_PAGE_ROWS)
        page = items[offset : offset + limit]
        return {"code": 0, "msg": "", "data": {"fields": fields, "items": page}}


def test_tushare_st_status_is_read_past_the_first_page_of_name_changes(home):
    server = LongNameHistory()
    try:
        home.mkdir(parents=True)
        sync(home, _config(server.url), 3, None, lambda *a: None)
    finally:
        server.close()
    panel = MarketStore.for_source(home, "tushare").load_panel(3)
    assert panel.is_st[:, panel.column("000001")].tolist() == [True, True, True]
    calls = [r["params"] for r in server.requests if r["api_name"] == "namechange"]
    assert [c["offset"] for c in calls] == [0, TUSHARE_PAGE_ROWS]
