"""An imported stock whose bars stop is delisted at its last bar, inferred on the whole store
at import time, unless the file says otherwise with `list_status` / `delist_date` (issue 36)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.conftest import cli
from wyckoff.engine.backtest import delisted
from wyckoff.engine.bar_import import STOCK_COLUMNS
from wyckoff.engine.listing_status import DELISTED_AFTER_DAYS
from wyckoff.engine.market_store import MarketStore

KAILE = Path(__file__).parent.parent / "data" / "600260_2022_2023_delisting.csv"


def _file(folder: Path, name: str, stocks: dict[str, int], extra: dict | None = None) -> Path:
    """Flat bars at 5.00 on the weekdays from 2025-03-03: each code for its number of days;
    `extra` adds columns (code -> value on every row of that code)."""
    days = pd.bdate_range("2025-03-03", periods=max(stocks.values()))
    rows = [
        {"code": code, "date": day.date(), **dict.fromkeys(STOCK_COLUMNS[2:], 5)}
        for code, count in stocks.items()
        for day in days[:count]
    ]
    frame = pd.DataFrame(rows)
    for column, values in (extra or {}).items():
        frame[column] = frame["code"].map(values)
    path = folder / name
    frame.to_csv(path, index=False)
    return path


def _import(path: Path):
    result = cli("data", "import", str(path))
    assert result.returncode == 0, result.stderr
    return result


def _status(home) -> dict[str, tuple]:
    stocks = MarketStore.for_source(home, "import").load_panel(500).stocks
    return {  # a listed stock has no final day (NaN in the frame)
        code: (status, final if isinstance(final, str) else None)
        for code, status, final in zip(
            stocks.index, stocks["list_status"], stocks["last_trade_date"], strict=True
        )
    }


def test_a_real_st_delisting_without_a_delisting_name_is_delisted_at_its_last_bar(home):
    # *ST凯乐's bars stop on 2023-02-02 (a face-value delisting: no 退 name, no 退市整理 days);
    # another stock trades on for 30 more trading days
    _import(KAILE)
    later = home.parent / "later.csv"
    days = pd.bdate_range("2023-01-03", "2023-03-17")
    frame = pd.DataFrame({"code": "600000", "date": days.date})
    frame[list(STOCK_COLUMNS[2:])] = 5
    frame.to_csv(later, index=False)
    result = _import(later)
    assert "有 1 只股票的日线比最后一天早 20 个交易日以上就停止" in result.stderr
    assert _status(home) == {"600000": ("L", None), "600260": ("D", "2023-02-02")}


def test_more_than_twenty_silent_trading_days_is_a_delisting_twenty_is_not(home):
    end = 60
    _import(_file(home.parent, "a.csv", {"600000": end, "600001": end - 20, "600002": end - 21}))
    assert DELISTED_AFTER_DAYS == 20
    status = _status(home)
    assert status["600001"] == ("L", None)  # 20 trading days without a bar: a suspension
    last_bar = str(pd.bdate_range("2025-03-03", periods=end - 21)[-1].date())
    assert status["600002"] == ("D", last_bar)
    # a later file with new bars for it: listed again (the inference is redone on every import)
    _import(_file(home.parent, "b.csv", {"600002": end}))
    assert _status(home)["600002"] == ("L", None)


def test_the_files_list_status_and_delist_date_win_over_the_inference(home):
    stocks = {"600000": 60, "600001": 30, "600002": 30, "600003": 60}
    _import(
        _file(
            home.parent,
            "given.csv",
            stocks,
            {
                "list_status": {"600001": "L"},  # a long suspension that will end
                "delist_date": {"600002": "2025-05-30", "600003": "20250502"},
            },
        )
    )
    status = _status(home)
    assert status["600000"] == ("L", None)
    assert status["600001"] == ("L", None)
    # held suspended until the delisting date given, then gone
    assert status["600002"] == ("D", "2025-05-30")
    # a delisting date before the last bar: it trades to its last bar
    assert status["600003"] == ("D", str(pd.bdate_range("2025-03-03", periods=60)[-1].date()))


def test_a_bad_list_status_is_one_sentence_and_writes_nothing(home):
    path = _file(home.parent, "bad.csv", {"600000": 3}, {"list_status": {"600000": "退市"}})
    result = cli("data", "import", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        "第 2 行的 list_status 是 '退市'：应为 L（上市）、D（退市）、P（暂停上市）或留空"
        in result.stderr
    )
    assert MarketStore.for_source(home, "import").is_empty()


def test_the_status_is_the_same_in_a_window_cut_before_the_last_bar(home):
    """Point in time: a window ending inside the stock's life sees the same status and final
    day as the whole store, so it never exits the stock before its real last bar."""
    _import(_file(home.parent, "a.csv", {"600000": 80, "600001": 40}))
    store = MarketStore.for_source(home, "import")
    whole, cut = store.load_panel(500), store.load_panel(500, end="2025-04-11")  # day 30
    j_whole, j_cut = whole.column("600001"), cut.column("600001")
    assert cut.stocks.loc["600001", "last_trade_date"] == "2025-04-25"  # day 40, after the cut
    assert not any(delisted(cut, t, j_cut) for t in range(len(cut.dates)))
    gone = [str(whole.dates[t]) for t in range(len(whole.dates)) if delisted(whole, t, j_whole)]
    assert gone[0] == "2025-04-28"
