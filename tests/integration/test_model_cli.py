"""`wyckoff model ...` and the config file, run as a user would run them."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import stat
import sys
import termios

import pytest

from tests.conftest import base_url_of, cli, cli_env
from tests.model_servers import Reply
from tests.processes import eventually
from wyckoff.cli.pricing import price
from wyckoff.cli.providers.base import token_usage
from wyckoff.cli.providers.context_windows import infer_context_window
from wyckoff.config import ModelConfig, load_config
from wyckoff.store import Store
from wyckoff.usage_store import record_usage

SECRET = "sk-ant-supersecret-0123456789"


def _models(home) -> dict:
    result = cli("model", "list", "--json")
    assert result.returncode == 0, result.stderr
    return {m["id"]: m for m in json.loads(result.stdout)["models"]}


def test_add_list_masks_keys_and_writes_0600(home):
    added = cli(
        "model",
        "add",
        "claude",
        "--provider",
        "claude",
        "--model",
        "claude-sonnet-4-5",
        "--api-key",
        SECRET,
    )
    assert added.returncode == 0, added.stderr
    assert "已添加模型 claude（默认）" in added.stderr
    cli(
        "model",
        "add",
        "ds",
        "--provider",
        "openai",
        "--model",
        "deepseek-chat",
        "--base-url",
        "https://api.deepseek.com",
        "--api-key-env",
        "DEEPSEEK_API_KEY",
    )

    config_file = home / "wyckoff.json"
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    listed = cli("model", "list")
    listed_json = cli("model", "list", "--json")
    for output in (listed.stdout + listed.stderr, listed_json.stdout):
        assert SECRET not in output and "supersecret" not in output
    models = _models(home)
    assert models["claude"]["default"] and models["claude"]["key"] == "已保存在配置中"
    assert models["ds"]["key"] == "环境变量 DEEPSEEK_API_KEY（未设置）"
    assert (
        models["ds"]["context_window"] == 128_000 and not models["ds"]["context_window_configured"]
    )
    assert "claude" in listed.stdout and "默认" in listed.stdout


def test_default_fallback_cost_and_rm(home):
    cli(
        "model",
        "add",
        "a",
        "--provider",
        "claude",
        "--model",
        "claude-sonnet-4-5",
        "--api-key-env",
        "ANTHROPIC_API_KEY",
    )
    cli(
        "model",
        "add",
        "b",
        "--provider",
        "gemini",
        "--model",
        "gemini-2.5-pro",
        "--api-key-env",
        "GEMINI_API_KEY",
    )
    assert cli("model", "fallback", "b").returncode == 0
    assert (
        cli(
            "model",
            "cost",
            "a",
            "--input-per-1m",
            "3",
            "--output-per-1m",
            "15",
            "--cache-read-per-1m",
            "0.3",
            "--context-window",
            "180000",
        ).returncode
        == 0
    )
    models = _models(home)
    assert models["a"]["default"] and models["b"]["fallback"]
    assert (
        models["a"]["input_per_1m"],
        models["a"]["output_per_1m"],
        models["a"]["cache_read_per_1m"],
    ) == (3, 15, 0.3)
    assert models["a"]["context_window"] == 180_000

    same = cli("model", "fallback", "a")
    assert same.returncode == 2 and "已是默认模型" in same.stderr
    assert cli("model", "default", "b").returncode == 0
    models = _models(home)
    assert (
        models["b"]["default"] and not models["b"]["fallback"]
    )  # a model is never its own fallback

    assert cli("model", "rm", "b").returncode == 0
    models = _models(home)
    assert list(models) == ["a"] and models["a"]["default"]
    unknown = cli("model", "rm", "zzz")
    assert unknown.returncode == 2 and "没有名为 'zzz' 的模型" in unknown.stderr
    assert cli("model", "fallback", "none").returncode == 0


def test_corrupt_config_is_reported_and_never_rewritten(home):
    home.mkdir(parents=True, exist_ok=True)
    config_file = home / "wyckoff.json"
    broken = '{"models": [ {"id": "x", '
    config_file.write_text(broken)
    for args in (
        ["model", "list"],
        ["model", "add", "y", "--provider", "claude", "--model", "m"],
        ["model", "default", "x"],
    ):
        result = cli(*args)
        assert result.returncode == 2
        assert str(config_file) in result.stderr and "不是有效的 JSON" in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert config_file.read_text() == broken


def test_invalid_config_names_the_problem(home):
    home.mkdir(parents=True, exist_ok=True)
    config_file = home / "wyckoff.json"
    original = json.dumps({"models": [{"id": "x", "provider": "chatgpt", "model": "m"}]})
    config_file.write_text(original)
    result = cli("model", "list")
    assert result.returncode == 2
    assert "models.0.provider" in result.stderr and "Traceback" not in result.stderr
    config_file.write_text(json.dumps({"models": [], "default": "ghost"}))
    assert "default 指向不存在的模型 'ghost'" in cli("model", "list").stderr
    config_file.write_text(original)
    assert config_file.read_text() == original


def test_zero_config_detects_keys_in_the_environment(home):
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-fromenv-123456789",
        "DEEPSEEK_API_KEY": "sk-ds-fromenv-123456789",
    }
    result = cli("model", "list", "--json", env=env)
    models = {m["id"]: m for m in json.loads(result.stdout)["models"]}
    assert set(models) == {"claude", "deepseek"}
    assert models["claude"]["from_env"] and models["claude"]["default"]
    assert models["deepseek"]["base_url"] == "https://api.deepseek.com"
    assert "fromenv" not in result.stdout
    table = cli("model", "list", env=env)
    assert "从环境变量检测到" in table.stderr
    assert not (home / "wyckoff.json").exists()  # detection writes nothing


def test_model_test_reports_latency(home, openai_server):
    openai_server.script(Reply(text="pong", usage=(7, 1, 0, 0)))
    cli(
        "model",
        "add",
        "local",
        "--provider",
        "openai",
        "--model",
        "qwen3",
        "--base-url",
        base_url_of(openai_server),
        "--api-key",
        "sk-local-0123456789",
    )
    result = cli("model", "test", "local")
    assert result.returncode == 0, result.stderr
    assert "local 可用" in result.stdout and "ms" in result.stdout and "pong" in result.stdout
    usage = cli("model", "usage", "--json")
    (row,) = json.loads(usage.stdout)["models"]
    assert (row["model_id"], row["calls"], row["input_tokens"], row["output_tokens"]) == (
        "local",
        1,
        7,
        1,
    )


def test_model_test_auth_failure_is_one_clear_sentence_without_the_key(home, anthropic_server):
    key = "sk-ant-leaky-0123456789abcdef"
    anthropic_server.script(Reply(status=401, error_message=f"invalid x-api-key {key}"))
    cli(
        "model",
        "add",
        "c",
        "--provider",
        "claude",
        "--model",
        "claude-sonnet-4-5",
        "--base-url",
        anthropic_server.base_url,
        "--api-key",
        key,
    )
    result = cli("model", "test", "c")
    assert result.returncode == 1
    assert "认证失败（HTTP 401）" in result.stderr
    assert key not in result.stderr + result.stdout and "Traceback" not in result.stderr


def test_usage_sums_tokens_and_cost_per_model(home):
    store = Store.in_home(home)
    home.mkdir(parents=True, exist_ok=True)
    priced = ModelConfig(
        id="c",
        provider="claude",
        model="claude-sonnet-4-5",
        input_per_1m=3,
        output_per_1m=15,
        cache_read_per_1m=0.3,
    )

    def call(model: ModelConfig, usage) -> None:
        record_usage(store, model, usage, price(model, usage))

    call(priced, token_usage(1000, 200, 10_000, 2000))
    call(priced, token_usage(1000, 200))
    call(ModelConfig(id="free", provider="openai", model="llama3"), token_usage(50, 5))
    result = cli("model", "usage", "--json", "--days", "7")
    rows = {r["model_id"]: r for r in json.loads(result.stdout)["models"]}
    assert (
        rows["c"]["input_tokens"] == 2000
        and rows["c"]["cache_read_tokens"] == 10_000
        and rows["c"]["cache_write_tokens"] == 2000
    )
    # 2000*3 + 400*15 + 10000*0.3 + 2000*3*1.25 = 6000 + 6000 + 3000 + 7500 per 1M
    assert abs(rows["c"]["cost"] - 0.0225) < 1e-9
    assert rows["free"]["cost"] is None
    table = cli("model", "usage")
    assert "未定价" in table.stdout and "0.0225" in table.stdout


def test_price_is_none_until_configured():
    model = ModelConfig(id="x", provider="openai", model="gpt-4.1")
    assert price(model, token_usage(10, 10)) is None


def test_context_windows_are_inferred_from_names():
    assert infer_context_window("claude-opus-4-1") == 200_000
    assert infer_context_window("gemini-2.5-pro") == 1_000_000
    assert infer_context_window("gpt-4o-mini") == 128_000
    assert infer_context_window("gpt-4.1-mini") == 1_000_000
    assert infer_context_window("deepseek-chat") == 128_000
    assert infer_context_window("deepseek-coder") == 64_000
    assert infer_context_window("qwen-plus") == 128_000
    assert infer_context_window("moonshot-v1-32k") == 32_000
    assert infer_context_window("kimi-k2-0905") == 256_000
    assert infer_context_window("my-local-model") == 64_000


def test_add_without_provider_off_a_tty_says_what_is_missing(home):
    result = cli("model", "add", "x", "--model", "m")
    assert result.returncode == 2 and "缺少 --provider" in result.stderr
    bad_url = cli(
        "model", "add", "x", "--provider", "openai", "--model", "m", "--base-url", "ftp://nope"
    )
    assert bad_url.returncode == 2 and "参数 --base-url 的值无效" in bad_url.stderr
    assert not (home / "wyckoff.json").exists()


def test_updating_a_model_keeps_what_was_not_given(home):
    claude = ["--provider", "claude", "--model", "claude-sonnet-4-5"]
    assert cli("model", "add", "a", *claude, "--api-key", SECRET).returncode == 0
    cli("model", "add", "b", "--provider", "gemini", "--model", "gemini-2.5-pro")
    assert cli("model", "cost", "a", "--input-per-1m", "3", "--output-per-1m", "15").returncode == 0
    updated = cli("model", "add", "a", "--model", "claude-opus-4", "--api-key-env", "MY_KEY")
    assert updated.returncode == 0 and "已更新模型 a（默认）" in updated.stderr
    models = _models(home)
    assert (models["a"]["provider"], models["a"]["model"]) == ("claude", "claude-opus-4")
    assert (models["a"]["input_per_1m"], models["a"]["output_per_1m"]) == (3, 15)
    assert models["a"]["key"] == "环境变量 MY_KEY（未设置）" and models["a"]["default"]
    assert SECRET not in (home / "wyckoff.json").read_text()  # the new key source replaced it
    before = (home / "wyckoff.json").read_text()
    bad = cli("model", "cost", "b", "--input-per-1m", "-1", "--output-per-1m", "1")
    assert bad.returncode == 2 and "参数 --input-per-1m 的值无效" in bad.stderr
    assert (home / "wyckoff.json").read_text() == before


def test_config_written_by_cli_loads_back(home):
    cli(
        "model",
        "add",
        "g",
        "--provider",
        "gemini",
        "--model",
        "gemini-2.5-flash",
        "--api-key-env",
        "GEMINI_API_KEY",
    )
    config = load_config(home)
    assert config.default == "g" and config.models[0].api_key_env == "GEMINI_API_KEY"


def test_help_is_served_from_a_cache_identical_to_typers_output(home):
    first = cli("--help")
    assert first.returncode == 0 and "用法：wyckoff" in first.stdout and "portfolio" in first.stdout
    (cached,) = list((home / "cache").glob("help-*.txt"))
    second = cli("-h")
    assert second.returncode == 0 and second.stdout == first.stdout == cached.read_text(
        encoding="utf-8"
    )


def at_a_terminal(*args: str, answers: list[tuple[str, str]]) -> tuple[int, str]:
    """`python -m wyckoff ARGS` on a pseudo-terminal (its controlling terminal, so the
    hidden key prompt works), typing each answer once its prompt (a part of it) shows."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the terminal is its stdin, stdout and stderr
        os.execve(sys.executable, [sys.executable, "-m", "wyckoff", *args], cli_env())
    shown, answered_up_to, pending = "", 0, list(answers)
    while True:
        ready, _, _ = select.select([terminal], [], [], 60)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            break
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the child closed the terminal: it has ended
            break
        shown += chunk.decode(errors="replace")
        if pending and pending[0][0] in shown[answered_up_to:]:
            prompt, answer = pending.pop(0)
            if "API key" in prompt:  # typed only once echo is off, or getpass drops it
                assert eventually(lambda: not termios.tcgetattr(terminal)[3] & termios.ECHO)
            os.write(terminal, (answer + "\n").encode())
            answered_up_to = len(shown)
    _, status = os.waitpid(pid, 0)
    os.close(terminal)
    return os.waitstatus_to_exitcode(status), shown


@pytest.mark.parametrize("make_default", ["y", "n"])
def test_interactive_add_asks_the_base_url_and_whether_a_keyless_model_is_the_default(
    home, make_default
):
    code, shown = at_a_terminal(
        "model", "add", "local",
        answers=[
            ("provider（", "openai"),
            ("模型名", "qwen2.5"),
            ("base URL（留空即默认 https://api.openai.com/v1）", "http://127.0.0.1:11434/v1"),
            ("API key", ""),
            ("仍然把它设为默认模型吗？", make_default),
        ],
    )  # fmt: skip
    assert code == 0, shown
    assert "模型 local 没有 API key：只有不需要密钥的端点（如本地 Ollama）能用它。" in shown
    saved = json.loads((home / "wyckoff.json").read_text())
    assert saved["models"][0]["base_url"] == "http://127.0.0.1:11434/v1"
    assert saved.get("default") == ("local" if make_default == "y" else None)
    assert _models(home)["local"]["default"] is (make_default == "y")


def test_an_empty_base_url_answer_keeps_the_providers_own(home):
    code, shown = at_a_terminal(
        "model", "add", "c",
        answers=[
            ("provider（", "claude"),
            ("模型名", "claude-sonnet-4-5"),
            ("base URL（留空即默认 https://api.anthropic.com）", ""),
            ("API key", "sk-ant-typed-0123456789"),
        ],
    )  # fmt: skip
    assert code == 0, shown
    saved = json.loads((home / "wyckoff.json").read_text())
    assert "base_url" not in saved["models"][0] and saved["default"] == "c"
    assert "sk-ant-typed" not in shown


def test_a_script_never_makes_a_keyless_model_the_default_silently(home):
    added = cli("model", "add", "local", "--provider", "openai", "--model", "qwen2.5")
    assert added.returncode == 0, added.stderr
    assert "模型 local 没有 API key" in added.stderr
    assert (
        "local 没有设为默认模型。" in added.stderr
        and "`wyckoff model default local`" in added.stderr
    )
    assert _models(home)["local"]["default"] is False
    asked = cli("ask", "你好")
    assert asked.returncode == 2
    assert (
        "还没有默认模型（已配置：local）：运行 `wyckoff model default ID` 选一个。" in asked.stderr
    )
    assert cli("model", "default", "local").returncode == 0
    assert _models(home)["local"]["default"] is True


def test_cost_updates_any_subset_of_its_fields(home):
    cli("model", "add", "a", "--provider", "claude", "--model", "m", "--api-key-env", "K")
    window = cli("model", "cost", "a", "--context-window", "64000")
    assert window.returncode == 0, window.stderr
    assert "已更新 a：上下文窗口 64,000 token。" in window.stderr
    prices = cli("model", "cost", "a", "--output-per-1m", "15")
    assert prices.returncode == 0 and "输出价 15/1M" in prices.stderr
    model = _models(home)["a"]
    assert (model["context_window"], model["output_per_1m"], model["input_per_1m"]) == (
        64000,
        15,
        None,
    )
    nothing = cli("model", "cost", "a")
    assert nothing.returncode == 2 and "没有要改的项" in nothing.stderr
