"""`wyckoff research signals` on the demo store: its JSON, the demo label, the events CSV
re-derived from the stored bars, and the cache (reused, then extended by new days)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import cli
from wyckoff.engine.event_cache import cache_folder, signal_records
from wyckoff.engine.market_store import MarketStore

HORIZON_KEYS = {"mean_return", "excess_vs_market", "excess_vs_csi300", "hit_rate", "t_stat"}


def demo_days(home: Path) -> list[str]:
    store = MarketStore.for_source(home, "demo")
    return [str(d)[:10] for d in store.bar_dates()["date"]]


def run_json(*args: str) -> dict:
    result = cli("research", "signals", "--horizons", "2,5", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_demo_study_reports_every_signal_labels_the_demo_and_writes_auditable_events(
    demo_home: Path, tmp_path: Path
):
    days = demo_days(demo_home)
    events_file = tmp_path / "events.csv"
    out = run_json("--start", days[-12], "--events-out", str(events_file))
    assert "演示数据" in out["data_note"] and out["source"] == "demo"
    names = [s["signal"] for s in out["signals"]]
    assert names[:6] == ["spring", "lps", "evr", "sos", "compression", "pullback"]
    assert "funnel" in names
    for record in out["signals"]:
        assert {"signal", "events", "unbuyable"} <= set(record)
        assert HORIZON_KEYS | {"dates"} <= set(record["2"]) and set(record["5"]) >= HORIZON_KEYS
        assert record["max_daily_share"] <= 0.05
    assert sum(s["events"] for s in out["signals"]) > 0

    with events_file.open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:8] == [
        "signal", "code", "signal_date", "entry_date", "entry_price", "h", "exit_date", "return",
    ]  # fmt: skip
    done = next(dict(zip(rows[0], row, strict=True)) for row in rows[1:] if row[-1] == "ok")
    panel = MarketStore.for_source(demo_home, "demo").load_panel(len(days))
    j = panel.codes.index(done["code"])
    entry_t, exit_t = days.index(done["entry_date"]), days.index(done["exit_date"])
    assert days.index(done["signal_date"]) + 1 == entry_t
    assert float(done["entry_price"]) == pytest.approx(panel.open[entry_t, j], abs=1e-4)
    expected = panel.close[exit_t, j] / panel.open[entry_t, j] - 1
    assert float(done["return"]) == pytest.approx(expected, abs=1e-6)
    assert len(rows) - 1 >= sum(s["events"] for s in out["signals"])  # every event has a row

    page = tmp_path / "study.html"
    text = cli("research", "signals", "--start", days[-12], "--by", "cap", "--html", str(page))
    assert text.returncode == 0, text.stderr
    assert "演示数据" in text.stdout and "无法按市值分组" in text.stdout
    assert "t 值" in text.stdout and "超额(全市场)" in text.stdout
    assert "本次计算 0 个信号日" in text.stdout  # the JSON run above cached every day
    html = page.read_text(encoding="utf-8")
    assert "演示数据" in html and html.count("<table>") == 4  # 5, 20, 60 days + the daily shares
    assert "<script" not in html and "http" not in html  # self-contained


def test_a_second_run_reuses_the_cache_and_a_later_end_computes_only_the_new_days(
    demo_home: Path,
):
    days = demo_days(demo_home)
    start, first_end = days[-15], days[-8]
    early = run_json("--start", start, "--end", first_end)
    assert early["cache"] == {"days_computed": 8, "days_reused": 0}
    again = run_json("--start", start, "--end", first_end)
    assert again["cache"] == {"days_computed": 0, "days_reused": 8}
    assert again["signals"] == early["signals"]
    stored = (cache_folder(MarketStore.for_source(demo_home, "demo").path) / "events.npz").stat()

    extended = run_json("--start", start)
    assert extended["cache"] == {"days_computed": 7, "days_reused": 8}
    assert (
        cache_folder(MarketStore.for_source(demo_home, "demo").path) / "events.npz"
    ).stat().st_mtime_ns != stored.st_mtime_ns
    shutil.rmtree(cache_folder(MarketStore.for_source(demo_home, "demo").path))
    fresh = run_json("--start", start)
    assert fresh["cache"] == {"days_computed": 15, "days_reused": 0}
    assert fresh["signals"] == extended["signals"]  # extending gives what computing anew gives


def test_bad_horizons_and_a_start_inside_the_warm_up_are_one_chinese_sentence(demo_home: Path):
    bad = cli("research", "signals", "--horizons", "5,x")
    assert bad.returncode == 2 and "--horizons" in bad.stderr and "Traceback" not in bad.stderr
    early = cli("research", "signals", "--start", demo_days(demo_home)[3])
    assert early.returncode != 0 and "预热" in early.stderr and "Traceback" not in early.stderr


def test_signal_records_are_cached_per_store_version(demo_home: Path):
    """What section 2 reads beside every signal: computed once per store version, then read
    without loading the market."""
    store = MarketStore.for_source(demo_home, "demo")
    panel = store.load_panel(len(demo_days(demo_home)))

    def first_day(p):
        return len(p.dates) - 8

    records = signal_records(store.path, lambda: panel, first_day)
    assert [r["signal"] for r in records["signals"]][:2] == ["spring", "lps"]
    assert set(records["signals"][0]) >= {"events", "5", "20", "60"}

    def no_load():
        raise AssertionError("the cached records were not used")

    assert signal_records(store.path, no_load, first_day) == records


def test_a_new_trading_day_is_the_only_day_computed_and_completes_pending_horizons(
    demo_home: Path,
):
    days = demo_days(demo_home)
    before = run_json("--start", days[-6])
    assert before["cache"] == {"days_computed": 6, "days_reused": 0}
    pending = {s["signal"]: s["2"]["complete"] for s in before["signals"]}

    store = MarketStore.for_source(demo_home, "demo")  # a sync brings one more day
    new_day = (np.datetime64(days[-1]) + np.timedelta64(3, "D")).astype(str)
    for table in ("bars", "index_bars"):
        last = store.query_df(f"SELECT * FROM {table} WHERE date = ?", [days[-1]])
        store.upsert(table, last.assign(date=pd.Timestamp(new_day)))
    after = run_json("--start", days[-6])
    assert after["cache"] == {"days_computed": 1, "days_reused": 6}
    assert after["period"]["end"] == new_day
    completed = {s["signal"]: s["2"]["complete"] for s in after["signals"]}
    assert sum(completed.values()) > sum(pending.values())  # day -2's events now have h = 2
