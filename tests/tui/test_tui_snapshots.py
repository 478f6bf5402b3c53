"""Snapshots (pytest-textual-snapshot) of what people look at: the chat after an answer with
a tool row, the approval dialog, the status bar with the DEMO badge, and a K-line chart.

Each snapshot is deterministic: scripted model replies, fixed data, no dates from the clock.
Update after an intended change with `pytest tests/tui/test_tui_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pytest
from textual.app import App, ComposeResult

from tests.conftest import add_scripted_model
from tests.model_servers import Reply
from wyckoff.cli import tui
from wyckoff.cli.tui.screens import ApprovalScreen, ChartScreen
from wyckoff.cli.tui.widgets import StatusBar


class StatusOnly(App):
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        usage = {
            "input_tokens": 12_345,
            "output_tokens": 678,
            "cache_read_tokens": 9_000,
            "cost": 0.0421,
        }
        self.query_one(StatusBar).show("claude", True, 37.0, usage, "demo")


class DialogHost(App):
    CSS_PATH = Path(tui.__file__).with_name("app.tcss")  # the real app's styles

    def __init__(self, screen) -> None:
        super().__init__()
        self.dialog = screen

    def on_mount(self) -> None:
        self.push_screen(self.dialog)


def chart_data() -> dict:
    rng = np.random.default_rng(3)
    close = 10 * np.cumprod(1 + rng.normal(0.002, 0.02, 90))
    bars = []
    for day, c in enumerate(close):
        o = c * (1 + rng.normal(0, 0.01))
        bars.append(
            {
                "date": f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}",
                "open": o,
                "high": max(o, c) * 1.01,
                "low": min(o, c) * 0.99,
                "close": c,
                "volume": float(rng.uniform(1, 3) * 1e6),
            }
        )
    ma50 = [None] * 40 + [
        float(np.mean(close[i - 49 : i + 1])) if i >= 49 else None for i in range(40, 90)
    ]
    return {
        "code": "600519",
        "name": "贵州茅台",
        "source": "demo",
        "bars": bars,
        "ma50": ma50,
        "ma200": [None] * 90,
        "markers": [bars[70]["date"], bars[85]["date"]],
    }


def test_status_bar_with_demo_badge(snap_compare):
    assert snap_compare(StatusOnly(), terminal_size=(100, 3))


def test_approval_dialog(snap_compare):
    request = {
        "id": "c1",
        "name": "update_portfolio",
        "title": "修改持仓",
        "description": "买入记录：600519 贵州茅台 100 股，成本 1500.0 元",
        "args": {
            "action": "add",
            "code": "600519",
            "name": "贵州茅台",
            "shares": 100,
            "cost_price": 1500.0,
        },
    }
    assert snap_compare(DialogHost(ApprovalScreen(request)), terminal_size=(100, 30))


LONG_REQUEST = {
    "id": "c2",
    "name": "run_command",
    "title": "运行命令",
    "description": "运行命令：python backtest.py（在工作目录里）\n"
    + "\n".join(f"+ 第 {n} 行改动" for n in range(40)),
    "args": {"command": "python backtest.py", "notes": ["很长的参数"] * 60},
}


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_approval_sentence_and_every_button_stay_in_view(size):
    app = DialogHost(ApprovalScreen(LONG_REQUEST))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        dialog = screen.query_one("#dialog").region
        inside = lambda selector: dialog.contains_region(screen.query_one(selector).region)  # noqa: E731
        assert inside("#action") and "将要执行：运行命令" in str(
            screen.query_one("#action").render()
        )
        assert all(inside(f"#{button}") for button in ("allow", "always", "edit", "deny"))
        assert app.focused.id == "deny" and screen.region.contains_region(dialog)
        body = screen.query_one("#approval-body")
        assert dialog.contains_region(body.region)  # the long detail scrolls in its own box
        assert screen.query_one("#args").region.height <= 10
        while not screen.armed:
            await pilot.pause(0.05)
        await pilot.press("e")  # editing the arguments brings their box into view
        await pilot.pause()
        assert app.focused.id == "args" and body.region.contains_region(
            screen.query_one("#args").region
        )


def test_approval_dialog_at_80_by_24_with_a_long_detail(snap_compare):
    assert snap_compare(DialogHost(ApprovalScreen(LONG_REQUEST)), terminal_size=(80, 24))


def test_kline_chart(snap_compare):
    assert snap_compare(DialogHost(ChartScreen(chart_data())), terminal_size=(110, 32))


@pytest.fixture
def scripted_chat(home, openai_server):
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("check_background_tasks", {})], usage=(1000, 20, 0, 0)),
        Reply(
            text="## 结论\n\n- 没有正在运行的后台任务\n- 可以用 **/screen** 开始全市场筛选",
            usage=(1100, 40, 0, 0),
        ),
    )
    return openai_server


def test_main_screen_after_an_answer(snap_compare, scripted_chat):
    from tests.tui.test_tui import submit, wait_until
    from wyckoff.cli.tui.app import create_app

    async def ask(pilot) -> None:
        await wait_until(pilot, lambda: pilot.app.agent is not None)
        pilot.app.agent.runtime.today = lambda: date(2026, 12, 1)  # the prompt's date: its size
        await submit(pilot, "有后台任务吗？")
        await wait_until(
            pilot, lambda: not pilot.app.turn_running and pilot.app.query("AssistantMessage")
        )
        for row in pilot.app.query("ToolRow"):
            row.elapsed = 0.0  # elapsed times vary from run to run
            row._render_row()
        pilot.app.set_focus(None)  # no blinking cursor to catch mid-blink
        await pilot.pause()  # the re-rendered rows are on the screen

    assert snap_compare(create_app(), terminal_size=(80, 24), run_before=ask)
