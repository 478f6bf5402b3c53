"""Inputs built to cost time or to hide text: a 5-million-character stock query, a web
server dripping one header byte every half second, a page nested 100,000 `<div>`s deep,
and invisible or reordering characters in what an approval dialog shows."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from pydantic import BaseModel
from textual.widgets import TextArea

from tests.integration import test_local_tools
from tests.integration.test_local_tools import PAGE_HOST, DialogHost
from tests.tui.test_tui import wait_until
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.local_tools.html_text import html_to_text
from wyckoff.cli.local_tools.web import fetch
from wyckoff.cli.local_tools.web_guard import ALLOW_LOOPBACK_ENV
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.cli.tui.screens import ApprovalScreen

# --- stock queries --------------------------------------------------------------------------


def test_a_huge_stock_query_is_refused_in_one_chinese_sentence(demo_home):
    registry = default_registry()
    checked = registry.validate(
        {"name": "search_stock_by_name", "args": {"keyword": "茅台" * 2_500_000}}
    )
    assert checked == (
        "search_stock_by_name 的参数无效：keyword：股票代码或名称最长 40 个字，收到 5000000 个字："
        "请只给代码或名称。请按工具的参数定义重新调用。"
    )


def test_a_sentence_naming_a_stock_still_finds_it(demo_home):
    registry = default_registry()
    spec, params = registry.validate(
        {"name": "search_stock_by_name", "args": {"keyword": "平安银行最近怎么样"}}
    )
    outcome = registry.run(spec, params, ToolContext(home=demo_home, registry=registry), "c1")
    assert outcome.ok and "000001" in outcome.result


# --- a server dripping its headers ----------------------------------------------------------


class DrippingServer:
    """Sends a status line, then one header byte every 0.5 s (for at most 20 s); notes
    when the client has closed the connection."""

    def __init__(self) -> None:
        self.listener = socket.create_server((PAGE_HOST, 0))
        self.port = self.listener.getsockname()[1]
        self.closed_by_client = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\n")
            try:
                for _ in range(40):
                    connection.sendall(b"X")
                    time.sleep(0.5)
            except OSError:  # reset or broken pipe: the client let go
                self.closed_by_client.set()


def test_dripped_headers_end_at_the_total_deadline(monkeypatch):
    monkeypatch.setenv(ALLOW_LOOPBACK_ENV, PAGE_HOST)
    server = DrippingServer()
    # every byte arrives well within a per-read timeout; only a total deadline stops it
    with pytest.raises(ToolFailure, match=r"^读取网页超过 \d+ 秒，已停止。$"):
        fetch(f"http://{PAGE_HOST}:{server.port}/slow", time.monotonic() + 2.0)
    assert server.closed_by_client.wait(timeout=15)
    server.listener.close()


# --- deep pages -------------------------------------------------------------------------------


def test_a_page_nested_100k_deep_becomes_flat_text():
    body = (
        b"<html><head><title>Deep &amp; dark</title><script>steal()</script></head><body>"
        + b"<div>" * 100_000
        + b"\xe5\x85\xac\xe5\x91\x8a &lt;600519&gt;"
        + b"</div>" * 100_000
        + b"</body></html>"
    )
    title, text = html_to_text(body, "utf-8")
    assert title == "Deep & dark"
    assert text.endswith("公告 <600519>") and "steal" not in text


def test_an_ordinary_page_still_becomes_markdown():
    body = "<html><body><h1>回购公告</h1><ul><li>一</li><li>二</li></ul></body></html>"
    assert html_to_text(body.encode(), None) == ("", "# 回购公告\n\n* 一\n* 二")


# --- approval text ----------------------------------------------------------------------------

ws = test_local_tools.ws  # the fixture: an empty workspace folder

HIDDEN = [
    "\u2028",  # line separator
    "\u2029",  # paragraph separator
    "\u009b",  # C1 control: a terminal's CSI
    "\u0085",  # C1 control: next line
    "\u2060",  # word joiner
    "\ufeff",  # byte order mark
    "\u061c",  # Arabic letter mark
    "\u00ad",  # soft hyphen
    "\u200b",  # zero-width space
    *(chr(code) for code in range(0x202A, 0x202F)),  # bidi embeddings and overrides
    *(chr(code) for code in range(0x2066, 0x206A)),  # bidi isolates
]


class NoteParams(BaseModel):
    note: str


REMEMBER = ToolSpec(
    name="remember",
    description="记一条笔记",
    params=NoteParams,
    func=lambda params, context: params.note,
    title="记笔记",
    requires_approval=True,
)


@pytest.mark.parametrize("hidden", HIDDEN, ids=[f"U+{ord(ch):04X}" for ch in HIDDEN])
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", lambda ch: {"path": "a.txt", "content": f"安全{ch}内容\n第二行"}),
        ("exec_command", lambda ch: {"command": f"echo safe{ch}; rm -rf ~"}),
        ("web_fetch", lambda ch: {"url": f"https://example.com/p?q=a{ch}b"}),
        ("remember", lambda ch: {"note": f"记住{ch}这一条"}),  # no describer: title + JSON
    ],
    ids=["write_file", "exec_command", "web_fetch", "no-describer"],
)
def test_approval_text_shows_every_hidden_character_as_its_code(home, ws, tool, args, hidden):
    home.mkdir(parents=True, exist_ok=True)
    registry = default_registry()
    registry.register(REMEMBER)
    shown = registry.describe(tool, args(hidden), ToolContext(home=home, registry=registry))
    assert hidden not in shown
    assert f"\\u{ord(hidden):04x}" in shown


@pytest.mark.asyncio
async def test_the_dialogs_raw_arguments_show_hidden_characters_and_still_parse(home, ws):
    args = {"command": "echo safe\u202e; rm -rf ~\u2028"}
    request = {"id": "c", "name": "exec_command", "title": "运行命令", "args": args}
    home.mkdir(parents=True, exist_ok=True)
    registry = default_registry()
    context = ToolContext(home=home, registry=registry)
    description = registry.describe("exec_command", args, context)
    dialog = ApprovalScreen({**request, "description": description})
    app = DialogHost(dialog)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is dialog)
        raw = dialog.query_one("#args", TextArea).text
    assert "\u202e" not in raw and "\\u202e" in raw and "\\u2028" in raw
    assert json.loads(raw) == args  # what runs after "edit" is what was there
