"""`wyckoff model ...`: add, list, remove, choose default/fallback, prices, usage, test."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Annotated

import typer

from wyckoff.cli.commands import model_views
from wyckoff.cli.commands.model_views import home_and_config
from wyckoff.cli.output import is_interactive, print_notice
from wyckoff.errors import ConfigError, UsageError
from wyckoff.store import Store
from wyckoff.usage_store import record_usage

app = typer.Typer(
    help="配置模型 / manage models: add, list, rm, default, fallback, cost, usage, test.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

OFFICIAL_BASE_URLS = {
    "claude": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
}

ModelIdArg = Annotated[
    str, typer.Argument(metavar="NAME", help="模型 id（自己起的名字，如 claude、ds）")
]


@contextmanager
def _editing():
    """(home, config) read under the config lock, which is held until the block (with its
    `_save`) ends: commands run side by side never lose each other's changes."""
    from wyckoff.config import config_lock, load_config, wyckoff_home

    home = wyckoff_home()
    with config_lock(home):
        yield home, load_config(home)


def _save(config, home) -> None:
    from wyckoff.config import save_config

    save_config(config, home)


def _editable(config, *model_ids: str):
    """With nothing configured, the environment-detected models the command names become
    explicit entries; the others are never written (so `model add` writes only its own)."""
    from wyckoff.config import effective_config

    if config.models:
        return config
    detected = effective_config(config)
    named = [m for m in detected.models if m.id in model_ids]
    default = detected.default if detected.default in model_ids else None
    return config.model_copy(
        update={"models": named, "default": default or (named[0].id if named else None)}
    )


def _upserted(config, model_id: str, fields: dict):
    """`config.upsert_model`; a wrong value is named by the option that gave it."""
    from wyckoff.cli.usage_errors import invalid_value
    from wyckoff.errors import InvalidField

    try:
        return config.upsert_model(model_id, **fields)
    except InvalidField as err:
        if fields.get(err.field) is None:  # not from an option: the stored config's problem
            raise
        raise invalid_value(err.field, err.problem) from None


def _require(config, model_id: str):
    model = config.find(model_id)
    if model is None:
        known = ", ".join(m.id for m in config.models) or "无"
        raise ConfigError(
            f"没有名为 '{model_id}' 的模型（已配置：{known}）。用 `wyckoff model list` 查看。"
        )
    return model


@app.command("add")
def add(
    model_id: ModelIdArg,
    provider: Annotated[
        str | None, typer.Option("--provider", help="claude | openai | gemini")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="模型名，如 claude-sonnet-4-5、deepseek-chat")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="兼容端点地址（DeepSeek、Qwen、Ollama…）")
    ] = None,
    api_key: Annotated[
        str | None, typer.Option("--api-key", help="API key（保存在 0600 配置文件中）")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="从该环境变量读取 API key（推荐）")
    ] = None,
    context_window: Annotated[
        int | None, typer.Option("--context-window", help="上下文窗口（token）")
    ] = None,
    max_output_tokens: Annotated[
        int | None, typer.Option("--max-output-tokens", help="每次回答最多输出的 token 数")
    ] = None,
) -> None:
    """添加或更新一个模型 / add or update a model."""
    if api_key and api_key_env:
        raise UsageError("--api-key 与 --api-key-env 只能给一个。")
    given = {
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "api_key": api_key,
        "api_key_env": api_key_env,
        "context_window": context_window,
        "max_output_tokens": max_output_tokens,
    }
    before = _editable(home_and_config()[1], model_id)
    keyless_default = None
    if before.find(model_id) is None:  # asked before the lock is held
        if is_interactive():
            given.update(_ask_for_missing(given))
        _require_provider_and_model(model_id, given)
        if not (given["api_key"] or given["api_key_env"]) and before.default is None:
            keyless_default = _keyless_may_be_default(model_id)
    with _editing() as (home, config):
        config = _editable(config, model_id)
        existing = config.find(model_id)
        config = _upserted(config, model_id, given)
        if keyless_default is False and config.default == model_id:
            config = config.model_copy(update={"default": None})
        _save(config, home)
    _report_saved(config, model_id, updated=existing is not None)
    if keyless_default is False:
        print_notice(
            f"{model_id} 没有设为默认模型。它若不需要密钥（如本地 Ollama），运行 "
            f"`wyckoff model default {model_id}`；否则用 `wyckoff model add {model_id} "
            "--api-key-env 变量名` 补上密钥。"
        )


def _keyless_may_be_default(model_id: str) -> bool:
    """A model without a key would become the default: at a terminal the user decides;
    otherwise it is not made the default (said after saving)."""
    print_notice(f"模型 {model_id} 没有 API key：只有不需要密钥的端点（如本地 Ollama）能用它。")
    if not is_interactive():
        return False
    return typer.confirm("仍然把它设为默认模型吗？", default=False)


def _ask_for_missing(given: dict) -> dict:
    """At a terminal, a new model's provider, name, base URL (empty: the provider's own) and
    key are asked for (the key may be left empty and named later with --api-key-env)."""
    from wyckoff.config import PROVIDERS

    provider = given["provider"] or typer.prompt(f"provider（{' | '.join(PROVIDERS)}）")
    answers = {"provider": provider, "model": given["model"] or typer.prompt("模型名")}
    if not given["base_url"]:
        official = OFFICIAL_BASE_URLS.get(provider, "官方地址")
        asked = typer.prompt(f"base URL（留空即默认 {official}）", default="", show_default=False)
        answers["base_url"] = asked.strip() or None  # None: the SDK's own default
    if not (given["api_key"] or given["api_key_env"]):
        prompt = "API key（留空则稍后用 --api-key-env 指定）"
        answers["api_key"] = typer.prompt(prompt, default="", hide_input=True) or None
    return answers


def _require_provider_and_model(model_id: str, given: dict) -> None:
    missing = [name for name in ("provider", "model") if not given[name]]
    if missing:
        raise UsageError(
            f"缺少 {' 和 '.join('--' + m for m in missing)}：例如 `wyckoff model add {model_id} --provider claude --model claude-sonnet-4-5 --api-key-env ANTHROPIC_API_KEY`。"
        )


def _report_saved(config, model_id: str, *, updated: bool) -> None:
    model = config.find(model_id)
    verb = "已更新" if updated else "已添加"
    mark = "（默认）" if config.default == model_id else ""
    print_notice(
        f"{verb}模型 {model_id}{mark}：{model.provider} / {model.model}，密钥来源：{model.key_source()}。"
    )


@app.command("list")
def list_models(
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """列出模型（密钥不显示）/ list models; keys are never printed."""
    model_views.list_models(json_output)


@app.command("rm")
def remove(model_id: ModelIdArg) -> None:
    """删除模型 / remove a model."""
    with _editing() as (home, config):
        _require(config, model_id)
        models = [m for m in config.models if m.id != model_id]
        default = (
            config.default if config.default != model_id else (models[0].id if models else None)
        )
        fallback = None if config.fallback == model_id else config.fallback
        if fallback == default:
            fallback = None
        _save(
            config.model_copy(update={"models": models, "default": default, "fallback": fallback}),
            home,
        )
    print_notice(
        f"已删除模型 {model_id}。"
        + (f"默认模型现在是 {default}。" if default and default != config.default else "")
    )


@app.command("default")
def set_default(model_id: ModelIdArg) -> None:
    """设置默认模型 / set the default model."""
    with _editing() as (home, config):
        config = _editable(config, model_id)
        _require(config, model_id)
        fallback = None if config.fallback == model_id else config.fallback
        _save(config.model_copy(update={"default": model_id, "fallback": fallback}), home)
    print_notice(f"默认模型：{model_id}。")


@app.command("fallback")
def set_fallback(
    model_id: Annotated[str, typer.Argument(metavar="NAME", help="备用模型 id，或 none 取消")],
) -> None:
    """设置备用模型（限流、超时、服务故障时接管）/ set the fallback model, or `none`."""
    from wyckoff.config import effective_config

    with _editing() as (home, config):
        if model_id.lower() == "none":
            _save(config.model_copy(update={"fallback": None}), home)
            print_notice("已取消备用模型。")
            return
        config = _editable(config, model_id, effective_config(config).default or "")
        _require(config, model_id)
        if model_id == (config.default or config.models[0].id):
            raise UsageError(f"{model_id} 已是默认模型，备用模型需要另一个。")
        _save(config.model_copy(update={"fallback": model_id}), home)
    print_notice(f"备用模型：{model_id}（仅在限流、超时、网络或服务端错误时接管）。")


@app.command("cost")
def set_cost(
    model_id: ModelIdArg,
    input_per_1m: Annotated[
        float | None, typer.Option("--input-per-1m", help="每百万输入 token 价格")
    ] = None,
    output_per_1m: Annotated[
        float | None, typer.Option("--output-per-1m", help="每百万输出 token 价格")
    ] = None,
    cache_read_per_1m: Annotated[
        float | None, typer.Option("--cache-read-per-1m", help="每百万缓存读 token 价格")
    ] = None,
    context_window: Annotated[
        int | None, typer.Option("--context-window", help="上下文窗口（token）")
    ] = None,
) -> None:
    """设置价格与上下文窗口（给出的才改）/ set any of the prices and the context window."""
    given = {
        "--input-per-1m": ("input_per_1m", input_per_1m),
        "--output-per-1m": ("output_per_1m", output_per_1m),
        "--cache-read-per-1m": ("cache_read_per_1m", cache_read_per_1m),
        "--context-window": ("context_window", context_window),
    }
    changes = {field: value for field, value in given.values() if value is not None}
    if not changes:
        raise UsageError(
            f"没有要改的项：至少给出 {'、'.join(given)} 中的一个，"
            f"例如 `wyckoff model cost {model_id} --context-window 128000`。"
        )
    with _editing() as (home, config):
        config = _editable(config, model_id)
        _require(config, model_id)
        config = _upserted(config, model_id, changes)
        _save(config, home)
    labels = {"input_per_1m": "输入价", "output_per_1m": "输出价", "cache_read_per_1m": "缓存读价"}
    shown = [f"{labels[f]} {v:g}/1M" for f, v in changes.items() if f in labels]
    if context_window is not None:
        shown.append(f"上下文窗口 {context_window:,} token")
    print_notice(f"已更新 {model_id}：{'，'.join(shown)}。")


@app.command("usage")
def usage(
    days: Annotated[int, typer.Option("--days", min=1, help="统计最近 N 天")] = 30,
    json_output: Annotated[bool, typer.Option("--json", help="输出 JSON")] = False,
) -> None:
    """按模型和用途汇总用量与费用 / tokens and cost per model and purpose."""
    model_views.usage(days, json_output)


@app.command("test")
def test(model_id: ModelIdArg) -> None:
    """发送一次极小请求，报告延迟或错误 / send one tiny request and report latency."""
    import time

    from wyckoff.cli.pricing import price
    from wyckoff.cli.providers.factory import make_provider
    from wyckoff.config import effective_config

    home, stored = home_and_config()
    config = effective_config(stored)
    model = _require(config, model_id)
    provider = make_provider(model, config.stream_timeout_s)
    started = time.perf_counter()
    reply = provider.chat([{"role": "user", "content": "Reply with the single word: pong"}], [])
    elapsed_ms = (time.perf_counter() - started) * 1000
    if reply["usage"]:
        record_usage(
            Store.in_home(home), model, reply["usage"], price(model, reply["usage"]), purpose="test"
        )
    answer = " ".join(reply["text"].split())[:60] or "(空回复)"
    typer.echo(f"{model_id} 可用：{elapsed_ms:.0f} ms，回复：{answer}")
