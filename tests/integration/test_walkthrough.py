"""Defects found by using Wyckoff as a new A-share investor would, each pinned by a test."""

from __future__ import annotations

import json

import pytest

from tests.conftest import cli
from tests.model_servers import Reply


def test_backtest_with_an_impossible_date_is_a_usage_error(demo_home):
    result = cli("backtest", "--start", "2026-13-05")
    assert result.returncode == 2, result.stderr
    assert "2026-13-05" in result.stderr and "YYYY-MM-DD" in result.stderr
    assert "Traceback" not in result.stderr


def test_backtest_starting_after_the_data_says_so(demo_home):
    result = cli("backtest", "--start", "2099-01-05")
    assert result.returncode != 0
    assert "晚于行情的最后一天" in result.stderr
    assert "Traceback" not in result.stderr


def test_piped_tables_print_every_value_whole(openai_server):
    from tests.conftest import add_scripted_model

    add_scripted_model(openai_server)
    listing = cli("model", "list")
    assert listing.returncode == 0, listing.stderr
    assert openai_server.base_url + "/v1" in listing.stdout  # not "http://…"
    assert "1,000,000" in listing.stdout  # gpt-4.1's context window, not "1,000,00…"
    assert "…" not in listing.stdout


@pytest.mark.asyncio
async def test_open_tui_follows_data_use_demo_run_in_another_terminal(
    home, openai_server, install_demo
):
    """The "no data" error says to run `wyckoff data use demo`; the open TUI must then use it."""
    from tests.conftest import add_scripted_model
    from tests.tui.test_tui import submit, wait_until
    from wyckoff.cli.tui.app import create_app
    from wyckoff.cli.tui.widgets import StatusBar, ToolRow

    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("get_market_overview", {})]),
        Reply(text="还没有行情。"),
        Reply(tool_calls=[("get_market_overview", {})]),
        Reply(text="演示数据上的大盘。"),
    )
    app = create_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await submit(pilot, "大盘怎么样")
        await wait_until(pilot, lambda: len(openai_server.requests) >= 2 and not app.turn_running)
        assert "没有数据" in str(app.query(ToolRow).last().render())

        install_demo(home, 100)
        assert cli("data", "use", "demo").returncode == 0  # the other terminal

        await submit(pilot, "换成演示数据了，再看看")
        await wait_until(pilot, lambda: len(openai_server.requests) >= 4 and not app.turn_running)
        overview = openai_server.bodies[3]["messages"][-1]["content"]
        assert "没有数据" not in overview and "演示数据" in overview
        assert "DEMO" in str(app.query_one(StatusBar).render())


def test_a_misnamed_portfolio_argument_goes_back_to_the_model_not_to_the_user(openai_server):
    """The model wrote `cost` (the CLI's option name) for cost_price: the user must not be asked
    to approve "成本 None 元"; the model gets the error and the book stays empty."""
    from tests.conftest import add_scripted_model

    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("update_portfolio", {"action": "add", "code": "600519", "shares": 100, "cost": 9.5})]),
        Reply(text="参数写错了。"),
    )  # fmt: skip
    result = cli("ask", "加 100 股茅台，成本 9.5", "--approve", "update_portfolio")
    assert result.returncode == 0, result.stderr
    error = openai_server.bodies[1]["messages"][-1]["content"]
    assert "cost" in error and "cost_price" in error
    assert "None" not in result.stderr
    assert "持仓为空" in cli("portfolio", "list").stderr


@pytest.mark.parametrize("output", ["text", "json"])
def test_ask_answers_built_on_demo_data_say_so_on_stdout(demo_home, openai_server, output):
    from tests.conftest import add_scripted_model

    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("get_market_overview", {})]),
        Reply(text="大盘中性。"),  # the model forgot to mention the demo data
    )
    result = cli("ask", "大盘怎么样", "-o", output)
    assert result.returncode == 0, result.stderr
    assert "演示数据" in result.stdout
    if output == "json":
        assert "演示数据" in json.loads(result.stdout)["data_note"]


def test_ask_answers_without_market_data_carry_no_demo_note(demo_home, openai_server):
    from tests.conftest import add_scripted_model

    add_scripted_model(openai_server)
    openai_server.script(Reply(text="你好。"))
    result = cli("ask", "你好", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert "data_note" not in json.loads(result.stdout)


@pytest.mark.asyncio
async def test_setup_screen_masks_a_pasted_key_and_starts_in_the_first_field(home):
    from textual.widgets import Input, Select

    from tests.tui.test_tui import wait_until
    from wyckoff.cli.tui.app import create_app
    from wyckoff.cli.tui.screens import SetupScreen

    secret = "sk-live-abcdefghijklmnop0123456789"
    app = create_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SetupScreen))
        await pilot.pause(0.2)
        assert isinstance(app.focused, Select)  # Enter opens the provider list at once
        key = app.screen.query_one("#key", Input)
        key.focus()
        await pilot.press(*secret)
        await pilot.pause(0.1)
        assert key.password and "abcdefghijklmnop" not in app.export_screenshot()
        key.value = "DEEPSEEK_API_KEY"
        await pilot.pause(0.1)
        assert not key.password  # a variable name is not a secret: the user sees what was typed


def test_memory_dates_are_local_like_every_other_listing(home):
    """UTC+14 and UTC-12 are 26 hours apart: the two local dates always differ."""
    assert cli("memory", "add", "--type", "preference", "我不买ST股").returncode == 0
    far_east = cli("memory", "list", env={"TZ": "Etc/GMT-14"}).stdout
    far_west = cli("memory", "list", env={"TZ": "Etc/GMT+12"}).stdout
    east_day = cli("memory", "show", "1", env={"TZ": "Etc/GMT-14"}).stdout
    west_day = cli("memory", "show", "1", env={"TZ": "Etc/GMT+12"}).stdout
    assert far_east != far_west and east_day != west_day


def test_every_backtest_option_is_explained_in_chinese():
    import re

    lines = cli("backtest", "--help").stdout.splitlines()
    for option in (
        "--start",
        "--end",
        "--hold-days",
        "--top-n",
        "--stop-loss-pct",
        "--take-profit-pct",
    ):
        line = next(line for line in lines if line.strip().startswith(option))
        assert re.search(r"[\u4e00-\u9fff]", line), line


def test_a_buy_made_today_in_china_is_not_in_the_future(home, monkeypatch):
    """No TZ on a UTC machine means China time (as every listing shows): from 16:00 UTC on,
    China's today is UTC's tomorrow, and a buy made this morning in Beijing must be accepted."""
    from datetime import UTC, datetime, timedelta

    monkeypatch.delenv("TZ", raising=False)
    system_zone = datetime.now().astimezone().utcoffset()
    china_today = datetime.now(UTC) + (
        timedelta(hours=8) if system_zone == timedelta(0) else system_zone
    )
    day = china_today.strftime("%Y%m%d")
    added = cli("portfolio", "add", "600519", "--shares", "100", "--cost", "10", "--buy-dt", day)
    assert added.returncode == 0, added.stderr
    listed = cli("portfolio", "add", "000001", "--shares", "100", "--cost", "11")  # default: today
    assert listed.returncode == 0, listed.stderr
    shown = f"{day[:4]}-{day[4:6]}-{day[6:]}"
    assert shown in cli("portfolio", "list").stdout.split("000001", 1)[1].splitlines()[0]


@pytest.mark.asyncio
async def test_the_approval_sentence_follows_edited_arguments(home, openai_server):
    """Edit 1,000,000 to 2,000 and the dialog must say 2,000 before the user runs it."""
    from textual.widgets import TextArea

    from tests.conftest import add_scripted_model
    from tests.integration.test_approvals import SET_CASH, dialog_for, update
    from tests.tui.test_tui import wait_until
    from wyckoff.agents.portfolio import Portfolio
    from wyckoff.cli.tui.app import create_app
    from wyckoff.store import Store

    add_scripted_model(openai_server)
    openai_server.script(update(SET_CASH), Reply(text="好"))
    app = create_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await dialog_for(pilot, "现金一百万")
        assert "1,000,000.00" in str(app.screen.query_one("#action").render())
        await pilot.press("e")
        app.screen.query_one("#args", TextArea).load_text(
            json.dumps({"action": "set_cash", "cash": 2000})
        )
        await pilot.pause(0.2)
        sentence = str(app.screen.query_one("#action").render())
        assert "2,000.00" in sentence and "1,000,000" not in sentence
        await pilot.press("escape", "enter")
        await wait_until(pilot, lambda: not app.turn_running)
    assert Portfolio(Store.in_home(home)).cash() == 2000


def test_the_demo_label_shows_once_on_one_screen_and_stays_in_saved_output(demo_home, tmp_path):
    import subprocess
    import sys

    from tests.conftest import cli_env

    together = subprocess.run(  # a terminal, or `2>&1`: stdout and stderr are one place
        [sys.executable, "-m", "wyckoff", "analyze", "000001.SZ"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=cli_env(),
    )
    assert together.returncode == 0 and together.stdout.count("演示数据：") == 1
    apart = cli("analyze", "000001.SZ")  # `> saved.txt`: the file and the screen both say so
    assert "演示数据：" in apart.stdout and "演示数据：" in apart.stderr


def test_portfolio_listings_write_days_and_prices_as_every_other_listing(demo_home):
    """`market`, `backtest` and the brief say 2026-12-03; the portfolio said 20261203, and
    its P&L table showed a cost of 10.500 where `portfolio list` showed 10.50."""
    import re

    day = json.loads(cli("analyze", "000001", "--json").stdout)["as_of"].replace("-", "")
    assert cli("portfolio", "cash", "100000", "--date", day).returncode == 0
    added = cli("portfolio", "add", "000001", "--shares", "300", "--cost", "10.5", "--buy-dt", day)
    assert added.returncode == 0, added.stderr
    shown = {view: cli("portfolio", view).stdout for view in ("list", "show", "nav")}
    dashed = f"{day[:4]}-{day[4:6]}-{day[6:]}"
    assert all(dashed in text for text in shown.values()), shown
    assert not [v for v, text in shown.items() if re.search(r"\b20\d{6}\b", text)], shown
    assert "│ 10.50 " in shown["list"] and "│ 10.50 " in shown["show"]


def test_a_price_alert_reads_as_its_firing_does(demo_home):
    assert cli("alert", "add", "price", "--scope", "600519", "--above", "9").returncode == 0
    listed = cli("alert", "list").stdout
    assert "收盘 ≥ 9.00" in listed and "≥ 9.0 " not in listed


def test_counts_of_days_and_losses_carry_their_units(demo_home):
    """`market` writes 20日; `analyze` wrote 5d 20d, and `backtest` a bare 最长连亏 5."""
    import re

    assert "收益：5日 " in cli("analyze", "000001").stdout
    tested = cli("backtest", "--start", "2026-09-01")
    assert tested.returncode == 0, tested.stderr
    assert re.search(r"最长连亏 \d+ 笔  ", tested.stdout), tested.stdout


def test_screen_progress_counts_stocks_as_its_summary_does(home, install_demo):
    """The summary said 扫描 1,000 只 under a progress line saying 1000 只股票."""
    install_demo(home, 1000)
    assert cli("data", "use", "demo").returncode == 0
    screened = cli("screen")
    assert screened.returncode == 0, screened.stderr
    assert "扫描 1,000 只" in screened.stdout and "… 全市场漏斗 1,000 只股票" in screened.stderr


def test_an_empty_trace_list_says_where_traces_come_from(home):
    """Every other empty listing says what to run; `trace list` said only that it was empty."""
    listed = cli("trace", "list")
    assert listed.returncode == 0 and "wyckoff ask" in listed.stderr, listed.stderr
