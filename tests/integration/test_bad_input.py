"""Bad input: one clear Chinese sentence, exit code 2, no traceback, nothing stored."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply


def assert_refused(result, phrase: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and phrase in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def portfolio(home) -> dict:
    return json.loads(cli("portfolio", "list", "--json").stdout)


@pytest.mark.parametrize(
    "args, phrase",
    [
        (["add", "600519", "--shares", str(10**22), "--cost", "10"], "股数"),
        (["add", "600519", "--shares", "100", "--cost", "inf"], "成本价"),
        (["add", "600519", "--shares", "100", "--cost", "nan"], "成本价"),
        (["add", "600519", "--shares", "100", "--cost", "10", "--stop-loss", "-50"], "止损价"),
        (["add", "600519", "--shares", "100", "--cost", "10", "--buy-dt", "00010101"], "1990"),
        (["cash", "nan"], "现金"),
        (["cash", "inf"], "现金"),
    ],
)
def test_impossible_portfolio_values_are_refused(home, args, phrase):
    assert cli("portfolio", "cash", "1000").returncode == 0
    assert_refused(cli("portfolio", *args), phrase)
    assert portfolio(home) == {"positions": [], "cash": 1000.0}
    assert len(json.loads(cli("portfolio", "history", "--json").stdout)["history"]) == 1


def test_a_config_file_that_is_not_utf8_is_one_sentence(home):
    home.mkdir()
    (home / "wyckoff.json").write_bytes(b'{"models": ["\xff\xfe"]}')
    assert_refused(cli("model", "list"), "UTF-8")


def test_a_config_file_nested_absurdly_deep_is_one_sentence(home):
    home.mkdir()
    (home / "wyckoff.json").write_text("[" * 100_000 + "]" * 100_000)
    assert_refused(cli("model", "list"), "嵌套过深")


@pytest.mark.parametrize("shape", ["file", "under-a-file"])
def test_a_wyckoff_home_that_is_not_a_folder_is_one_sentence(tmp_path, shape):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    target = blocker if shape == "file" else blocker / "home"
    assert_refused(cli("portfolio", "list", env={"WYCKOFF_HOME": str(target)}), "WYCKOFF_HOME")


@pytest.mark.parametrize("where", ["stdin", "argument"])
def test_a_question_that_is_not_utf8_is_refused(home, openai_server, where):
    add_scripted_model(openai_server, "local")
    openai_server.script(Reply(text="不该被调用"))
    question = b"\xff\xfe\xe4\xbd question"
    if where == "stdin":
        result = cli_bytes([b"ask", b"-"], question)
    else:
        result = cli_bytes([b"ask", question], b"")
    assert result.returncode == 2 and b"UTF-8" in result.stderr
    assert b"Traceback" not in result.stderr and openai_server.requests == []
    assert json.loads(cli("session", "list", "--json").stdout)["sessions"] == []


def cli_bytes(args: list[bytes], stdin: bytes):
    import subprocess
    import sys

    from tests.conftest import cli_env

    return subprocess.run(
        [sys.executable.encode(), b"-m", b"wyckoff", *args],
        input=stdin,
        capture_output=True,
        env=cli_env(),
        timeout=120,
    )


def test_skills_are_only_regular_files_inside_the_skills_folder(home, tmp_path):
    folder = home / "skills"
    folder.mkdir(parents=True)
    outside = tmp_path / "secret.md"
    outside.write_text("---\nname: leak\ndescription: 外部文件\n---\n外部内容\n")
    (folder / "leak.md").symlink_to(outside)
    os.mkfifo(folder / "pipe.md")
    (folder / "mine.md").write_text("---\nname: mine\ndescription: 我的技能\n---\n正文\n")
    result = cli("skills", "list")
    assert result.returncode == 0, result.stderr
    assert "mine" in result.stdout and "leak" not in result.stdout
    assert "leak.md" in result.stderr and "pipe.md" in result.stderr


def test_a_very_long_stock_text_is_refused_at_once(home):
    assert_refused(cli("analyze", "贵州茅台" * 2500), "最长 40 个字")


@pytest.mark.parametrize("cost", ["inf", "-inf", "nan"])
def test_a_cost_that_is_not_a_finite_number_is_refused(demo_home, cost):
    result = cli("analyze", "000001", "--cost", cost, "--json")  # a stock the demo market has
    assert_refused(result, "参数 --cost 的值无效：必须是有限的数")
    assert result.stdout == ""  # no half-valid JSON for a script to read


def strict_json(text: str):
    """JSON as a strict parser reads it: NaN and Infinity are not JSON."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_json_outputs_stay_valid_when_a_model_sends_nan(home, openai_server):
    add_scripted_model(openai_server)
    nan_args = '{"limit": NaN, "ratio": Infinity}'
    for _ in range(2):
        openai_server.script(
            Reply(tool_calls=[("check_background_tasks", {})], raw_arguments=nan_args),
            Reply(text="好"),
        )
    streamed = cli("ask", "hi", "-o", "stream-json")
    events = [strict_json(line) for line in streamed.stdout.splitlines()]
    (started,) = [e for e in events if e["type"] == "tool_start"]
    assert started["args"] == {"limit": None, "ratio": None}
    whole = cli("ask", "hi", "-o", "json")
    assert strict_json(whole.stdout)["text"] == "好"
    traces = strict_json(cli("trace", "list", "--json").stdout)["traces"]
    for line in cli("trace", "show", traces[0]["id"]).stdout.splitlines():
        strict_json(line)
