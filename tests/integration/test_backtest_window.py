"""A backtest, sweep or walk-forward runs exactly the window asked for, with the warm-up its
indicators need loaded before it; when the store lacks days it names them (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import cli
from wyckoff.engine.window import WARMUP_DAYS, MissingHistory, backtest_window


@pytest.fixture
def long_store(home, install_demo) -> list[str]:
    """A demo market of 800 trading days in use: more than the old fixed 700-day load."""
    store = install_demo(home, 120)
    assert cli("data", "use", "demo").returncode == 0
    return [str(d) for d in store.bar_dates()["date"].to_numpy().astype("datetime64[D]")]


def _period(*args: str) -> dict:
    result = cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["period"]


def test_a_backtest_early_in_a_long_history_runs_the_window_asked_for(long_store):
    dates = long_store
    assert len(dates) == 800
    start, end = dates[300], dates[340]
    assert _period("backtest", "--start", start, "--end", end) == {"start": start, "end": end}
    # with only an end: the 250 trading days before it, not the end of the last loaded year
    assert _period("backtest", "--end", dates[520]) == {"start": dates[270], "end": dates[520]}


def test_a_sweep_and_its_walk_forward_run_the_window_asked_for_beside_the_market(
    long_store, tmp_path
):
    dates = long_store
    grid = tmp_path / "grid.toml"
    grid.write_text("hold_days = [5, 10]\n", encoding="utf-8")
    args = ("backtest", "sweep", str(grid), "--start", dates[300], "--end", dates[339])
    swept = cli(*args, "--workers", "1", "--json")
    payload = json.loads(swept.stdout)
    assert payload["period"] == {"start": dates[300], "end": dates[339]}
    for row in (r["metrics"] for r in payload["results"]):  # the market beside every row
        assert row["excess_csi300_pct"] == round(
            row["cash_return_pct"] - row["csi300_return_pct"], 2
        )
    walked = cli(*args, "--workers", "1", "--walk-forward", "20:10", "--json")
    folds = json.loads(walked.stdout)["folds"]
    assert [f["train"]["start"] for f in folds] == [dates[300], dates[310]]
    assert folds[-1]["test"]["end"] == dates[339]
    tests = [f["out_of_sample"] for f in folds]  # each fold over its own test window
    assert tests[0]["csi300_return_pct"] != tests[1]["csi300_return_pct"]
    assert all(t["excess_market_pct"] is not None for t in tests)
    summary = json.loads(walked.stdout)["summary"]
    excess = [t["excess_csi300_pct"] for t in tests]
    assert summary["mean_excess_csi300_pct"] == round(sum(excess) / 2, 2)
    assert summary["std_excess_csi300_pct"] == round(abs(excess[0] - excess[1]) / 2**0.5, 2)
    assert summary["positive_excess_folds"] == sum(1 for x in excess if x > 0)
    text = cli(*args, "--workers", "1", "--walk-forward", "20:10").stdout
    assert "样本外沪深300%" in text and "样本外全市场%" in text
    assert f"第 2 段（{dates[330]} 至 {dates[339]}）：样本内选中 hold_days=" in text
    assert (
        f"，沪深300 {tests[1]['csi300_return_pct']:+.1f}%，超额 {excess[1]:+.1f} 个百分点" in text
    )
    assert f"样本外超额（对沪深300）平均 {summary['mean_excess_csi300_pct']:+.2f} 个百分点" in text
    assert f"样本外跑赢同期沪深300的有 {summary['positive_excess_folds']} / 2 段" in text


def test_missing_warm_up_or_missing_days_are_named_in_one_sentence(long_store):
    dates = long_store
    early = cli("backtest", "--start", dates[100], "--end", dates[300])
    assert early.returncode == 1 and "Traceback" not in early.stderr
    assert f"行情库最早只到 {dates[0]}" in early.stderr
    assert f"缺少 {dates[0]} 之前的 {WARMUP_DAYS - 100} 个交易日" in early.stderr
    assert f"：把开始日期改为 {dates[WARMUP_DAYS]} 或更晚。" in early.stderr
    assert "data sync" not in early.stderr  # the demo market cannot be synced
    late_end = str(np.datetime64(dates[-1]) + 7)
    late = cli("backtest", "--start", dates[700], "--end", late_end)
    assert late.returncode == 1 and f"行情库只到 {dates[-1]}，缺少 " in late.stderr
    assert late_end[:8] in late.stderr.split("缺少 ")[1]


def test_the_window_starts_on_the_first_trading_day_on_or_after_the_start():
    days = np.arange(np.datetime64("2024-01-01"), np.datetime64("2025-06-30"))
    days = days[np.is_busday(days)]
    window = backtest_window(days, "2025-03-01", "2025-03-31")  # 03-01 is a Saturday
    assert (window.start, window.end) == ("2025-03-03", "2025-03-31")
    assert window.days == 21 + WARMUP_DAYS  # March 2025 has 21 weekdays
    # an end on the Saturday after the last bar misses nothing
    assert backtest_window(days, "2025-06-02", "2025-06-28").end == "2025-06-27"
    with pytest.raises(MissingHistory, match="2025-06-30"):
        backtest_window(days, "2025-06-02", "2025-07-01")


def test_a_store_that_can_sync_is_told_how_many_days_to_sync():
    days = np.arange(np.datetime64("2024-01-01"), np.datetime64("2025-06-30"))
    days = days[np.is_busday(days)]  # 390 weekdays
    with pytest.raises(MissingHistory) as missing:
        backtest_window(days, str(days[100]), None)
    # back from the latest day: the 290 days from the start, and 250 before it
    assert "运行 `wyckoff data sync --days 540` 补齐，或把开始日期改为" in missing.value.message


def test_an_import_store_is_told_to_import_earlier_bars_not_to_sync(home):
    ping_an = Path(__file__).parent.parent / "data" / "000001_2016.csv"  # 2016 only
    assert cli("data", "import", str(ping_an)).returncode == 0
    early = cli("backtest", "--start", "2016-03-01")
    assert early.returncode == 1 and "Traceback" not in early.stderr
    assert "data sync" not in early.stderr  # an import store cannot be synced
    assert "用 `wyckoff data import` 导入 2016-01-04 之前的行情补齐" in early.stderr
    short = cli("backtest")  # a year of bars: no room for the warm-up and a window
    assert short.returncode == 1 and "data sync" not in short.stderr
    assert "行情历史不足" in short.stderr and "`wyckoff data import`" in short.stderr
    late = cli("backtest", "--start", "2016-10-10", "--end", "2016-11-30")  # bars end 10-28
    assert "data sync" not in late.stderr
    assert "用 `wyckoff data import` 导入 2016-10-28 之后的行情" in late.stderr
