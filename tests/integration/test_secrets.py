"""Secrets: a key of any shape, from whichever environment variable, never reaches a file
under WYCKOFF_HOME nor any output; redaction never mangles ordinary text; the home is
private (folders 0700, files 0600) even when it already existed with looser modes."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from pydantic import BaseModel

from tests.conftest import cli, model_config
from tests.model_servers import Reply
from wyckoff.cli.background import BackgroundTaskManager
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.cli.providers.factory import make_provider
from wyckoff.cli.runtime import AgentRuntime
from wyckoff.cli.tools import ToolSpec
from wyckoff.store import Store

ODD_KEY = "Zq9~wEird.kEy:with;chars"  # no sk-/AIza shape: only the configured value finds it
KEY_ENV = {"ODD_PROVIDER_SECRET": ODD_KEY}


def add_model_with_key_env(server) -> None:
    result = cli(
        "model", "add", "m", "--provider", "openai", "--model", "gpt-4.1",
        "--base-url", server.base_url + "/v1", "--api-key-env", "ODD_PROVIDER_SECRET",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def files_holding(home: Path, text: str) -> list[str]:
    needle = text.encode()
    return [
        str(path.relative_to(home))
        for path in home.rglob("*")
        if path.is_file() and needle in path.read_bytes()
    ]


def test_an_error_through_api_key_env_is_readable_and_keyless(openai_server, home):
    """Main's bug: the empty api_key joined the secret list and `replace("", "***")`
    put *** between every character of the message."""
    add_model_with_key_env(openai_server)
    openai_server.script(
        Reply(status=400, error_message=f"model gpt-4.1 not found for key {ODD_KEY}")
    )
    result = cli("ask", "你好", env=KEY_ENV)
    assert result.returncode == 1
    assert "model gpt-4.1 not found for key ***" in result.stderr
    assert ODD_KEY not in result.stderr + result.stdout
    assert files_holding(home, ODD_KEY) == []


def test_a_key_echoed_by_the_model_appears_in_no_file_and_no_output(openai_server, home):
    add_model_with_key_env(openai_server)
    echo = f"你的 key 是 {ODD_KEY}，请保管好。"
    outputs = []
    for output in ("text", "json", "stream-json"):
        openai_server.script(
            Reply(tool_calls=[("search_stock_by_name", {"query": ODD_KEY})]),
            Reply(text=echo, pieces=7),  # the key arrives split over several deltas
        )
        result = cli("ask", f"记住 {ODD_KEY}", "-o", output, env=KEY_ENV)
        assert result.returncode == 0, result.stderr
        outputs += [result.stdout, result.stderr]
    assert "你的 key 是 ***，请保管好。" in outputs[0]
    session = json.loads(cli("session", "list", "--json").stdout)["sessions"][0]["id"]
    trace = json.loads(cli("trace", "list", "--json").stdout)["traces"][0]["id"]
    for command in (
        ("session", "export", session),
        ("session", "export", session, "--format", "json"),
        ("session", "show", session),
        ("trace", "show", trace),
    ):
        shown = cli(*command, env=KEY_ENV)
        assert shown.returncode == 0 and "***" in shown.stdout, shown.stderr
        outputs += [shown.stdout, shown.stderr]
    assert [o for o in outputs if ODD_KEY in o] == []
    assert files_holding(home, ODD_KEY) == []


class EchoParams(BaseModel):
    text: str


def test_spilled_results_archives_tasks_and_traces_never_hold_the_key(
    openai_server, home, monkeypatch
):
    """A result large enough to be spilled to disk, a background task that echoes the key,
    then the whole history compacted into the archive."""
    monkeypatch.setenv("ODD_PROVIDER_SECRET", ODD_KEY)
    home.mkdir(parents=True, exist_ok=True)
    store = Store.in_home(home)
    page = ToolSpec(
        name="fetch_page",
        description="取网页",
        params=EchoParams,
        func=lambda p, c: (p.text + " ") * 2000,
        title="取网页",
    )
    echo = ToolSpec(
        name="echo_later",
        description="后台回显",
        params=EchoParams,
        func=lambda p, c: {"echo": p.text},
        title="回显",
        background=True,
    )
    registry = default_registry()
    registry.register(page)
    registry.register(echo)
    config = model_config(openai_server, api_key=None, api_key_env="ODD_PROVIDER_SECRET")
    runtime = AgentRuntime(
        make_provider(config, stream_timeout_s=5),
        registry,
        home=home,
        store=store,
        background=BackgroundTaskManager(store),
    )
    conversation = Conversation.start(ChatLog(store))
    openai_server.script(
        Reply(
            tool_calls=[
                ("fetch_page", {"text": f"token={ODD_KEY}"}),
                ("echo_later", {"text": ODD_KEY}),
            ]
        ),
        Reply(text="读完了"),
        Reply(text="后台也完成了"),
    )
    conversation.append({"role": "user", "content": f"读一下 {ODD_KEY} " + "行情" * 3000})
    events = list(runtime.run_stream(conversation, wait_for_background=True))
    assert any(e["type"] == "tool_result" and e["ref"] for e in events)  # it was spilled
    task = store.conn.execute("SELECT status, args, result FROM background_tasks").fetchone()
    assert task["status"] == "completed" and "***" in task["result"] + task["args"]
    for i in range(10):
        conversation.append({"role": "user", "content": f"问题 {i} " + "行情" * 2000})
        conversation.append({"role": "assistant", "content": f"回答 {i} {ODD_KEY}" + "分" * 2000})
    openai_server.script(Reply(text=f"摘要：用户给过 key {ODD_KEY}，之后分析了行情。"))
    assert runtime.compact(conversation) is not None
    assert list((home / "context_archive").rglob("*.jsonl"))
    assert files_holding(home, ODD_KEY) == []


def test_a_home_that_existed_with_loose_modes_becomes_private(openai_server, home):
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "old.txt").write_text("x")
    (home / "wyckoff.json").write_text('{"models": []}')
    for path in (home, home / "notes"):
        path.chmod(0o755)
    for path in (home / "notes" / "old.txt", home / "wyckoff.json"):
        path.chmod(0o644)
    add_model_with_key_env(openai_server)
    openai_server.script(Reply(text="好"))
    assert cli("ask", "你好", env=KEY_ENV).returncode == 0
    assert cli("--help").returncode == 0
    modes = {
        str(path.relative_to(home)) or ".": stat.S_IMODE(path.stat().st_mode)
        for path in [home, *home.rglob("*")]
        if not path.is_symlink()
    }
    assert "wyckoff.db" in modes and any(name.startswith("scratchpad/") for name in modes)
    loose = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (home / name).is_dir() else 0o600)
    }
    assert loose == {}
