"""The command line speaks Chinese: every help page, a mistyped command, a bad option value."""

from __future__ import annotations

import re

import pytest
import typer.main

from tests.conftest import cli
from wyckoff.cli.app import app

CLICK_ENGLISH = re.compile(
    r"Usage:|Options:|Commands:|Arguments:|Show this message|\[default:|\[required\]|\[OPTIONS\]"
)


def command_paths(command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            paths += command_paths(sub, (*path, name))
    return paths


def test_every_help_page_is_in_chinese(home):
    paths = command_paths(typer.main.get_command(app))
    assert len(paths) > 30
    for path in paths:
        shown = cli(*path, "--help")
        assert shown.returncode == 0, (path, shown.stderr)
        assert shown.stdout.startswith(f"用法：wyckoff {' '.join(path)}".rstrip()), path
        assert "显示本帮助并退出" in shown.stdout, path
        assert not CLICK_ENGLISH.search(shown.stdout), (path, CLICK_ENGLISH.search(shown.stdout))
        assert not re.search(r"^\s*[，。]", shown.stdout, re.M), path


def test_a_help_page_shows_defaults_in_chinese(home):
    shown = cli("backtest", "--help").stdout
    assert "[默认：10]" in shown and "选项：" in shown and "子命令：" not in shown
    assert "命令：" in shown and "用法：wyckoff backtest [选项] 子命令 [参数]..." in shown


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["scren"], "错误：没有子命令 scren（是不是 screen？）。用 `wyckoff -h` 查看用法。\n"),
        (
            ["model", "ad"],
            "错误：没有子命令 ad（是不是 add？）。用 `wyckoff model -h` 查看用法。\n",
        ),
        (["xyzzy"], "错误：没有子命令 xyzzy。用 `wyckoff -h` 查看用法。\n"),
        (["backtest", "--hold-days", "0"], "错误：参数 --hold-days 的值无效：不能小于 1。\n"),
        (["analyze", "600519", "--cost", "-1"], "错误：参数 --cost 的值无效：不能小于 0.0。\n"),
        (
            ["approvals", "approve", "abc"],
            "错误：参数 ID 的值无效：需要一个整数。用 `wyckoff approvals approve -h` 查看用法。\n",
        ),
        (
            ["alert", "rm", "x"],
            "错误：参数 ID 的值无效：需要一个整数。用 `wyckoff alert rm -h` 查看用法。\n",
        ),
        (
            ["portfolio", "cash", "abc"],
            "错误：参数 AMOUNT 的值无效：需要一个数字。用 `wyckoff portfolio cash -h` 查看用法。\n",
        ),
        (["session", "show"], "错误：缺少参数 ID。用 `wyckoff session show -h` 查看用法。\n"),
    ],
)
def test_usage_errors_are_one_chinese_sentence_naming_the_option(home, args, expected):
    result = cli(*args)
    assert result.returncode == 2
    assert result.stderr == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--input-per-1m", "-5"], "错误：参数 --input-per-1m 的值无效：不能小于 0.0。\n"),
        (["--context-window", "10"], "错误：参数 --context-window 的值无效：不能小于 1024。\n"),
    ],
)
def test_a_bad_model_setting_names_its_option_and_keeps_the_config(home, args, expected):
    added = cli("model", "add", "m", "--provider", "openai", "--model", "gpt-4.1", "--api-key", "k")
    assert added.returncode == 0, added.stderr
    saved = (home / "wyckoff.json").read_text()
    result = cli("model", "cost", "m", *args)
    assert (result.returncode, result.stderr) == (2, expected)
    assert (home / "wyckoff.json").read_text() == saved


def test_no_argument_is_named_by_a_python_parameter_in_errors_or_help():
    """An argument's error names it as `-h` shows it: ID, not approval_id."""
    command = typer.main.get_command(app)
    shown = {
        (path, param.metavar or param.name)
        for path in command_paths(command)
        for param in _command_at(command, path).params
        if param.param_type_name == "argument"
    }
    assert len(shown) > 30
    assert not [(path, name) for path, name in shown if "_" in name]


def _command_at(command, path: tuple[str, ...]):
    for name in path:
        command = command.commands[name]
    return command


def test_memory_tables_name_types_and_matches_in_chinese(home):
    assert cli("memory", "add", "贵州茅台跌破 MA200 就减半仓").returncode == 0
    listed = cli("memory", "list").stdout
    assert "│ 偏好 " in listed and "preference" not in listed
    found = cli("memory", "search", "600519").stdout
    assert "匹配方式" in found and "│ 股票代码 " in found
    assert not re.search(r"│ (preference|code|fts|keyword) ", found)


def test_numbers_are_written_one_way_per_kind(demo_home):
    """Prices with 2 decimals and thousands separators, changes signed with 2 decimals."""
    rows = [line for line in cli("market").stdout.splitlines() if line.startswith("│ 0")]
    cells = [[cell.strip() for cell in row.strip("│ ").split("│")] for row in rows]
    assert cells and all(re.fullmatch(r"\d{1,3}(,\d{3})*\.\d{2}", c[2]) for c in cells)
    assert all(re.fullmatch(r"[+-]\d+\.\d{2}%", c[3]) for c in cells)
    assert any("," in c[2] for c in cells)  # an index above 1,000
    analysis = cli("analyze", "000001").stdout
    assert re.search(r"收益：5日 [+-]\d+\.\d{2}%  20日 [+-]\d+\.\d{2}%", analysis)


def test_every_option_says_what_it_does_and_shows_its_type_plainly():
    """No bare `--json`, no `<list[str]>` or `<int range>` on a help page."""
    command = typer.main.get_command(app)
    unexplained, pythonic = [], []
    for path in command_paths(command):
        shown = _command_at(command, path)
        context = typer.Context(shown, info_name=path[-1] if path else "wyckoff")
        for param in shown.params:
            record = param.get_help_record(context)
            if record is None:
                continue
            if not record[1].strip():
                unexplained.append((path, record[0]))
            if re.search(r"list\[| range>", record[0]):
                pythonic.append((path, record[0]))
    assert not unexplained and not pythonic, (unexplained, pythonic)


def test_each_group_help_names_exactly_its_commands():
    command = typer.main.get_command(app)
    for path in command_paths(command):
        group = _command_at(command, path)
        listed = re.search(r": ([a-z-]+(?:, [a-z-]+)*)\.", group.help or "")
        if path and listed and hasattr(group, "commands"):
            shown = {name for name, sub in group.commands.items() if not sub.hidden}
            assert set(listed[1].split(", ")) == shown, path
