"""The trade ledger through the CLI and the agent's tool: fills with A-share fees to the
cent, lot sizes, T+1, over-selling, and undo restoring every amount exactly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.integration.test_integrity import state_db_at_version
from wyckoff.engine.clock import NOW_ENV


def book() -> dict:
    return json.loads(cli("portfolio", "list", "--json").stdout)


def done(*args: str) -> str:
    """Run a command that must succeed; what it said."""
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def refused(*args: str) -> str:
    """Run a command that must be refused: exit 2, one sentence, no traceback; its message."""
    result = cli(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    return line


def test_the_issue_fee_example_to_the_cent(home):
    cli("portfolio", "cash", "100000")
    bought = done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    assert "佣金 5.00，过户费 0.10（费用合计 5.10）" in bought
    assert "现金 100,000.00 → 89,994.90" in bought
    assert book()["cash"] == 89994.90
    sold = done(
        "portfolio", "sell", "茅台", "500", "11.00", "--date", "20260106", "--time", "10:31"
    )
    assert "佣金 5.00，印花税 2.75，过户费 0.06（费用合计 7.81）" in sold
    assert "现金 89,994.90 → 95,487.09" in sold  # +5,492.19
    assert "已实现盈亏 489.64" in sold
    (held,) = book()["positions"]
    assert (held["shares"], held["cost_cents"]) == (500, 500255)


def test_a_fills_date_reads_year_month_day_wherever_it_is_shown(home):
    cli("portfolio", "cash", "100000")
    bought = done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    assert "已买入：600519 贵州茅台 1000 股 @ 10.00（2026-01-05）" in bought
    done("portfolio", "sell", "600519", "500", "11.00", "--date", "2026-01-06")
    history = done("portfolio", "history")
    assert "卖出 500 股 @ 11.00（2026-01-06）" in history
    assert "买入 1000 股 @ 10.00（2026-01-05）" in history
    early = refused("portfolio", "buy", "600519", "100", "10.00", "--date", "20260102")
    assert "已记录了 2026-01-06 的成交或除权，不能再记更早的 2026-01-02" in early


def test_stamp_duty_and_transfer_fee_follow_the_fill_date(home):
    cli("portfolio", "cash", "1000000")
    done("portfolio", "buy", "000001", "10000", "10", "--date", "20220105")
    before_cut = done("portfolio", "sell", "000001", "5000", "10", "--date", "20230825")
    assert "印花税 50.00，过户费 0.50" in before_cut  # 0.1% before 2023-08-28
    after_cut = done("portfolio", "sell", "000001", "5000", "10", "--date", "20230828")
    assert "印花税 25.00，过户费 0.50" in after_cut  # 0.05% from 2023-08-28
    old_transfer = done("portfolio", "buy", "600519", "10000", "10", "--date", "20220428")
    assert "过户费 2.00" in old_transfer  # 0.002% before 2022-04-29


def test_the_broker_commission_comes_from_wyckoff_json_and_is_validated(home):
    config = {
        "ledger": {
            "broker": "低佣",
            "brokers": {"低佣": {"commission_rate": 0.0001, "min_commission": 0}},
        }
    }
    home.mkdir(parents=True, exist_ok=True)
    (home / "wyckoff.json").write_text(json.dumps(config, ensure_ascii=False))
    cli("portfolio", "cash", "100000")
    bought = done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    assert "佣金 1.00，过户费 0.10" in bought
    config["ledger"]["commission_rate"] = 0.01
    (home / "wyckoff.json").write_text(json.dumps(config, ensure_ascii=False))
    message = refused("portfolio", "buy", "600519", "100", "10", "--date", "20260105")
    assert "wyckoff.json" in message and "commission_rate" in message
    assert book()["positions"][0]["shares"] == 1000


def test_t_plus_1_and_over_selling_are_refused_and_change_nothing(home):
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "10", "--date", "20260105")
    done("portfolio", "buy", "600519", "500", "10", "--date", "20260106")
    before = book()
    message = refused("portfolio", "sell", "600519", "1100", "11", "--date", "20260106")
    assert "T+1" in message and "最多可卖 1000 股" in message
    message = refused("portfolio", "sell", "600519", "1600", "11", "--date", "20260107")
    assert "超过持有的 1500 股" in message
    assert "持仓里没有" in refused("portfolio", "sell", "000001", "100", "11", "--date", "20260107")
    assert "现金不足" in refused("portfolio", "buy", "000001", "100000", "10", "--date", "20260107")
    assert "周末" in refused("portfolio", "buy", "000001", "100", "10", "--date", "20260103")
    assert "按时间顺序" in refused("portfolio", "sell", "600519", "100", "11", "--date", "20260102")
    assert book() == before
    assert cli("portfolio", "sell", "600519", "1000", "11", "--date", "20260106").returncode == 0


@pytest.mark.parametrize(
    ("code", "bad", "good", "message"),
    [("600519", "150", "200", "100 的正整数倍"), ("688001", "100", "201", "至少 200 股")],
)
def test_lot_sizes_of_the_main_board_and_the_star_market(home, code, bad, good, message):
    cli("portfolio", "cash", "100000")
    assert message in refused("portfolio", "buy", code, bad, "10", "--date", "20260105")
    assert cli("portfolio", "buy", code, good, "10", "--date", "20260105").returncode == 0


def test_an_odd_lot_is_sold_only_when_it_closes_the_position(home):
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "688001", "201", "10", "--date", "20260105")
    assert "一次卖完" in refused("portfolio", "sell", "688001", "101", "11", "--date", "20260106")
    assert cli("portfolio", "sell", "688001", "201", "11", "--date", "20260106").returncode == 0
    assert book()["positions"] == []


def test_undo_restores_the_book_exactly_after_each_action(home):
    states = [book()]
    for args in (
        ["cash", "100000"],
        ["add", "000001", "--shares", "300", "--cost", "9.87", "--buy-dt", "20260102"],
        ["buy", "000001", "200", "10.13", "--date", "20260105"],
        ["buy", "688001", "233", "31.415", "--date", "20260105"],
        ["sell", "000001", "100", "10.5", "--date", "20260106"],
        ["sell", "688001", "233", "30.01", "--date", "20260107"],
        ["sell", "平安银行", "400", "10.77", "--date", "20260108"],
    ):
        assert cli("portfolio", *args).returncode == 0
        states.append(book())
    assert states[-1]["positions"] == []
    while len(states) > 1:
        states.pop()
        assert cli("portfolio", "undo").returncode == 0
        assert book() == states[-1]
    assert "没有可撤销" in refused("portfolio", "undo")


def test_a_state_db_of_position_commands_keeps_its_positions_and_cash(home):
    old = state_db_at_version(home, 8)  # before the ledger
    old.execute(
        "INSERT INTO positions VALUES ('600519', '贵州茅台', 200, 1533.333, '20260105', NULL)"
    )
    old.execute("INSERT INTO portfolio_cash VALUES (1, 12345.67)")
    old.close()
    assert book() == {
        "positions": [
            {
                "code": "600519",
                "name": "贵州茅台",
                "shares": 200,
                "cost_price": 1533.333,
                "buy_dt": "20260105",
                "stop_loss": None,
                "cost_cents": 30666660,
                "booked_dt": None,
            }
        ],
        "cash": 12345.67,
    }
    sold = done("portfolio", "sell", "600519", "200", "1600", "--date", "20260106")
    assert "已实现盈亏 13,090.20" in sold  # 320,000.00 - 243.20 fees - 306,666.60 basis


def test_the_agent_records_a_fill_after_an_approval_that_names_its_fees(home, openai_server):
    from tests.conftest import add_scripted_model
    from tests.model_servers import Reply
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.store import Store

    add_scripted_model(openai_server)
    cli("portfolio", "cash", "100000")
    args = {
        "action": "buy",
        "code": "茅台",
        "shares": 1000,
        "price": 10.0,
        "trade_date": "20260105",
    }
    context = ToolContext(home=home, registry=default_registry(), store=Store.in_home(home))
    assert context.registry.describe("update_portfolio", args, context) == (
        "买入 600519 贵州茅台 1000 股 @ 10.00（2026-01-05）：成交金额 10,000.00，"
        "佣金 5.00，过户费 0.10（费用合计 5.10）；共付 10,005.10 元，现金 100,000.00 → 89,994.90"
    )
    too_big = context.registry.describe("update_portfolio", {**args, "shares": 100_000}, context)
    assert "现金不足" in too_big and "→ -" not in too_big  # said 现金 100,000.00 → -900,…
    odd = {**args, "shares": 150}
    assert context.registry.describe("update_portfolio", odd, context) == (
        "买入 茅台 150 股 @ 10.0（2026-01-05）：买入股数必须是 100 的正整数倍（A 股一手 100 股），收到 150。"
    )
    openai_server.script(Reply(tool_calls=[("update_portfolio", args)]), Reply(text="已记录。"))
    assert "--approve update_portfolio" in cli("ask", "记录买入茅台").stderr
    assert book()["positions"] == []
    openai_server.script(Reply(tool_calls=[("update_portfolio", args)]), Reply(text="已记录。"))
    assert cli("ask", "记录买入茅台", "--approve", "update_portfolio").returncode == 0
    assert book()["cash"] == 89994.90
    (entry, *_) = json.loads(cli("portfolio", "history", "--json").stdout)["history"]
    assert (entry["actor"], entry["action"]) == ("agent", "buy")
    t1 = {**args, "action": "sell"}
    openai_server.script(Reply(tool_calls=[("update_portfolio", t1)]), Reply(text="卖不了。"))
    cli("ask", "卖掉茅台", "--approve", "update_portfolio")
    assert book()["cash"] == 89994.90  # T+1: the tool refused the same-day sell


def test_a_fill_that_would_fail_is_refused_before_anyone_is_asked_to_approve_it(
    home, openai_server
):
    """The user is not asked to approve a buy the cash cannot pay (approving it used to end
    in the same refusal); the model is told why at once and nothing changes."""
    from tests.conftest import add_scripted_model
    from tests.model_servers import Reply

    add_scripted_model(openai_server)
    cli("portfolio", "cash", "1000")
    args = {"action": "buy", "code": "茅台", "shares": 1000, "price": 10.0}
    openai_server.script(
        Reply(tool_calls=[("update_portfolio", {**args, "trade_date": "20260105"})]),
        Reply(text="现金不够，没有买。"),
    )
    result = cli("ask", "买入茅台", "-o", "stream-json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    (error,) = [e["error"] for e in events if e["type"] == "tool_error"]
    assert error.startswith("现金不足：买入 600519 需 10,005.10 元（含费用），现金只有 1,000.00 元")
    assert "批准" not in result.stdout + result.stderr
    assert "现金不足" in openai_server.bodies[1]["messages"][-1]["content"]
    assert book()["cash"] == 1000 and book()["positions"] == []


# --- a small imported market: known closes, ex-dates and the CSI 300 -------------------------

DAYS = ["2026-01-05", "2026-01-06", "2026-01-07", "2026-01-08", "2026-01-09"]


def import_market(home, tmp_path, closes: dict[str, list[float]], pre_closes=None, csi300=None):
    """`wyckoff data import` of daily bars with these closes, each day trading 10% either
    side of its close (and reference prior closes, the previous close by default), and of
    the CSI 300 when given."""
    lines = ["code,date,open,high,low,close,pre_close,volume,amount"]
    for code, series in closes.items():
        for t, (day, close) in enumerate(zip(DAYS, series, strict=True)):
            pre = (pre_closes or {}).get((code, day)) or (series[t - 1] if t else close)
            high, low = round(close * 1.1, 2), round(close * 0.9, 2)
            bar = f"{close},{high},{low},{close},{pre}"
            lines.append(f"{code},{day},{bar},100000,{close * 1e5}")
    (tmp_path / "bars.csv").write_text("\n".join(lines))
    done("data", "import", str(tmp_path / "bars.csv"))
    if csi300:
        rows = [
            f"000300.SH,{d},{c},{c},{c},{c},1e9,1e12" for d, c in zip(DAYS, csi300, strict=True)
        ]
        (tmp_path / "index.csv").write_text(
            "\n".join(["code,date,open,high,low,close,volume,amount", *rows])
        )
        done("data", "import", str(tmp_path / "index.csv"), "--index")


def test_show_reports_realized_and_unrealized_profit_per_position_and_in_total(home, tmp_path):
    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 12], "000001": [5, 5, 5, 5, 5]})
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    done("portfolio", "sell", "600519", "500", "11.00", "--date", "20260106")
    done("portfolio", "buy", "000001", "1000", "5", "--date", "20260105")
    done("portfolio", "sell", "000001", "1000", "5.5", "--date", "20260107")
    report = json.loads(cli("portfolio", "show", "--json").stdout)
    (moutai,) = report["positions"]
    assert (moutai["close"], moutai["close_date"]) == (12.0, "20260109")
    assert (moutai["unrealized_cents"], moutai["realized_cents"]) == (600000 - 500255, 48964)
    assert report["closed"] == [
        {"code": "000001", "name": "平安银行", "shares": 0, "realized_cents": 48714}
    ]
    assert report["realized_cents"] == 48964 + 48714
    assert report["equity_cents"] == report["cash_cents"] + 600000
    shown = done("portfolio", "show")
    assert "浮动盈亏 997.45" in shown and "已实现盈亏 976.78" in shown and "已清仓" in shown


def test_nav_values_each_day_at_its_close_beside_the_csi_300(home, tmp_path):
    csi300 = [4000, 4040, 3960, 4000, 4080]
    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 12]}, csi300=csi300)
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    done("portfolio", "sell", "600519", "500", "11.00", "--date", "20260106")
    report = json.loads(cli("portfolio", "nav", "--json").stdout)
    assert [(d["date"], d["nav_cents"]) for d in report["days"]] == [
        ("20260105", 8999490 + 1000000),
        ("20260106", 9548709 + 550000),
        ("20260107", 9548709 + 600000),
        ("20260108", 9548709 + 600000),
        ("20260109", 9548709 + 600000),
    ]
    assert [d["csi300_pct"] for d in report["days"]] == [0.0, 1.0, -1.0, 0.0, 2.0]
    assert report["note"] is None
    chart = done("portfolio", "nav", "--chart")
    top, *_, legend = chart.strip("\n").splitlines()
    assert top.strip().startswith("+2.00% ┤") and legend.strip() == "● 账户  ○ 沪深300"


def test_nav_says_so_when_the_store_has_no_csi_300(home, tmp_path):
    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 12]})
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    shown = done("portfolio", "nav")
    assert "2026-01-09" in shown and "沪深300（000300.SH）" in shown and "无法对比" in shown


# --- corporate actions --------------------------------------------------------------------------


def test_a_10_for_10_bonus_doubles_the_shares_and_keeps_the_value(home, tmp_path):
    # 2026-01-07 is the ex-date: the exchange's reference prior close is half the last close
    import_market(
        home, tmp_path, {"600519": [20, 20, 10, 10, 10]}, pre_closes={("600519", DAYS[2]): 10}
    )
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "20", "--date", "20260105")
    cost = book()["positions"][0]["cost_cents"]
    shown = done("portfolio", "show")
    assert "除权除息 20260107：600519 贵州茅台 1000 股，送转 1000 股" in shown
    (held,) = book()["positions"]
    assert (held["shares"], held["cost_cents"]) == (2000, cost)
    nav = json.loads(cli("portfolio", "nav", "--json").stdout)["days"]
    assert nav[1]["nav_cents"] == nav[2]["nav_cents"]  # 1000 x 20.00 = 2000 x 10.00
    assert "已撤销最近一次分红送转" in done("portfolio", "undo")
    assert book()["positions"][0]["shares"] == 1000


def test_a_cash_dividend_is_credited_and_taxed_by_holding_period_when_sold(home, tmp_path):
    # 10派5 on 2026-01-07: pre_close 10.00 - 0.50
    import_market(
        home, tmp_path, {"000001": [10, 10, 9.5, 9.5, 9.5]}, pre_closes={("000001", DAYS[2]): 9.5}
    )
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "000001", "1000", "10", "--date", "20260105")
    cash = book()["cash"]
    assert "现金分红 500.00 元" in done("portfolio", "show")
    assert book()["cash"] == cash + 500
    # held 4 days (up to 1 month): 20% of the 500.00 dividend, withheld on the sale
    sold = done("portfolio", "sell", "000001", "1000", "9.5", "--date", "20260109")
    assert "红利税 100.00" in sold
    fees = 5_00 + 4_75 + 10  # commission (minimum), stamp duty 0.05%, transfer fee 0.001%
    assert round(book()["cash"] * 100) == round(cash * 100) + 500_00 + 950_000 - fees - 100_00


# --- broker exports ------------------------------------------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "data"
HOLDINGS = [("000001", 1000, 1050000), ("600519", 200, 30002460), ("688001", 250, 756250)]


def held() -> list[tuple]:
    return [(p["code"], p["shares"], p["cost_cents"]) for p in book()["positions"]]


def state(home) -> list[tuple]:
    """Every row of the portfolio tables."""
    conn = sqlite3.connect(home / "wyckoff.db")
    tables = ("positions", "portfolio_cash", "portfolio_history", "fills", "corporate_actions")
    return [row for table in tables for row in conn.execute(f"SELECT * FROM {table}")]


@pytest.mark.parametrize(
    ("file", "broker"),
    [
        ("ths_holdings.xls", "同花顺"),  # GBK text, tab-separated, ="000001" cells
        ("eastmoney_holdings.csv", "东方财富"),  # UTF-8 with a BOM, quoted 1,000
        ("tdx_holdings.txt", "通达信"),  # GBK, title lines, columns aligned by spaces
    ],
)
def test_each_brokers_holdings_export_imports_to_the_same_positions(home, file, broker):
    shown = done("portfolio", "import", str(DATA / file))
    assert f"{file}：{broker}持仓。" in shown and "000001 平安银行：（无） → 1000 股" in shown
    assert held() == HOLDINGS


def test_a_sold_out_row_with_zero_shares_means_not_held_and_a_negative_one_is_refused(
    home, tmp_path
):
    """同花顺 lists a position sold today with 股票余额 0 until settlement."""
    done("portfolio", "add", "000001", "--shares", "500", "--cost", "10")
    text = (DATA / "ths_holdings.xls").read_text(encoding="gbk")
    (tmp_path / "sold.xls").write_text(text.replace("\t1000\t1000\t", "\t0\t0\t"), "gbk")
    shown = done("portfolio", "import", str(tmp_path / "sold.xls"))
    assert "000001 平安银行：500 股，成本 10.000 → （无）" in shown
    assert "第 3 行 000001：股票余额 0（已清仓）" in shown
    assert held() == HOLDINGS[1:]
    (tmp_path / "minus.xls").write_text(text.replace("\t1000\t1000\t", "\t-1000\t0\t"), "gbk")
    message = refused("portfolio", "import", str(tmp_path / "minus.xls"))
    assert "第 3 行" in message and "股票余额 -1000 不是正整数股" in message
    assert held() == HOLDINGS[1:]


def test_a_dry_run_previews_and_leaves_the_database_unchanged(home):
    done("portfolio", "add", "600519", "--shares", "100", "--cost", "1400", "--stop-loss", "1300")
    done("portfolio", "add", "300750", "--shares", "100", "--cost", "200")
    unchanged = state(home)
    shown = done("portfolio", "import", str(DATA / "tdx_holdings.txt"), "--dry-run")
    assert "600519 贵州茅台：100 股，成本 1400.000 → 200 股，成本 1500.123" in shown
    assert "300750 宁德时代：100 股，成本 200.000 → （无）" in shown and "没有写入" in shown
    assert state(home) == unchanged


def test_undo_restores_the_book_exactly_after_an_import(home):
    done("portfolio", "add", "600519", "--shares", "100", "--cost", "1400", "--stop-loss", "1300")
    done("portfolio", "cash", "12345.67")
    before = book()
    done("portfolio", "import", str(DATA / "ths_holdings.xls"))
    imported = {p["code"]: p for p in book()["positions"]}
    assert imported["600519"]["stop_loss"] == 1300  # a held stock keeps its stop
    done("portfolio", "undo")
    assert book() == before


@pytest.mark.parametrize("file", ["eastmoney_deliveries.csv", "tdx_deliveries.txt"])
def test_a_deliveries_export_records_fills_with_the_brokers_fees(home, file):
    cli("portfolio", "cash", "500000")
    shown = done("portfolio", "import", str(DATA / file))
    assert "3 笔成交" in shown and "第 5 行 红利入账：不是买卖，未导入" in shown
    # the broker's 发生金额: -450,117.00 - 10,505.11 + 150,885.24
    assert book()["cash"] == 190263.13
    # 600519: 300 bought for 450,117.00, 100 sold: 200 keep two thirds of the basis
    assert held() == [("000001", 1000, 1050511), ("600519", 200, 30007800)]
    report = json.loads(cli("portfolio", "show", "--json").stdout)
    assert report["realized_cents"] == 15088524 - 15003900


def test_a_same_day_sell_in_a_deliveries_export_is_refused_by_its_line(home, tmp_path):
    cli("portfolio", "cash", "500000")
    lines = (DATA / "eastmoney_deliveries.csv").read_text(encoding="utf-8-sig").splitlines()
    lines[3] = lines[3].replace("2026-01-06", "2026-01-05")
    (tmp_path / "same_day.csv").write_text("\n".join(lines), encoding="utf-8")
    unchanged = state(home)
    message = refused("portfolio", "import", str(tmp_path / "same_day.csv"))
    assert "第 4 行" in message and "T+1" in message and "没有导入任何内容" in message
    assert state(home) == unchanged
    lines[3] = lines[3].replace("2026-01-05", "2026-01-10")  # a Saturday
    (tmp_path / "saturday.csv").write_text("\n".join(lines), encoding="utf-8")
    message = refused("portfolio", "import", str(tmp_path / "saturday.csv"))
    assert "第 4 行" in message and "20260110 是周末" in message
    assert state(home) == unchanged


def test_a_bad_export_is_refused_in_one_sentence_and_changes_nothing(home, tmp_path):
    done("portfolio", "cash", "100")
    unchanged = state(home)
    biff = tmp_path / "real.xls"
    biff.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500))
    assert "Excel 二进制表格" in refused("portfolio", "import", str(biff))
    # not enough cash for the first buy: the line is named and nothing is written
    message = refused("portfolio", "import", str(DATA / "eastmoney_deliveries.csv"))
    assert "eastmoney_deliveries.csv 第 2 行" in message and "现金不足" in message
    assert "不认识券商" in refused("portfolio", "import", str(biff), "--broker", "xx")
    missing = refused("portfolio", "import", str(tmp_path / "没有.csv"))
    assert missing == f"错误：找不到文件 {tmp_path / '没有.csv'}：请检查路径和文件名。"
    assert "是一个文件夹" in refused("portfolio", "import", str(tmp_path))
    assert state(home) == unchanged


def test_a_fill_without_a_date_is_dated_the_latest_session_that_has_started(home, tmp_path):
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.store import Store

    import_market(home, tmp_path, {"600519": [10, 10, 10, 10, 10]})
    cli("portfolio", "cash", "100000")
    # Thursday 06:00, before the open: Wednesday's session (was: dated Thursday)
    early = cli("portfolio", "buy", "600519", "100", "10", env={NOW_ENV: "2026-01-08T06:00"})
    assert early.returncode == 0, early.stderr
    assert "@ 10.00（2026-01-07）" in early.stderr
    assert "未给成交日期：今天还没有开盘，按最近一个交易日 2026-01-07 记" in early.stderr
    # Saturday: the approval sentence names Friday
    args = {"action": "buy", "code": "600519", "shares": 100, "price": 10}
    context = ToolContext(home=home, registry=default_registry(), store=Store.in_home(home))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(NOW_ENV, "2026-01-10T10:00")
        said = context.registry.describe("update_portfolio", args, context)
    assert "@ 10.00（2026-01-09）" in said and "今天休市，按最近一个交易日 2026-01-09 记" in said
    # Friday 09:20, the open auction has started: that day, said as it is
    during = cli("portfolio", "buy", "600519", "100", "10", env={NOW_ENV: "2026-01-09T09:20"})
    assert "@ 10.00（2026-01-09）" in during.stderr and "未给成交日期" not in during.stderr
    assert [f["trade_date"] for f in fills(home)] == ["20260107", "20260109"]


def fills(home) -> list[dict]:
    conn = sqlite3.connect(home / "wyckoff.db")
    conn.row_factory = sqlite3.Row
    return [dict(row) for row in conn.execute("SELECT * FROM fills ORDER BY id")]


def test_a_fill_on_a_holiday_of_the_stored_calendar_is_refused(home):
    done("data", "import", str(DATA / "000001_2016.csv"))  # real bars: none on 端午 2016-06-09
    done("portfolio", "cash", "100000")
    unchanged = state(home)
    message = refused("portfolio", "buy", "000001", "1000", "10.40", "--date", "20160609")
    assert message == "错误：成交日期 20160609 是休市日（交易日历），A 股不交易；请检查日期。"
    assert state(home) == unchanged
    done("portfolio", "buy", "000001", "1000", "10.50", "--date", "20160608")


def test_ping_an_banks_real_2016_10_for_2_bonus_is_applied_from_its_reference_close(home):
    # 2016-06-16: 10送2派1.53; the close before was 10.44 and the exchange's reference 8.57
    done("data", "import", str(DATA / "000001_2016.csv"))
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "000001", "1000", "10.40", "--date", "20160614")
    cash = round(book()["cash"] * 100)
    shown = done("portfolio", "show")
    assert "除权除息 20160616：000001 平安银行 1000 股，送转 200 股" in shown
    assert book()["positions"][0]["shares"] == 1200
    credited = round(book()["cash"] * 100) - cash
    # read back from a reference price rounded to the cent: 1.53 a share, give or take 0.006
    assert abs(credited - 153_00) <= 6_00


def test_a_holding_added_with_an_old_buy_date_keeps_the_bonus_shares_it_already_has(home):
    # 1,200 shares as the broker shows them today, bought before 平安银行's 2016 10送2: the
    # 200 bonus shares are already among them (the ledger made it 1,440)
    done("data", "import", str(DATA / "000001_2016.csv"))
    done("portfolio", "add", "000001", "--shares", "1200", "--cost", "8.6", "--buy-dt", "20160601")
    shown = done("portfolio", "show")
    assert "除权除息" not in shown
    (held,) = book()["positions"]
    assert (held["shares"], held["buy_dt"]) == (1200, "20160601")
    assert book()["cash"] == 0


def test_a_holding_from_before_keeps_its_count_from_the_day_it_was_typed_in(home):
    old = state_db_at_version(home, 15)  # before positions kept the day they were typed in
    typed = {"code": "000001", "name": "平安银行", "shares": 1200, "cost_price": 8.6}
    typed |= {"buy_dt": "20160601", "stop_loss": None, "cost_cents": 1032000}
    bought = {**typed, "code": "600000", "name": "浦发银行", "shares": 1000, "cost_cents": 860000}
    old.executemany(
        "INSERT INTO positions VALUES (:code, :name, :shares, :cost_price, :buy_dt, :stop_loss,"
        " :cost_cents)",
        [typed, bought],
    )
    old.execute(  # typed in on 2016-07-01 (China time): the 10送2 of 2016-06-16 is in its count
        "INSERT INTO portfolio_history (ts, actor, action, code, before, after)"
        " VALUES ('2016-06-30T17:00:00.000Z', 'cli', 'add', '000001', NULL, ?)",
        (json.dumps(typed),),
    )
    old.close()
    done("data", "import", str(DATA / "000001_2016.csv"))
    assert "除权除息" not in done("portfolio", "show")
    assert [p["shares"] for p in book()["positions"]] == [1200, 1000]
    conn = sqlite3.connect(home / "wyckoff.db")
    assert dict(conn.execute("SELECT code, booked_dt FROM positions")) == {
        "000001": "20160701",
        "600000": None,  # no history of it being typed in: ex-dates after its buy date apply
    }


# --- a fill's price against its day's bar, as traded -------------------------------------------


def test_a_fill_outside_the_days_unadjusted_range_is_refused_naming_the_range(home):
    # real bars: 2016-06-14 traded 10.32-10.41; two days later 10送2 moved every qfq price
    done("data", "import", str(DATA / "000001_2016.csv"))
    done("portfolio", "cash", "100000")
    unchanged = state(home)
    message = refused("portfolio", "buy", "000001", "1000", "10.45", "--date", "20160614")
    assert message == (
        "错误：成交价 10.45 不在 000001 平安银行 2016-06-14 的成交区间 10.32–10.41（未复权）内；"
        "请检查价格和成交日期。"
    )
    assert "10.32–10.41" in refused(
        "portfolio", "buy", "000001", "1000", "10.31", "--date", "20160614"
    )
    assert state(home) == unchanged
    done("portfolio", "buy", "000001", "1000", "10.41", "--date", "20160614")
    # a sell after the ex-date is checked against that day's traded prices (8.53-8.60)
    assert "8.53–8.6" in refused(
        "portfolio", "sell", "000001", "200", "10.40", "--date", "20160616"
    )
    done("portfolio", "sell", "000001", "200", "8.55", "--date", "20160616")


def test_a_fill_on_a_day_without_a_bar_needs_force_and_says_its_price_is_unchecked(home):
    done("data", "import", str(DATA / "000001_2016.csv"))  # bars up to 2016-10-28
    done("portfolio", "cash", "100000")
    unchanged = state(home)
    message = refused("portfolio", "buy", "000001", "1000", "9.20", "--date", "20161031")
    assert "没有 000001 平安银行 2016-10-31 的日线" in message
    assert "行情库只有 2016-01-04 至 2016-10-28 的行情" in message and "--force" in message
    assert state(home) == unchanged
    forced = done("portfolio", "buy", "000001", "1000", "9.20", "--date", "20161031", "--force")
    assert "已买入" in forced and "成交价 9.20 未核对" in forced
    assert book()["positions"][0]["shares"] == 1000


def test_an_import_refuses_a_row_priced_outside_its_day_and_lists_unchecked_rows(home, tmp_path):
    done("data", "import", str(DATA / "000001_2016.csv"))
    done("portfolio", "cash", "100000")
    header = "成交日期,证券代码,证券名称,委托方向,成交数量,成交价格"
    rows = ["2016-06-14,000001,平安银行,证券买入,1000,10.40"]
    rows.append("2016-10-31,000001,平安银行,证券买入,1000,9.20")  # after the store's last bar
    (tmp_path / "good.csv").write_text("\n".join([header, *rows]), encoding="utf-8")
    preview = done("portfolio", "import", str(tmp_path / "good.csv"), "--dry-run")
    assert "价格未核对：第 3 行：行情库没有 000001 平安银行 2016-10-31 的日线" in preview
    rows[0] = rows[0].replace("10.40", "1.04")  # a misplaced decimal point
    (tmp_path / "bad.csv").write_text("\n".join([header, *rows]), encoding="utf-8")
    unchanged = state(home)
    message = refused("portfolio", "import", str(tmp_path / "bad.csv"))
    assert "第 2 行" in message and "成交价 1.04 不在" in message and "10.32–10.41" in message
    assert state(home) == unchanged


def test_the_agents_fill_outside_the_days_range_is_refused_before_and_after_approval(
    home, openai_server
):
    from tests.conftest import add_scripted_model
    from tests.model_servers import Reply
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.cli.tools import ToolContext
    from wyckoff.store import Store

    done("data", "import", str(DATA / "000001_2016.csv"))
    add_scripted_model(openai_server)
    cli("portfolio", "cash", "100000")
    # 10.45 is no 2016-06-14 price of 平安银行 (10.32-10.41 as traded)
    args = {"action": "buy", "code": "000001", "shares": 1000, "price": 10.45}
    args["trade_date"] = "20160614"
    context = ToolContext(home=home, registry=default_registry(), store=Store.in_home(home))
    said = context.registry.describe("update_portfolio", args, context)
    assert "成交价 10.45 不在 000001 平安银行 2016-06-14 的成交区间 10.32–10.41（未复权）内" in said
    openai_server.script(Reply(tool_calls=[("update_portfolio", args)]), Reply(text="没记上。"))
    assert cli("ask", "记录买入平安银行", "--approve", "update_portfolio").returncode == 0
    assert book()["positions"] == [] and book()["cash"] == 100000
    # a day the store has no bar for: the approval says the price goes unchecked
    forced = {**args, "price": 9.2, "trade_date": "20161031", "force": True}
    said = context.registry.describe("update_portfolio", forced, context)
    assert said.endswith("成交价 9.20 未核对。") and "现金 100,000.00 → 90,794.82" in said


# --- a holding's cost and stop meet prices on one basis -----------------------------------------


def test_a_10_for_10_after_the_buy_is_no_loss_and_no_broken_stop(home, tmp_path):
    import_market(
        home, tmp_path, {"600519": [20, 20, 10, 10, 10]}, pre_closes={("600519", DAYS[2]): 10}
    )
    done(
        "portfolio", "add", "600519", "--shares", "1000", "--cost", "20",
        "--buy-dt", "20260105", "--stop-loss", "18",
    )  # fmt: skip
    with sqlite3.connect(home / "wyckoff.db") as conn:  # typed in (and its stop) on the buy day
        conn.execute("UPDATE portfolio_history SET ts = '2026-01-05T02:00:00.000Z'")
        conn.execute("UPDATE positions SET booked_dt = '20260105'")
    done("alert", "add", "pnl")
    done("alert", "add", "stop")
    checked = json.loads(cli("alert", "check", "--json").stdout)
    assert checked["fired"] == [], checked["fired"]  # was: 浮亏 -50%, 收盘 10.00 跌破止损 18.00
    (row,) = json.loads(cli("portfolio", "check", "--json").stdout)["positions"]
    assert row["pnl_pct"] == 0.0 and row["stop_level"] != 18.0
    # the ledger applies the ex-date: twice the shares, the same cost, the stop moved with price
    done("portfolio", "show")
    (held,) = book()["positions"]
    assert (held["shares"], held["cost_price"], held["stop_loss"]) == (2000, 10.0, 9.0)
    (row,) = json.loads(cli("portfolio", "check", "--json").stdout)["positions"]
    assert row["pnl_pct"] == 0.0


def test_an_alert_check_of_a_day_before_a_booked_ex_date_uses_that_days_cost(home, tmp_path):
    # bought at 20.00, 17.00 the next day (-15%), then 10送10 on 2026-01-07
    import_market(
        home, tmp_path, {"600519": [20, 17, 8.5, 8.5, 8.5]}, pre_closes={("600519", DAYS[2]): 8.5}
    )
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "20", "--date", "20260105")
    assert "送转 1000 股" in done("portfolio", "show")  # booked: 2000 shares at 10.00
    booked = state(home)
    done("alert", "add", "pnl", "--threshold", "10")
    checked = json.loads(cli("alert", "check", "--date", "2026-01-06", "--json").stdout)
    # was: no alert, today's cost 10.00 against that day's 17.00 read as a 70% gain
    (alert,) = checked["fired"]
    assert alert["message"].startswith("持仓浮亏 -15.0"), alert["message"]
    assert state(home) == booked  # the book is as it was
    assert book()["positions"][0]["shares"] == 2000


def test_the_brief_account_counts_an_ex_date_not_booked_yet_and_books_nothing(home, tmp_path):
    import_market(
        home,
        tmp_path,
        {"600519": [20, 20, 10, 10, 10]},
        pre_closes={("600519", DAYS[2]): 10},
        csi300=[4000] * 5,
    )
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "20", "--date", "20260105")
    unchanged = state(home)
    built = cli("brief", "--format", "json")
    assert built.returncode == 0, built.stderr
    account = json.loads(built.stdout)["account"]
    # 1000 at 20.00 became 2000 at 10.00: the same 20,000.00 (was 1000 x 10.00 = a 10,000 loss)
    assert account["unrealized_cents"] == 2_000_000 - 2_000_520
    assert len({account_return for _, account_return, _ in account["curve"]}) == 1  # flat
    assert state(home) == unchanged  # booked by `portfolio show`, not by the brief


def test_nav_names_the_holding_and_the_days_it_has_no_close(home, tmp_path):
    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 12]}, csi300=[4000] * 5)
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    done("portfolio", "add", "000001", "--shares", "1000", "--cost", "10", "--buy-dt", "20260105")
    report = json.loads(cli("portfolio", "nav", "--json").stdout)
    assert report["note"] == (
        "行情库没有持仓 000001 平安银行 在 20260105 至 20260109（共 5 个交易日）的收盘价，"
        "这些天的净值没有计入它的市值；用 `wyckoff data sync --codes 000001` 同步后再看。"
    )
    assert "000001 平安银行" in done("portfolio", "nav")


def test_add_records_an_odd_lot_held_and_fills_keep_the_lot_rules(home):
    # 1234 shares: a 10送2 remainder on a holding brought in by hand
    done("portfolio", "add", "000001", "--shares", "1234", "--cost", "10", "--buy-dt", "20260105")
    done("portfolio", "add", "688001", "--shares", "257", "--cost", "30", "--buy-dt", "20260105")
    assert sorted((p["code"], p["shares"]) for p in book()["positions"]) == [
        ("000001", 1234),
        ("688001", 257),
    ]
    assert "股数必须是正整数" in refused(
        "portfolio", "add", "000001", "--shares", "0", "--cost", "1"
    )
    assert "100 的整数倍" in refused(
        "portfolio", "sell", "000001", "34", "11", "--date", "20260106"
    )
    done("portfolio", "sell", "000001", "1200", "11", "--date", "20260106")
    done("portfolio", "sell", "000001", "34", "11", "--date", "20260107")  # the odd lot, at once
    cli("portfolio", "cash", "100000")
    assert "100 的正整数倍" in refused(
        "portfolio", "buy", "000001", "34", "11", "--date", "20260108"
    )


# --- cash moves and the time-weighted NAV --------------------------------------------------------


def nav_days() -> list[dict]:
    return json.loads(cli("portfolio", "nav", "--json").stdout)["days"]


def test_a_deposit_is_no_gain_of_the_nav_and_its_undo_takes_the_flow_back(home, tmp_path):
    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 12]}, csi300=[4000] * 5)
    cli("portfolio", "cash", "100000")  # the opening balance, before the first fill
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    without = nav_days()
    assert [d["return_pct"] for d in without] == [0.0, 1.0, 2.0, 2.0, 2.0]
    deposited = done("portfolio", "cash", "189994.90", "--date", "20260107")  # 100,000.00 in
    assert "89,994.90" in deposited
    days = nav_days()
    assert [d["flow_cents"] for d in days] == [0, 0, 10_000_000, 0, 0]
    assert days[2]["nav_cents"] - days[1]["nav_cents"] == 10_000_000 + 100_000
    # the 1,000.00 the stock made on 20260107 is a gain; the 100,000.00 deposited is not
    assert [d["return_pct"] for d in days] == [0.0, 1.0, 1.5, 1.5, 1.5]
    assert json.loads(cli("portfolio", "nav", "--json").stdout)["note"] is None
    done("portfolio", "undo")
    assert nav_days() == without


def test_an_account_from_before_dated_cash_moves_keeps_its_nav_with_a_note(home, tmp_path):
    old = state_db_at_version(home, 14)  # before cash moves were dated
    old.execute("INSERT INTO portfolio_cash (id, amount, cents) VALUES (1, 100000, 10000000)")
    old.close()
    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 12]}, csi300=[4000] * 5)
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    report = json.loads(cli("portfolio", "nav", "--json").stdout)
    assert [d["return_pct"] for d in report["days"]] == [0.0, 1.0, 2.0, 2.0, 2.0]
    assert "有 100,000.00 元现金改动没有日期" in report["note"]
    assert "按一直如此计算" in done("portfolio", "nav")
