"""Read-only commands run without Typer in their usual forms (cli/light_commands.py): each
form a user types prints, byte for byte, what the Typer command prints, and exits the same."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import cli, cli_env
from wyckoff.cli.light_commands import LIGHT_COMMANDS
from wyckoff.cli.pricing import price
from wyckoff.cli.providers.base import token_usage
from wyckoff.config import ModelConfig
from wyckoff.store import Store
from wyckoff.usage_store import record_usage

SECRET = "sk-light-supersecret-0123456789"
THROUGH_TYPER = "from wyckoff.cli.app import main; main()"  # the entry point minus the launcher
FORMS = (
    ("model", "list"),
    ("model", "list", "--json"),
    ("model", "list", "--help"),
    ("model", "list", "--jsn"),
    ("model", "list", "--json", "--json"),
    ("model", "usage"),
    ("model", "usage", "--json", "--days", "7"),
    ("model", "usage", "--days", "0"),
    ("model", "usage", "--days", "x"),
    ("model", "usage", "--days=7"),
    ("model", "usage", "--days"),
    ("memory", "list"),
    ("memory", "list", "--type", "preference", "--json"),
    ("memory", "list", "--type", "nonsense"),
    ("memory", "list", "--type", "--json"),
    ("watch", "list"),
    ("watch", "list", "--tag", "白酒", "--json"),
    ("watch", "list", "--json", "--tag", "没有这个标签"),
    ("watch", "list", "--tag"),
    ("watch", "list", "--tag=白酒"),
)


def run(*command: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, env=cli_env(env), timeout=120
    )
    return done.returncode, done.stdout, done.stderr


def assert_same_both_ways(env: dict[str, str] | None = None) -> list[tuple[int, str, str]]:
    """Every form, through the console entry point and through Typer alone: the same."""
    outcomes = []
    for form in FORMS:
        light = run("-m", "wyckoff", *form, env=env)
        typer = run("-c", THROUGH_TYPER, *form, env=env)
        assert light == typer, form
        assert "Traceback" not in light[2], form
        outcomes.append(light)
    return outcomes


def fill_home(home) -> None:
    """A stored key, a key in the environment, prices, a fallback, some usage, a memory."""
    for args in (
        ("a", "--provider", "claude", "--model", "claude-sonnet-4-5", "--api-key", SECRET),
        ("b", "--provider", "openai", "--model", "deepseek-chat", "--api-key-env", "LIGHT_KEY"),
    ):
        assert cli("model", "add", *args).returncode == 0
    assert cli("model", "cost", "a", "--input-per-1m", "3", "--output-per-1m", "15").returncode == 0
    assert cli("model", "fallback", "b").returncode == 0
    model = ModelConfig(id="a", provider="claude", model="claude-sonnet-4-5", input_per_1m=3)
    usage = token_usage(1000, 200, 10_000)
    record_usage(Store.in_home(home), model, usage, price(model, usage))
    assert cli("memory", "add", "--type", "preference", "只看低估值的白酒股").returncode == 0
    assert cli("watch", "add", "茅台", "--tag", "白酒", "--note", "等回踩").returncode == 0
    assert cli("watch", "add", "000001", "--tag", "银行").returncode == 0


def test_with_an_empty_home_both_ways_print_the_same(home):
    outcomes = assert_same_both_ways()
    assert "还没有配置模型" in outcomes[0][2] and outcomes[0][0] == 0
    assert json.loads(outcomes[1][1])["models"] == []


def test_with_several_models_both_ways_print_the_same_and_no_key(home):
    fill_home(home)
    outcomes = assert_same_both_ways({"LIGHT_KEY": "sk-from-the-environment-99"})
    table, listed, usage_table = outcomes[0][1], json.loads(outcomes[1][1]), outcomes[5][1]
    assert "已保存在配置中" in table and "环境变量 LIGHT_KEY（已设置）" in table
    assert [m["fallback"] for m in listed["models"]] == [False, True]
    assert "10,000" in usage_table  # the cache reads recorded above
    assert "只看低估值的白酒股" in outcomes[11][1]
    assert "贵州茅台" in outcomes[15][1] and "等回踩" in outcomes[15][1]
    assert [w["code"] for w in json.loads(outcomes[16][1])["watchlist"]] == ["600519"]
    assert json.loads(outcomes[17][1])["watchlist"] == []
    printed = "".join(out + err for _, out, err in outcomes)
    assert SECRET not in printed and "sk-from-the-environment-99" not in printed


def test_with_a_model_found_in_the_environment_both_ways_print_the_same(home):
    outcomes = assert_same_both_ways({"OPENAI_API_KEY": "sk-env-detected-0123456789"})
    assert "从环境变量检测到" in outcomes[0][2]


def test_a_broken_config_file_is_one_chinese_sentence_both_ways(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "wyckoff.json").write_text('{"models": [', encoding="utf-8")
    outcomes = assert_same_both_ways()
    code, out, err = outcomes[0]
    assert code == 2 and not out and err.startswith("错误：配置文件") and err.count("\n") == 1
    assert (home / "wyckoff.json").read_text(encoding="utf-8") == '{"models": ['


@pytest.mark.parametrize(
    ("form", "light"),
    [
        (("model", "list"), True),
        (("model", "list", "--json"), True),
        (("model", "usage", "--days", "7", "--json"), True),
        (("model", "list", "--help"), False),
        (("model", "usage", "--days", "0"), False),
        (("memory", "list", "--type", "preference"), True),
        (("memory", "list", "--type=preference"), False),
        (("watch", "list"), True),
        (("watch", "list", "--tag", "白酒", "--json"), True),
        (("watch", "list", "--tag"), False),
    ],
)
def test_the_usual_forms_run_without_typer_and_the_others_through_it(home, form, light):
    probe = (
        f"import sys\nsys.argv = ['wyckoff', *{form!r}]\n"
        "from wyckoff.cli.launcher import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('typer' in sys.modules)"
    )
    code, out, err = run("-c", probe)
    assert out.splitlines()[-1] == str(not light), err


def test_each_light_option_is_its_typer_commands_option():
    """The light table knows no option Typer does not, under the same keyword and kind."""
    import typer.main

    from wyckoff.cli.app import app

    root = typer.main.get_command(app)
    for (group, name), light in LIGHT_COMMANDS.items():
        command = root.get_command(None, group).get_command(None, name)
        options = {
            opt: param
            for param in command.params
            for opt in param.opts
            if opt not in ("-h", "--help")
        }
        assert set(light.flags) | set(light.values) <= set(options), (group, name)
        for flag, keyword in light.flags.items():
            assert options[flag].is_flag and options[flag].name == keyword
        for option, (keyword, _) in light.values.items():
            assert not options[option].is_flag and options[option].name == keyword
        assert not any(param.required or param.envvar for param in command.params)
