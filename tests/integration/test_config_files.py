"""wyckoff.json and mcp.json as a user's processes and a broken disk leave them: commands run
side by side lose nothing, a broken file is one Chinese sentence naming it (never a
traceback) and `ask` goes on without what the broken file held."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import add_scripted_model, cli, spawn_cli
from tests.model_servers import Reply

PARALLEL = 8


def run_side_by_side(commands: list[list[str]]) -> None:
    """Start every command at once, then wait for all; each must succeed."""
    running = [spawn_cli(*command) for command in commands]
    for process in running:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr


def test_parallel_model_adds_are_all_kept(home):
    run_side_by_side(
        [
            ["model", "add", f"m{i}", "--provider", "openai", "--model", "gpt-4.1",
             "--api-key-env", f"KEY_{i}"]
            for i in range(PARALLEL)
        ]
    )  # fmt: skip
    config = home / "wyckoff.json"
    saved = json.loads(config.read_text("utf-8"))
    assert sorted(m["id"] for m in saved["models"]) == [f"m{i}" for i in range(PARALLEL)]
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_parallel_mcp_adds_are_all_kept(home):
    run_side_by_side([["mcp", "add", f"s{i}", "--", "server", str(i)] for i in range(PARALLEL)])
    config = home / "mcp.json"
    saved = json.loads(config.read_text("utf-8"))
    assert sorted(s["name"] for s in saved) == [f"s{i}" for i in range(PARALLEL)]
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


# --- broken files: one sentence naming the file, and `ask` goes on without them -------------------

BROKEN = {
    "not-utf8": lambda path: path.write_bytes(b'[{"name": "\xff\xfe"}]'),
    "deep": lambda path: path.write_text("[" * 100_000 + "]" * 100_000, "utf-8"),
    "directory": lambda path: path.mkdir(),
    "fifo": lambda path: os.mkfifo(path),  # reading it would wait for a writer forever
}


def one_sentence_naming(stderr: str, path: Path) -> bool:
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and str(path) in lines[0] and "Traceback" not in stderr


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_mcp_json_costs_its_servers_not_the_question(openai_server, home, kind):
    add_scripted_model(openai_server)
    BROKEN[kind](home / "mcp.json")
    listed = cli("mcp", "list")
    assert listed.returncode == 2 and one_sentence_naming(listed.stderr, home / "mcp.json")
    openai_server.script(Reply(text="茅台今天没有新信号。"))
    asked = cli("ask", "茅台怎么样")
    assert asked.returncode == 0, asked.stderr
    assert "茅台今天没有新信号。" in asked.stdout
    assert (
        one_sentence_naming(asked.stderr, home / "mcp.json") and "没有加载任何 MCP" in asked.stderr
    )


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_wyckoff_json_is_one_sentence_and_left_as_it_is(home, kind):
    home.mkdir(parents=True, exist_ok=True)
    config = home / "wyckoff.json"
    BROKEN[kind](config)
    before = config.read_bytes() if config.is_file() else None
    for args in (("ask", "茅台怎么样"), ("model", "list"), ("model", "add", "m", "--provider", "openai", "--model", "x")):  # fmt: skip
        result = cli(*args)
        assert result.returncode == 2 and one_sentence_naming(result.stderr, config), result.stderr
    assert (config.read_bytes() if config.is_file() else None) == before


def test_a_warning_about_a_skill_file_never_shows_a_key_in_it(home):
    folder = home / "skills"
    folder.mkdir(parents=True)
    (folder / "leak.md").write_text("---\nsk-live-abcdef0123456789\n---\nbody", "utf-8")
    listed = cli("skills", "list")
    assert "已跳过技能文件" in listed.stderr and "front matter" in listed.stderr
    assert "abcdef0123456789" not in listed.stderr


MODEL = {"id": "m", "provider": "openai", "model": "gpt-4.1", "api_key": "sk-test-0123456789"}


@pytest.mark.parametrize(
    ("config", "where", "known"),
    [
        ({"bogus": 1}, "bogus", "models、default、fallback、stream_timeout_s、data、sweep"),
        ({"memory": {"bogus": 1}}, "memory.bogus", "extract_after_ask"),
        ({"data": {"token": "x"}}, "data.token", "source、tushare_token、tushare_url"),
        ({"sweep": {"worker": 2}}, "sweep.worker", "cluster、workers"),
        ({"ledger": {"brokr": "a"}}, "ledger.brokr", "broker、brokers"),
        (
            {"ledger": {"brokers": {"华泰": {"rate": 0.0002}}}},
            "ledger.brokers.华泰.rate",
            "commission_rate、min_commission",
        ),
        ({"models": [{**MODEL, "key": "x"}]}, "models.0.key", "id、provider、model、base_url"),
    ],
)
def test_an_unknown_key_in_any_section_is_named_with_the_keys_it_may_be(home, config, where, known):
    """Every section is as strict as the top level, and says what the key may have been;
    the file, models and all, is left as it was."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "wyckoff.json"
    path.write_text(json.dumps({"models": [MODEL], **config}, ensure_ascii=False), "utf-8")
    saved = path.read_bytes()
    for command in (["model", "list"], ["model", "cost", "m", "--context-window", "128000"]):
        result = cli(*command)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"错误：配置文件 {path} 有误：{where}：不认识的字段（")
        assert f"这里可用的有：{known}" in result.stderr
    assert path.read_bytes() == saved


def test_an_unknown_key_in_mcp_json_is_refused_not_dropped(home):
    home.mkdir(parents=True, exist_ok=True)
    path = home / "mcp.json"
    path.write_text(json.dumps([{"name": "notes", "command": ["server"], "trsut": True}]))
    saved = path.read_bytes()
    listed = cli("mcp", "list")
    assert listed.returncode == 2
    assert listed.stderr.startswith(f"错误：{path} 第 1 项有误：trsut：不认识的字段（")
    assert "trust" in listed.stderr
    assert cli("mcp", "add", "other", "--", "server").returncode == 2
    assert path.read_bytes() == saved  # not rewritten without the misspelt key
