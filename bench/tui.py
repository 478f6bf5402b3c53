"""TUI figures: time to first paint, sustained streaming at 2,000 characters per second with
no dropped text, and a scripted tmux run (launch `wyckoff`, type a question, read the pane).
Run: python bench/tui.py"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from tests.conftest import add_scripted_model  # noqa: E402
from tests.model_servers import OpenAIServer, Reply  # noqa: E402

STREAM_CHARS = 6_000
CHARS_PER_SECOND = 2_000
PIECE = 20  # characters per delta: 100 deltas a second


async def first_paint(started: float) -> tuple[float, float]:
    """From before the TUI is imported to the first screen painted (run_test returns once the
    app is ready), and to the agent being ready (SDK and engine load on a worker)."""
    from wyckoff.cli.tui.app import create_app

    app = create_app()
    async with app.run_test(size=(100, 30)) as pilot:
        painted = time.perf_counter() - started
        while app.agent is None:
            await pilot.pause(0.02)
        return painted, time.perf_counter() - started


async def streaming(server: OpenAIServer) -> tuple[float, bool, float]:
    from wyckoff.cli.tui.app import create_app
    from wyckoff.cli.tui.widgets import AssistantMessage

    text = "".join(f"第{i:04d}段：放量突破后缩量回踩。\n" for i in range(STREAM_CHARS // 20))[
        :STREAM_CHARS
    ]
    server.script(
        Reply(text=text, pieces=len(text) // PIECE, piece_delay_s=PIECE / CHARS_PER_SECOND)
    )
    app = create_app()
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = app.query_one("#prompt")
        prompt.load_text("stream")
        started = time.perf_counter()
        await pilot.press("enter")
        while app.turn_running or not app.query(AssistantMessage):
            await pilot.pause(0.05)
        elapsed = time.perf_counter() - started
        shown = app.query(AssistantMessage).first()
        source = shown.source if hasattr(shown, "source") else shown.text
        return elapsed, source == text, len(text) / elapsed


def tmux_run(home: str, server: OpenAIServer) -> str:
    if shutil.which("tmux") is None:
        return "tmux not installed: skipped"
    server.script(Reply(text="市场偏强（脚本回答）。"))
    env = f"LANG=C.UTF-8 WYCKOFF_HOME={home}"
    subprocess.run(["tmux", "kill-session", "-t", "wyckoff-bench"], capture_output=True)
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            "wyckoff-bench",
            "-x",
            "80",
            "-y",
            "24",
            f"{env} {sys.executable} -m wyckoff",
        ],
        check=True,
    )
    try:
        time.sleep(3)
        subprocess.run(
            ["tmux", "send-keys", "-t", "wyckoff-bench", "-l", "今天市场怎么样"], check=True
        )
        subprocess.run(["tmux", "send-keys", "-t", "wyckoff-bench", "Enter"], check=True)
        time.sleep(3)
        pane = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", "wyckoff-bench"], capture_output=True, text=True
        ).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", "wyckoff-bench"], capture_output=True)
    ok = "今天市场怎么样" in pane and "市场偏强（脚本回答）" in pane
    return ("question and answer visible in the pane" if ok else "NOT visible") + "\n" + pane


def main() -> None:
    print(describe_machine())
    server = OpenAIServer()
    with tempfile.TemporaryDirectory() as home:
        os.environ["WYCKOFF_HOME"] = home
        add_scripted_model(server, "b")
        paint, ready = asyncio.run(first_paint(time.perf_counter()))
        elapsed, complete, rate = asyncio.run(streaming(server))
        pane = tmux_run(home, server)
    server.close()
    print(
        f"time to first paint            {paint * 1000:7.0f} ms (agent ready, input accepted before: {ready * 1000:.0f} ms)"
    )
    print(
        f"stream {STREAM_CHARS:,} chars at {CHARS_PER_SECOND:,}/s     {elapsed:7.2f} s (shown {rate:,.0f} chars/s), text complete: {complete}"
    )
    print(f"tmux run: {pane}")


if __name__ == "__main__":
    main()
