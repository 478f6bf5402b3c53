"""The TUI's intraday views through Pilot: `/chart CODE --intraday` and the tail panel."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply
from tests.tui.test_tui import next_notice, submit, wait_until
from wyckoff.cli.tui.app import create_app
from wyckoff.cli.tui.widgets import AssistantMessage, ToolRow


@pytest.fixture
def demo_at_1446(home, install_demo, openai_server, monkeypatch):
    """A scripted model, the demo market, and the clock at 14:46 of its last trading day."""
    add_scripted_model(openai_server)
    store = install_demo(home, 100)
    cli("data", "use", "demo")
    last = store.execute("SELECT MAX(date) FROM bars")[0][0]
    monkeypatch.setenv("WYCKOFF_NOW", f"{last}T14:46:00+08:00")
    return openai_server


@pytest.mark.asyncio
async def test_chart_intraday_draws_the_minute_path_with_vwap_and_support(demo_at_1446):
    from wyckoff.cli.tui.intraday import IntradayChart
    from wyckoff.cli.tui.screens import ChartScreen

    app = create_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await submit(pilot, "/chart 平安银行 --intraday")
        await wait_until(pilot, lambda: isinstance(app.screen, ChartScreen))
        widget = app.screen.query_one(IntradayChart)
        await wait_until(pilot, lambda: "000001 平安银行" in str(widget.render()))
        chart = str(widget.render())
        assert "分时" in chart and "14:46" in chart and "盘中（未收盘）" in chart
        assert "─ VWAP" in chart and "确认支撑" in chart and "DEMO" in chart
        assert "•" in chart and re.search(r"09:3\d", chart)  # the first drawn minute
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ChartScreen))
        assert "找不到股票" in await next_notice(pilot, "/chart 不存在的股票 --intraday")


@pytest.mark.asyncio
async def test_a_tail_check_shows_its_verdicts_in_a_panel(demo_at_1446):
    from wyckoff.cli.tui.intraday import TailPanel

    demo_at_1446.script(
        Reply(tool_calls=[("tail_check", {"codes": ["000001"]})]), Reply(text="看完了。")
    )
    app = create_app()
    async with app.run_test(size=(140, 45)) as pilot:
        await submit(pilot, "尾盘检查一下平安银行")
        await wait_until(pilot, lambda: not app.turn_running and app.query(AssistantMessage))
        assert len(app.query(TailPanel)) == 1
        console = Console(width=140, record=True, file=io.StringIO())
        console.print(app.query_one(TailPanel).table)
        shown = console.export_text()
    assert "尾盘检查" in shown and "14:46" in shown and "000001 平安银行" in shown
    assert any(verdict in shown for verdict in ("可买", "观察", "放弃"))
    assert "VWAP" in shown


@pytest.mark.asyncio
async def test_a_tail_check_of_many_stocks_still_shows_every_verdict(demo_at_1446, home):
    """A check of a dozen stocks returns more than the model is shown inline (the rest is
    saved to a file): the panel showed nothing at all."""
    from wyckoff.cli.tui.intraday import TailPanel
    from wyckoff.engine.market_store import MarketStore

    store = MarketStore.for_source(home, "demo")
    codes = [row[0] for row in store.execute("SELECT DISTINCT code FROM bars ORDER BY code")][:12]
    demo_at_1446.script(
        Reply(tool_calls=[("tail_check", {"codes": codes})]), Reply(text="看完了。")
    )
    app = create_app()
    async with app.run_test(size=(140, 45)) as pilot:
        await submit(pilot, "尾盘检查这十二只")
        await wait_until(
            pilot, lambda: not app.turn_running and app.query(AssistantMessage), timeout=120
        )
        assert len(app.query(TailPanel)) == 1
        console = Console(width=140, record=True, file=io.StringIO())
        console.print(app.query_one(TailPanel).table)
        shown = console.export_text()
        assert all(code in shown for code in codes)
        # resumed, its row still says what the check found
        session = app.agent.conversation.session_id
        await submit(pilot, "/new")
        app.resume(session)
        await wait_until(pilot, lambda: app.query(ToolRow))
        assert "尾盘检查" in app.query_one(ToolRow).outcome
