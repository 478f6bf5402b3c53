"""Bars as the exchange made them (issue 23): factors from the reference prior close, volume
across bonus issues and cash dividends, the whole ST history from tushare, and bars brought
by `wyckoff data import`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import cli
from tests.integration.test_market_data import DATES, TushareServer, _config
from wyckoff.engine.bar_import import STOCK_COLUMNS
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources.akshare import akshare_frames
from wyckoff.engine.sources.sync import sync
from wyckoff.engine.sources.tushare import TUSHARE_PAGE_ROWS


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


def _synced(home, server: TushareServer):
    """The panel of a three-day tushare sync from `server` (closed afterwards)."""
    try:
        home.mkdir(parents=True)
        sync(home, _config(server.url), 3, None, lambda *a: None)
    finally:
        server.close()
    return MarketStore.for_source(home, "tushare").load_panel(3)


def test_tushare_st_status_is_read_past_the_first_page_of_name_changes(home):
    server = LongNameHistory()
    panel = _synced(home, server)
    assert panel.is_st[:, panel.column("000001")].tolist() == [True, True, True]
    calls = [r["params"] for r in server.requests if r["api_name"] == "namechange"]
    assert [c["offset"] for c in calls] == [0, TUSHARE_PAGE_ROWS]


# --- wyckoff data import ----------------------------------------------------------------------

DATA = Path(__file__).parent.parent / "data"
STOCK_FILES = sorted(DATA.glob("[0-9]*.csv"))
INDEX_FILES = sorted(DATA.glob("index_*.csv"))


def _import(*args: str):
    return cli("data", "import", *(str(a) for a in args))


def _real_store(home) -> MarketStore:
    for path in STOCK_FILES:
        result = _import(path)
        assert result.returncode == 0, result.stderr
    for path in INDEX_FILES:
        result = _import(path, "--index")
        assert result.returncode == 0, result.stderr
    return MarketStore.for_source(home, "import")


def _raw(store: MarketStore) -> pd.DataFrame:
    return store.query_df(
        "SELECT code, date, close, pre_close, adj_factor, share_factor FROM bars ORDER BY code, date"
    )


def test_real_bars_get_factors_exactly_on_the_exchange_ex_dates(home):
    bars = _raw(_real_store(home))
    previous = bars.groupby("code")["close"].shift(1)
    factor_change = bars["adj_factor"] / bars.groupby("code")["adj_factor"].shift(1)
    changed = bars[(factor_change - 1).abs() > 1e-12]
    # 平安银行 10送2 with cash, 宁德时代 cash, 恒瑞医药 送股 with cash, 艾融软件 cash
    assert changed[["code", "date"]].astype(str).values.tolist() == [
        ["000001", "2016-06-16"],
        ["300750", "2020-06-04"],
        ["600276", "2017-05-31"],
        ["830799", "2023-06-02"],
    ]
    assert (bars["adj_factor"] > 0).all()
    # everywhere else the adjusted return is the raw return, to the last bit
    normal = ~bars.index.isin(changed.index) & previous.notna()
    adjusted = factor_change * bars["close"] / previous
    assert (adjusted[normal] - bars["close"][normal] / previous[normal]).abs().max() < 1e-12
    shares = bars.set_index(["code", bars["date"].astype(str)])["share_factor"]
    assert shares["600276", "2017-05-31"] / shares["600276", "2017-05-26"] == pytest.approx(1.2)
    assert shares["000001", "2016-06-16"] / shares["000001", "2016-06-15"] == pytest.approx(1.2)
    assert shares["300750"].nunique() == shares["830799"].nunique() == 1  # cash adds no shares


def test_ping_an_across_its_2016_bonus_issue_is_flat_not_minus_18_percent(home):
    panel = _real_store(home).load_panel(2000, codes=["000001"])
    dates = [str(d) for d in panel.dates]
    before, on = dates.index("2016-06-15"), dates.index("2016-06-16")
    assert panel.raw_close[on, 0] / panel.raw_close[before, 0] - 1 == pytest.approx(
        -0.179, abs=1e-3
    )
    assert panel.close[on, 0] / panel.close[before, 0] - 1 == pytest.approx(0.0, abs=1e-12)
    # a held lot of 1,000 shares is 1,200 after the ex-date: the volume before counts x1.2
    raw_volume = 56_349_787  # 2016-01-04, lots x 100
    assert panel.volume[0, 0] == pytest.approx(raw_volume * 1.2)


def test_real_bars_keep_st_by_date_suspensions_and_the_star_listing(home):
    panel = _real_store(home).load_panel(2000)
    dates = [str(d) for d in panel.dates]
    st = panel.is_st[:, panel.column("000980")]
    traded = ~np.isnan(panel.close[:, panel.column("000980")])
    assert st[traded].any() and not st[traded].all()  # *ST众泰 became ST inside the file
    zte = panel.column("000063")  # 中兴通讯, suspended 2018-04-17 .. 2018-06-12
    traded_days = [d for d, c in zip(dates, panel.close[:, zte], strict=True) if c == c]
    resumed = traded_days.index("2018-06-13")
    assert traded_days[resumed - 1] == "2018-04-16"
    # no factor change across the suspension: the limit-down as traded, 31.31 -> 28.18
    day = dates.index("2018-06-13")
    assert panel.close[day, zte] / panel.close[dates.index("2018-04-16"), zte] == pytest.approx(
        28.18 / 31.31
    )
    assert panel.stocks.loc["688981", "board"] == "star"


def test_screen_and_analyze_run_on_imported_real_bars(home):
    _real_store(home)
    analyze = cli("analyze", "830799", "--json")  # the newest bars of the set: a BSE stock
    assert analyze.returncode == 0, analyze.stderr
    payload = json.loads(analyze.stdout)
    assert payload["source"] == "import" and payload["close"] == 10.22
    screen = cli("screen", "--json")
    assert screen.returncode == 0, screen.stderr
    assert json.loads(screen.stdout)["source"] == "import"
    status = cli("data", "status").stdout
    assert "import" in status and "日线来源" in status and "由交易所前收盘价推导" in status
    indices = json.loads(cli("data", "status", "--json").stdout)["indices"]
    assert indices == 2  # 000001.SH and 000300.SH


@pytest.fixture(scope="module")
def demo_as_files(tmp_path_factory) -> tuple[Path, Path]:
    """The demo market (400 stocks) written out in the import format: stock bars as Parquet
    (names per date, the first bar's reference price its open) and the indices as CSV."""
    import duckdb

    from wyckoff.engine.sources.demo import ensure_demo

    folder = tmp_path_factory.mktemp("demo-files")
    store = ensure_demo(folder / "home", limit=400)
    stocks, indices = folder / "stocks.parquet", folder / "indices.csv"
    renamed = _renamed_on(store)
    with duckdb.connect(str(store.path), read_only=True) as conn:
        conn.execute(
            f"""COPY (SELECT b.code || CASE WHEN b.code LIKE '6%' THEN '.SH' ELSE '.SZ' END AS code,
                b.date, b.open, b.high, b.low, b.close,
                COALESCE(lag(b.close) OVER (PARTITION BY b.code ORDER BY b.date), b.open)
                    AS pre_close,
                b.volume, b.amount,
                s.name || CASE WHEN b.date < DATE '{renamed}' THEN '{FORMER}' ELSE '' END AS name
            FROM bars b JOIN stocks s USING (code)) TO '{stocks}' (FORMAT parquet)"""
        )
        conn.execute(
            f"COPY (SELECT code, strftime(date, '%Y%m%d') AS date, open, high, low, close,"
            f" volume, amount FROM index_bars) TO '{indices}' (HEADER)"
        )
    return stocks, indices


FORMER = "（旧）"  # every demo stock is renamed (its name loses this) 15 days before the end


def _renamed_on(store: MarketStore) -> str:
    return str(store.bar_dates()["date"].iloc[-15].date())


def test_screen_analyze_and_backtest_work_on_an_imported_parquet_market(home, demo_as_files):
    stocks, indices = demo_as_files
    first = _import(stocks)
    assert first.returncode == 0, first.stderr
    assert "数据源已切换为 import" in first.stderr
    assert _import(indices, "--index").returncode == 0
    screen = json.loads(cli("screen", "--json").stdout)
    assert screen["source"] == "import" and screen["summary"]["total_scanned"] == 400
    assert screen["summary"]["layer1_passed"] > 20
    analyze = json.loads(cli("analyze", "000001", "--json").stdout)
    assert analyze["source"] == "import" and analyze["name"] == "平安银行"
    start = str(MarketStore.for_source(home, "import").load_panel(60).dates[-40])
    backtest = cli("backtest", "--start", start, "--json")
    assert backtest.returncode == 0, backtest.stderr
    assert json.loads(backtest.stdout)["trades"] > 0
    # each trade names the stock as it was called on its entry day, not today
    renamed = _renamed_on(MarketStore.for_source(home, "import"))
    trades = json.loads(backtest.stdout)["trade_list"]
    before = [t for t in trades if t["entry_date"] < renamed]
    assert before and all(t["name"].endswith(FORMER) for t in before)
    assert not any(t["name"].endswith(FORMER) for t in trades if t["entry_date"] >= renamed)
    status = json.loads(cli("data", "status", "--json").stdout)
    assert status["source"] == "import" and status["indices"] == 6


def test_a_second_import_adds_to_the_first(home):
    path = DATA / "300750_2020.csv"
    lines = path.read_text().splitlines()
    early, late = home.parent / "early.csv", home.parent / "late.csv"
    early.write_text("\n".join(lines[:60]) + "\n")  # through 2020-06-04's eve
    late.write_text("\n".join(lines[:1] + lines[60:]) + "\n")
    assert _import(early).returncode == 0 and _import(late).returncode == 0
    bars = _raw(MarketStore.for_source(home, "import"))
    assert len(bars) == len(lines) - 1
    whole = home.parent / "whole"
    whole.mkdir()
    once = cli("data", "import", str(path), env={"WYCKOFF_HOME": str(whole)})
    assert once.returncode == 0
    assert _raw(MarketStore.for_source(whole, "import")).equals(bars)  # same factors


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("600000,2025-03-06,5,5,5,5,5,100,500", "第 5 行与第 4 行重复（600000 2025-03-06）"),
        ("600000,2025-02-30,5,5,5,5,5,100,500", "第 5 行的日期是 '2025-02-30'，无法识别"),
        ("600000,2025-03-07,5,5,5,-5,5,100,500", "第 5 行的 close 是 '-5'：应为大于 0"),
        ("600000,2025-03-07,5,5,5,5,5,,500", "第 5 行的 volume 为空"),
        ("60000X,2025-03-07,5,5,5,5,5,100,500", "第 5 行的代码 '60000X' 无效"),
    ],
)
def test_a_bad_file_is_one_sentence_and_writes_nothing(home, row, message):
    good = home.parent / "good.csv"
    good.write_text(f"{','.join(STOCK_COLUMNS)}\n600001.SH,2025-03-03,5,5,5,5,5,100,500\n")
    assert _import(good).returncode == 0
    bad = home.parent / "bad.csv"
    bad.write_text(
        f"{','.join(STOCK_COLUMNS)}\n600000,2025-03-04,5,5,5,5,5,100,500\n"
        "600000,2025-03-05,5,5,5,5,5,100,500\n600000,2025-03-06,5,5,5,5,5,100,500\n" + row + "\n"
    )
    result = _import(bad)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "没有写入任何数据" in result.stderr and "Traceback" not in result.stderr
    assert MarketStore.for_source(home, "import").execute("SELECT code FROM bars") == [("600001",)]


def test_a_file_without_a_required_column_names_it(home):
    bad = home.parent / "no_pre_close.csv"
    bad.write_text("code,date,open,high,low,close,volume,amount\n600000,2025-03-03,5,5,5,5,1,5\n")
    result = _import(bad)
    assert result.returncode == 2
    assert "no_pre_close.csv 缺少列：pre_close" in result.stderr
    assert "Traceback" not in result.stderr and not (home / "market-import.duckdb").exists()


class CashDividendTushare(TushareServer):
    """000001 pays cash on the last day: its adj_factor rises 2% and pre_close is 2% below
    the previous close; 600519's 2-for-1 split comes without pre_close (an older sync).
    With `plans`, the dividend API states 600519's split and a 12% cash payment of 000001
    (which the price alone would read as 10送1)."""

    plans = False

    def answer(self, body: dict) -> dict:
        api = body["api_name"]
        if api == "dividend":
            fields = ["ts_code", "div_proc", "stk_div", "ex_date"]
            items = [["600519.SH", "实施", 1.0, DATES[2]], ["000001.SZ", "实施", 0.0, DATES[2]]]
            items += [["000001.SZ", "预案", 5.0, None]]  # a plan only: no shares yet
            on_date = body["params"]["ex_date"] == DATES[2] and self.plans
            return {"code": 0, "msg": "", "data": {"fields": fields, "items": items * on_date}}
        answer = super().answer(body)
        data = answer.get("data") or {}
        day = DATES.index(body["params"].get("trade_date", DATES[0]))
        cash = 1.12 if self.plans else 1.02
        if api == "daily":
            data["fields"].insert(6, "pre_close")
            for row in data["items"]:
                previous = 11.0 + day - 1  # 000001 closes 11, 12, 13
                cash_day = previous / cash if day == 2 else previous
                row.insert(6, cash_day if row[0] == "000001.SZ" else None)
        if api == "adj_factor":
            for row in data["items"]:
                row[2] = cash if row[0] == "000001.SZ" and day == 2 else row[2]
        return answer


@pytest.mark.parametrize("plans", [False, True], ids=["from-prices", "from-dividend-api"])
def test_tushare_volume_follows_the_split_but_not_the_cash_dividend(home, plans):
    server = CashDividendTushare()
    server.plans = plans
    panel = _synced(home, server)
    ping_an, moutai = panel.column("000001"), panel.column("600519")
    assert panel.volume[:, ping_an].tolist() == [500_000, 500_000, 500_000]  # not x1.02
    assert panel.close[0, ping_an] == pytest.approx(11.0 / (1.12 if plans else 1.02))
    assert panel.volume[:, moutai].tolist() == [200_000, 200_000, 100_000]  # the split's x2


def test_a_window_starting_on_an_ex_date_keeps_the_stored_reference_price(tmp_path):
    frame = _bars("600000", CLOSES, PRE_CLOSES)
    store = MarketStore.for_source(tmp_path, "akshare")
    store.write({"bars": frame}, derive_price=True)
    # a later fetch starts on the 10送10 day: it cannot know that day's reference price
    later = frame.iloc[2:].assign(pre_close=[None, *PRE_CLOSES[3:]])
    store.write({"bars": later}, derive_price=True)
    factors = store.execute("SELECT adj_factor FROM bars ORDER BY date")
    assert [f for (f,) in factors] == pytest.approx([1, 1, 2, 2, 2.12, 2.12])


def test_a_renamed_stock_is_named_as_it_was_called_on_each_date(home):
    names = ["美讯股份", "美讯股份", "ST美讯", "ST美讯", "*ST美讯"]
    rows = [f"600000,2015-03-0{2 + k},5,5,5,5,5,100,500,{name}" for k, name in enumerate(names)]
    header = f"{','.join(STOCK_COLUMNS)},name"
    path = home.parent / "renamed.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    assert _import(path).returncode == 0
    store = MarketStore.for_source(home, "import")
    changes = store.execute("SELECT CAST(start_date AS VARCHAR), name FROM names ORDER BY 1")
    assert changes == [
        ("2015-03-02", "美讯股份"),
        ("2015-03-04", "ST美讯"),
        ("2015-03-06", "*ST美讯"),
    ]
    stocks = store.load_panel(5).stock_list
    on = [
        stocks.name_on(0, day) for day in ("2015-02-27", "2015-03-03", "2015-03-05", "2015-03-09")
    ]
    assert on == ["美讯股份", "美讯股份", "ST美讯", "*ST美讯"]
    # a later file that corrects two days' names: the runs are rebuilt from every stored day
    path.write_text("\n".join([header, *(r.replace("ST美讯", "美讯股份") for r in rows[2:4])]))
    assert _import(path).returncode == 0
    changes = store.execute("SELECT CAST(start_date AS VARCHAR), name FROM names ORDER BY 1")
    assert changes == [("2015-03-02", "美讯股份"), ("2015-03-06", "*ST美讯")]
