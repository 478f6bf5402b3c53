"""`wyckoff paper`: the commands on the demo market (labelled demo), their refusals, and a run
killed with kill -9 that leaves whole days the next run completes."""

from __future__ import annotations

import json
import signal
import sqlite3

from tests.cli_runner import cli
from tests.conftest import cli_process, spawn_cli
from wyckoff.agents.market_data import DEMO_NOTE
from wyckoff.engine.market_store import MarketStore


def market_days(home, back: int) -> list[str]:
    """The demo market's last `back` + 1 trading days, as YYYYMMDD."""
    dates = MarketStore.for_source(home, "demo").bar_dates()["date"]
    return [d.strftime("%Y%m%d") for d in dates.iloc[-(back + 1) :]]


def state(home) -> dict[str, list]:
    conn = sqlite3.connect(home / "wyckoff.db")
    tables = ("paper_account", "paper_positions", "paper_fills", "paper_orders", "paper_nav")
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables}


def test_the_paper_commands_on_the_demo_market_say_it_is_demo(demo_home):
    missing = cli("paper", "run")
    assert missing.returncode == 4 and "还没有纸面账户" in missing.stderr  # nothing to do
    assert cli("paper", "show").returncode == 2
    days = market_days(demo_home, 5)
    reset = cli("paper", "reset", "--capital", "500000", "--start", days[0])
    assert reset.returncode == 0 and "500,000.00" in reset.stderr and DEMO_NOTE in reset.stderr
    ran = cli("paper", "run")
    assert ran.returncode == 0 and "已记账 6 个交易日" in ran.stderr and DEMO_NOTE in ran.stderr
    again = cli("paper", "run")
    assert "没有新的交易日" in again.stderr and DEMO_NOTE in again.stderr
    shown = cli("paper", "show")
    assert "纸面账户（起始 500,000.00 元" in shown.stderr and DEMO_NOTE in shown.stderr
    nav = cli("paper", "nav")
    assert "● 纸面账户  ○ 沪深300" in nav.stdout and DEMO_NOTE in nav.stderr
    for command in ("show", "nav", "run"):
        payload = json.loads(cli("paper", command, "--json").stdout)
        assert payload["source"] == "demo" and payload["data_note"] == DEMO_NOTE
    report = json.loads(cli("paper", "nav", "--json").stdout)
    assert [d["date"] for d in report["days"]] == days
    assert report["days"][0]["return_pct"] == 0 and report["days"][0]["csi300_pct"] == 0


def test_reset_asks_first_and_bad_input_is_one_sentence_that_changes_nothing(demo_home):
    days = market_days(demo_home, 3)
    assert cli("paper", "reset", "--start", days[0]).returncode == 0
    assert cli("paper", "run").returncode == 0
    before = state(demo_home)
    for args, says in (
        (("reset",), "确认请加 --yes"),
        (("reset", "--yes", "--capital", "12.345"), "最多 2 位小数"),
        (("reset", "--yes", "--capital", "50"), "至少 100 元"),
        (("reset", "--yes", "--start", "2099-01-05"), "晚于行情的最后一天"),
        # found by hand: moved silently to the store's first day, then `paper run` refused it
        (("reset", "--yes", "--start", "2000-01-04"), "开始日期最早可选"),
        (("reset", "--yes", "--start", "2026-13-05"), "日期 2026-13-05 无效"),
    ):
        refused = cli("paper", *args)
        assert refused.returncode == 2 and says in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    assert state(demo_home) == before
    assert cli("paper", "reset", "--yes", "--start", days[-1]).returncode == 0
    assert state(demo_home)["paper_fills"] == []  # the old account's records are gone


def test_a_run_killed_mid_way_keeps_whole_days_and_the_next_run_completes_it(demo_home):
    start = market_days(demo_home, 15)[0]
    assert cli("paper", "reset", "--start", start).returncode == 0
    empty = state(demo_home)
    killed = cli_process("paper", "run", env={"WYCKOFF_CRASH_AT": "paper-day-written"})
    assert killed.returncode == -signal.SIGKILL
    assert state(demo_home) == empty  # killed inside the first day's transaction: nothing kept
    killed = cli_process("paper", "run", env={"WYCKOFF_CRASH_AT": "paper-day"})
    assert killed.returncode == -signal.SIGKILL
    one_day = state(demo_home)
    assert [row[0] for row in one_day["paper_nav"]] == [start]  # the first day, whole
    assert one_day["paper_account"][0][-1] == start
    assert cli("paper", "run").returncode == 0
    resumed = state(demo_home)
    assert cli("paper", "reset", "--yes", "--start", start).returncode == 0
    assert cli("paper", "run").returncode == 0
    uninterrupted = state(demo_home)
    assert resumed["paper_fills"], "a window with trades in it"
    for table in ("paper_account", "paper_positions", "paper_nav"):
        assert resumed[table] == uninterrupted[table]
    fills = [row[1:] for row in uninterrupted["paper_fills"]]  # ids may differ, nothing else
    assert [row[1:] for row in resumed["paper_fills"]] == fills


def test_the_paper_nav_sits_beside_the_real_accounts_nav_over_the_same_days(demo_home):
    days = market_days(demo_home, 6)
    market = MarketStore.for_source(demo_home, "demo")
    close = market.query_df(
        "SELECT close FROM bars WHERE code = '000002' AND strftime(date, '%Y%m%d') = ?", [days[0]]
    )["close"][0]
    assert cli("portfolio", "cash", "100000").returncode == 0
    bought = cli("portfolio", "buy", "000002", "1000", f"{close:.2f}", "--date", days[0])
    assert bought.returncode == 0, bought.stderr
    assert cli("paper", "reset", "--start", days[2]).returncode == 0
    assert cli("paper", "run").returncode == 0
    paper = json.loads(cli("paper", "nav", "--json").stdout)["days"]
    real = {d["date"]: d for d in json.loads(cli("portfolio", "nav", "--json").stdout)["days"]}
    assert [d["date"] for d in paper] == days[2:]
    base = real[days[2]]["unit_value"]  # both measured from the paper account's first day
    for day in paper:
        assert day["real_nav_cents"] == real[day["date"]]["nav_cents"]
        assert day["real_return_pct"] == round(
            (real[day["date"]]["unit_value"] / base - 1) * 100, 2
        )
    assert paper[0]["real_return_pct"] == 0 and any(d["real_return_pct"] for d in paper)
    table = cli("paper", "nav")
    assert "▲ 真实账户" in table.stdout and "真实账户总资产" in table.stdout


def test_two_runs_at_once_book_each_day_once(demo_home):
    days = market_days(demo_home, 8)
    assert cli("paper", "reset", "--start", days[0]).returncode == 0
    runs = [spawn_cli("paper", "run") for _ in range(2)]
    for run in runs:
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr
    booked = state(demo_home)
    assert [row[0] for row in booked["paper_nav"]] == days
    assert cli("paper", "reset", "--yes", "--start", days[0]).returncode == 0
    assert cli("paper", "run").returncode == 0
    alone = state(demo_home)
    assert [r[1:] for r in booked["paper_fills"]] == [r[1:] for r in alone["paper_fills"]]
    assert booked["paper_nav"] == alone["paper_nav"]


def test_show_and_nav_after_data_use_another_source_stay_on_the_accounts_market(
    demo_home, tmp_path
):
    """Found by hand: after `data import` (the source becomes import), `paper show` valued the
    demo account's holdings at the imported closes and `paper nav` asked for the new source's
    data: two markets in one view."""
    days = market_days(demo_home, 60)
    assert cli("paper", "reset", "--start", days[0]).returncode == 0
    assert cli("paper", "run").returncode == 0
    before = json.loads(cli("paper", "show", "--json").stdout)
    nav_before = json.loads(cli("paper", "nav", "--json").stdout)["days"]
    held = before["positions"][0]
    bars = tmp_path / "bars.csv"
    day = f"{days[-1][:4]}-{days[-1][4:6]}-{days[-1][6:]}"
    bars.write_text(
        "code,date,open,high,low,close,pre_close,volume,amount\n"
        f"{held['code']},{day},999,999,999,999,999,100,99900\n"
    )
    assert cli("data", "import", str(bars)).returncode == 0  # the source is now import
    after = json.loads(cli("paper", "show", "--json").stdout)
    assert after["source"] == "demo" and after["positions"] == before["positions"]
    nav = cli("paper", "nav", "--json")
    assert nav.returncode == 0 and json.loads(nav.stdout)["days"] == nav_before
    assert "这里不对比" in json.loads(nav.stdout)["note"]  # the real account is on import
    refused = cli("paper", "run")  # booking still asks to switch back
    assert refused.returncode == 2 and "纸面账户跟的是 demo 行情" in refused.stderr
    # the brief's and the web page's paper sections follow the account's market too
    from wyckoff.routine.brief_account import paper as brief_paper
    from wyckoff.store import Store
    from wyckoff.web.desk import _paper as web_paper

    chosen = MarketStore.for_source(demo_home, "import")
    store = Store(demo_home / "wyckoff.db")
    page = web_paper(store, chosen)
    assert page is not None and page["book"]["positions"] == before["positions"]
    assert page["nav"]["days"] == nav_before and page["data_note"] == DEMO_NOTE
    section = brief_paper(store, chosen)
    assert section is not None and section["nav_cents"] == before["nav_cents"]
