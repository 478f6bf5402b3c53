"""The scorecard: advice recorded as given, its outcome filled in as the days arrive (worked
out by hand below on a hand-built market), unfillable entries with their reason, sell advice
scored as the loss avoided, the user's fills matched, screen items recorded once, the agent's
advice through its tool."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.cli_runner import cli
from tests.conftest import add_scripted_model, marked_data, spawn_cli
from tests.model_servers import Reply
from wyckoff.engine.market_store import MarketStore

START = "2025-03-03"  # a Monday; the market trades on the 25 weekdays from it
DAYS = np.busday_offset(START, np.arange(25), roll="forward").astype("datetime64[D]")
ADVICE_DAY = 4  # the advice is given as of day 4; entry at the open of day 5

# A: a buy that rises, then falls below where it was bought. Open = the close before, except
# where set; highs and lows span open and close, except the two set below.
A_CLOSE = [10.0] * 5 + [10.5, 10.6, 10.8, 10.9, 11.0]
A_CLOSE += [11.2, 11.5, 11.4, 11.0, 10.6, 10.2, 10.0, 9.8, 9.6, 9.5, 9.4, 9.3, 9.2, 9.1, 9.0]
A_HIGH = {12: 12.0}  # the best moment: +20% over the entry at 10.00
A_LOW = {20: 8.6}  # the worst: -14%
# B: advised to sell, and it falls: -5% the first day, -10% in 5, -15% in 20
B_CLOSE = [20.0] * 5 + [19.0, 18.8, 18.6, 18.4, 18.0] + [18.0] * 14 + [17.0]
# C: opens at its up limit (10.00 -> 11.00) the day after the advice: a buy cannot be filled
C_CLOSE = [10.0] * 5 + [11.0] * 20
# CSI 300: +1% the first day, +5% in 5, -5% in 20 (from the close of the advice day)
CSI300 = [4000.0] * 5 + [4040.0, 4100, 4100, 4100, 4200] + [4100.0] * 14 + [3800.0]


def bars(code: str, close: list[float], high=None, low=None, open_=None) -> pd.DataFrame:
    opens = [close[0], *close[:-1]]
    for day, value in (open_ or {}).items():
        opens[day] = value
    highs = [max(o, c) for o, c in zip(opens, close, strict=True)]
    lows = [min(o, c) for o, c in zip(opens, close, strict=True)]
    for day, value in (high or {}).items():
        highs[day] = value
    for day, value in (low or {}).items():
        lows[day] = value
    return pd.DataFrame(
        {
            "code": code,
            "date": DAYS,
            "open": opens,
            "high": highs,
            "low": lows,
            "close": close,
            "volume": 1e6,
            "amount": np.array(close) * 1e6,
            "adj_factor": 1.0,
        }
    )


def market_until(home, last_day: int) -> None:
    """The hand-built market with its bars up to `last_day` (a sync bringing new days)."""
    every = pd.concat(
        [
            bars("600000", A_CLOSE, A_HIGH, A_LOW),
            bars("600004", B_CLOSE),
            bars("600009", C_CLOSE, open_={5: 11.0}),
        ]
    )
    store = MarketStore.for_source(home, "tushare")
    store.upsert("bars", every[every["date"] <= DAYS[last_day]])
    index = pd.DataFrame({"code": "000300.SH", "date": DAYS, "volume": 1.0, "amount": 1.0})
    index = index.assign(**dict.fromkeys(("open", "high", "low", "close"), CSI300))
    store.upsert("index_bars", index[index["date"] <= DAYS[last_day]])
    stocks = pd.DataFrame(
        {
            "code": ["600000", "600004", "600009"],
            "name": ["浦发银行", "白云机场", "上海机场"],
            "industry": "银行",
            "board": "main",
            "list_date": "20100104",
            "is_st": False,
            "market_cap": 1e10,
        }
    )
    store.upsert("stocks", stocks)


def after_close(day: int) -> dict[str, str]:
    return {"WYCKOFF_NOW": f"{DAYS[day]}T16:00:00+08:00"}


def card(env: dict[str, str], *args: str) -> dict:
    result = cli("scorecard", "--json", *args, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def hand_built(home):
    assert cli("data", "use", "tushare", "--token", "tok-0123456789").returncode == 0
    market_until(home, ADVICE_DAY)
    for code, advice in (("600000", "buy"), ("600004", "sell"), ("600009", "buy")):
        added = cli("scorecard", "add", code, "--advice", advice, env=after_close(ADVICE_DAY))
        assert added.returncode == 0, added.stderr
    return home


def by_code(result: dict) -> dict[str, dict]:
    return {item["code"]: item for item in result["items"]}


def test_outcomes_are_null_until_their_days_come_then_as_worked_out_by_hand(hand_built):
    env = after_close(ADVICE_DAY)
    items = by_code(card(env))
    a = items["600000"]
    assert (a["kind"], a["as_of"], a["advice"], a["price"]) == ("manual", str(DAYS[4]), "buy", 10.0)
    assert a["entry_date"] is None and a["entry_price"] is None
    assert all(a["outcomes"][h]["return"] is None for h in ("1", "5", "20"))

    market_until(hand_built, 9)  # day 9 is t+5
    during = {"WYCKOFF_NOW": f"{DAYS[9]}T10:00:00+08:00"}  # day 9's bar is not final yet
    a = by_code(card(during))["600000"]
    assert a["outcomes"]["1"]["return"] == pytest.approx(0.05)
    assert a["outcomes"]["5"]["return"] is None

    items = by_code(card(after_close(9)))
    a, b = items["600000"], items["600004"]
    assert (a["entry_date"], a["entry_price"]) == (str(DAYS[5]), 10.0)
    # market: A +5%, B -5%, C 0% (11.00 -> 11.00) over day 5: mean 0; CSI 300 +1%
    one = a["outcomes"]["1"]
    assert one["excess_vs_market"] == pytest.approx(0.05)
    assert one["excess_vs_csi300"] == pytest.approx(0.04)
    five = a["outcomes"]["5"]
    assert (five["return"], five["excess_vs_csi300"]) == (pytest.approx(0.10), pytest.approx(0.05))
    assert a["outcomes"]["20"]["return"] is None and a["mfe"] is None
    # selling B avoided its 5% fall: the score is the loss avoided
    assert b["outcomes"]["1"]["return"] == pytest.approx(-0.05)
    assert b["outcomes"]["1"]["score"] == pytest.approx(0.05)

    market_until(hand_built, 24)  # day 24 is t+20
    result = card(after_close(24))
    a, b = by_code(result)["600000"], by_code(result)["600004"]
    # over 20 days: A -10%, B -15%, C 0%: the market -8.33%, the CSI 300 -5%
    twenty = a["outcomes"]["20"]
    assert twenty["return"] == pytest.approx(-0.10)
    assert twenty["excess_vs_market"] == pytest.approx(-0.10 + 0.25 / 3)
    assert twenty["excess_vs_csi300"] == pytest.approx(-0.05)
    assert twenty["exit_date"] == str(DAYS[24])
    assert (a["mfe"], a["mae"]) == (pytest.approx(0.20), pytest.approx(-0.14))
    assert b["outcomes"]["20"]["score"] == pytest.approx(0.15 - 0.25 / 3)
    manual = result["summary"]["manual"]
    assert (manual["count"], manual["unfillable"], manual["scored"]) == (3, 1, 2)
    assert manual["mean_excess"] == pytest.approx(((-0.10 + 0.25 / 3) + (0.15 - 0.25 / 3)) / 2)
    assert manual["hit_rate"] == 0.5
    assert result["demo_summary"] == {}


def test_a_limit_up_open_leaves_a_buy_unfilled_with_the_reason(hand_built):
    market_until(hand_built, 24)
    c = by_code(card(after_close(24)))["600009"]
    assert c["entry_date"] == str(DAYS[5]) and c["entry_price"] is None
    assert c["unfillable"] == f"{DAYS[5]} 涨停开盘，买不进"
    assert all(c["outcomes"][h]["return"] is None for h in ("1", "5", "20"))
    text = cli("scorecard", env=after_close(24)).stdout
    assert "涨停开盘，买不进" in text and "无法成交 1 条" in text


def test_the_users_fills_are_matched_to_the_advice_before_them(hand_built):
    market_until(hand_built, 24)
    env = after_close(24)
    day5 = str(DAYS[5]).replace("-", "")
    assert cli("portfolio", "cash", "100000", "--date", "20250303", env=env).returncode == 0
    for code, price in (("600000", "10.20"), ("600004", "19.50")):
        bought = cli("portfolio", "buy", code, "100", price, "--date", day5, env=env)
        assert bought.returncode == 0, bought.stderr
    result = card(env)
    items = by_code(result)
    assert items["600000"]["response"] == "followed"  # advised to buy, bought
    assert items["600004"]["response"] == "against"  # advised to sell, bought
    assert items["600009"]["response"] == "ignored"  # no fill in the week after
    assert items["600000"]["response_fill"]["trade_date"] == str(DAYS[5])
    assert result["summary"]["manual"]["responses"] == {"followed": 1, "ignored": 1, "against": 1}


def test_two_processes_filling_outcomes_at_once_write_each_row_once(hand_built):
    market_until(hand_built, 24)
    both = [spawn_cli("scorecard", "--json", env=after_close(24)) for _ in range(2)]
    outputs = [process.communicate(timeout=120) for process in both]
    assert [process.returncode for process in both] == [0, 0], [err for _, err in outputs]
    first, second = (json.loads(out) for out, _ in outputs)
    assert first["items"] == second["items"]
    with sqlite3.connect(hand_built / "wyckoff.db") as db:
        rows = db.execute("SELECT item_id, horizon FROM scorecard_outcomes").fetchall()
        (entries,) = db.execute("SELECT COUNT(*) FROM scorecard_entries").fetchone()
    assert len(rows) == len(set(rows)) == 2 * 3 and entries == 3  # A and B scored; C unfilled


def test_a_sync_holding_the_market_store_leaves_the_outcomes_for_the_next_look(hand_built):
    market_until(hand_built, 9)
    hold = "import sys, time, duckdb\nc = duckdb.connect(sys.argv[1])\nprint('holding', flush=True)\ntime.sleep(60)"
    path = MarketStore.for_source(hand_built, "tushare").path
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        held = card(after_close(9))
        assert holder.poll() is None  # answered while the store was still held
    finally:
        holder.kill()
        holder.wait()
    assert by_code(held)["600000"]["outcomes"]["1"]["return"] is None
    assert by_code(card(after_close(9)))["600000"]["outcomes"]["1"]["return"] == pytest.approx(0.05)


def test_an_item_is_recorded_once_and_never_edited_and_the_json_has_the_documented_shape(
    hand_built,
):
    again = cli(
        "scorecard", "add", "600000", "--advice", "buy", "--note", "改主意", env=after_close(4)
    )
    assert again.returncode == 0 and "未重复记录" in again.stderr
    result = card(after_close(ADVICE_DAY))
    assert result["items"][0]["note"] == ""  # as first recorded
    assert [i["code"] for i in result["items"]] == ["600000", "600004", "600009"]
    item = result["items"][0]
    for key in ("id", "kind", "code", "as_of", "advice", "entry_date", "entry_price", "outcomes"):
        assert key in item
    assert set(item["outcomes"]) == {"1", "5", "20"}
    assert set(item["outcomes"]["1"]) >= {"return", "excess_vs_market", "excess_vs_csi300"}
    summary = result["summary"]["manual"]
    assert {"count", "scored", "mean_excess", "hit_rate"} <= set(summary)
    assert card(after_close(ADVICE_DAY), "--kind", "screen")["items"] == []
    assert card(after_close(ADVICE_DAY), "--since", str(DAYS[5]))["items"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("scorecard", "--kind", "tips"), "--kind 只能是"),
        (("scorecard", "--since", "yesterday"), "不是日期"),
        (("scorecard", "add", "600000", "--advice", "hold"), "--advice 只能是"),
    ],
)
def test_bad_input_is_one_chinese_sentence_and_exit_2(hand_built, args, message):
    result = cli(*args)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_screen_on_the_demo_store_records_its_candidates_once_labelled_demo(demo_home):
    first = json.loads(cli("screen", "--json").stdout)
    second = json.loads(cli("screen", "--json").stdout)
    shown = [c["code"] for c in first["top_candidates"]]
    assert shown and shown == [c["code"] for c in second["top_candidates"]]
    result = card({}, "--kind", "screen")
    assert sorted(i["code"] for i in result["items"]) == sorted(shown)
    assert all(i["demo"] and i["as_of"] == first["as_of"] for i in result["items"])
    assert result["summary"] == {} and result["demo_summary"]["screen"]["count"] == len(shown)
    assert "演示行情（合成数据，不计入上面的汇总）" in cli("scorecard").stdout


def test_the_agents_recommendation_is_recorded_through_its_tool(home, openai_server, install_demo):
    install_demo(home, 300)
    cli("data", "use", "demo")
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(
            tool_calls=[
                (
                    "record_advice",
                    {"code": "000001", "advice": "avoid", "reason": "放量滞涨"},
                )
            ]
        ),
        Reply(text="建议回避平安银行（演示数据）。"),
    )
    result = cli("ask", "平安银行能买吗", "-o", "json")
    assert result.returncode == 0, result.stderr
    tools = {t["function"]["name"]: t for t in openai_server.bodies[0]["tools"]}
    assert "每当你在回答中建议买入、卖出或回避" in tools["record_advice"]["function"]["description"]
    told = json.loads(
        marked_data(openai_server.bodies[1]["messages"][-1]["content"], "record_advice")
    )
    assert told["recorded"] is True and told["data_note"]
    (item,) = card({}, "--kind", "agent")["items"]
    assert (item["code"], item["advice"], item["note"], item["demo"]) == (
        "000001",
        "avoid",
        "放量滞涨",
        True,
    )


def test_the_brief_has_the_scorecard_and_the_results_that_came_in_that_day(hand_built):
    market_until(hand_built, 24)
    result = cli("brief", "--format", "json", env=after_close(24))
    assert result.returncode == 0, result.stderr
    card = json.loads(result.stdout)["scorecard"]
    assert card["demo"] is False
    assert card["lines"] == [
        "我的判断：3 条，20 日已计 2 条，平均超额 +2.50%，胜率 50.00%；无法成交 1 条；"
        "照做 0、未理会 3、反向 0"
    ]
    assert card["arrived"] == [
        f"600004 白云机场 我的判断卖出（{DAYS[4]}）20 日超额 +6.67%",
        f"600000 浦发银行 我的判断买入（{DAYS[4]}）20 日超额 -1.67%",
    ]
    markdown = cli("brief", "--format", "md", env=after_close(24)).stdout
    assert "## 计分卡\n- 我的判断：3 条" in markdown
