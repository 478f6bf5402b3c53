"""The read-only `wyckoff model` commands, `list` and `usage`: what they print. They import
no Typer, so the light path (cli/light_commands.py) runs them directly; the Typer commands
in model.py call the same functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wyckoff.cli.output import print_json, print_notice, print_table
from wyckoff.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from wyckoff.config import WyckoffConfig


def home_and_config() -> tuple[Path, WyckoffConfig]:
    """WYCKOFF_HOME and the configuration stored there (validated)."""
    from wyckoff.config import load_config, wyckoff_home

    home = wyckoff_home()
    return home, load_config(home)


def list_models(json_output: bool = False) -> None:
    """`wyckoff model list`: the models (keys never shown), as a table or JSON."""
    from wyckoff.cli.providers.context_windows import context_window_of
    from wyckoff.config import effective_config

    _, stored = home_and_config()
    config = effective_config(stored)
    default = _model_in_use(config)
    rows = [
        {
            "id": m.id,
            "provider": m.provider,
            "model": m.model,
            "base_url": m.base_url,
            "key": m.key_source(),
            "default": m.id == default,
            "fallback": m.id == config.fallback,
            "context_window": context_window_of(m),
            "context_window_configured": m.context_window is not None,
            "input_per_1m": m.input_per_1m,
            "output_per_1m": m.output_per_1m,
            "cache_read_per_1m": m.cache_read_per_1m,
            "from_env": m.detected_from_env,
        }
        for m in config.models
    ]
    if json_output:
        print_json({"models": rows, "stream_timeout_s": config.stream_timeout_s})
        return
    if not rows:
        print_notice(
            "还没有配置模型。运行 `wyckoff model add ID --provider claude|openai|gemini --model NAME "
            "--api-key-env VAR`，或设置 ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY / DEEPSEEK_API_KEY。"
        )
        return
    table_rows = []
    for r in rows:
        marks = " ".join(
            x for x in ("默认" if r["default"] else "", "备用" if r["fallback"] else "") if x
        )
        window = f"{r['context_window']:,}" + ("" if r["context_window_configured"] else "（推断）")
        prices = _price_text(r)
        table_rows.append(
            [
                r["id"],
                marks,
                r["provider"],
                r["model"],
                r["base_url"] or "",
                window,
                prices,
                r["key"],
            ]
        )
    print_table(
        "模型",
        [
            "id",
            "角色",
            "provider",
            "model",
            "base_url",
            "上下文窗口",
            "价格/1M（入/出/缓存读）",
            "密钥",
        ],
        table_rows,
    )
    if any(r["from_env"] for r in rows):
        print_notice("以上模型从环境变量检测到（未写入配置）；用 `wyckoff model add` 保存或修改。")


def _model_in_use(config) -> str | None:
    """The model `ask` would use without --model, or None when there is no default."""
    from wyckoff.cli.providers.factory import resolve_model

    try:
        return resolve_model(config).id
    except ConfigError:
        return None


def _price_text(row: dict) -> str:
    if row["input_per_1m"] is None or row["output_per_1m"] is None:
        return "未设置"
    cache = row["cache_read_per_1m"]
    return f"{row['input_per_1m']:g} / {row['output_per_1m']:g} / {'-' if cache is None else f'{cache:g}'}"


def usage(days: int = 30, json_output: bool = False) -> None:
    """`wyckoff model usage`: tokens and cost per model and purpose over the last `days`."""
    from wyckoff.store import Store
    from wyckoff.usage_store import PURPOSE_LABELS, usage_summary

    home, _ = home_and_config()
    rows = usage_summary(Store.in_home(home), days)
    if json_output:
        print_json({"days": days, "models": rows})
        return
    if not rows:
        print_notice(f"最近 {days} 天没有模型调用记录。")
        return
    print_table(
        f"最近 {days} 天模型用量",
        ["模型", "用途", "provider", "调用", "输入", "输出", "缓存读", "缓存写", "费用"],
        [
            [
                r["model_id"],
                PURPOSE_LABELS.get(r["purpose"], r["purpose"]),
                r["provider"],
                r["calls"],
                f"{r['input_tokens']:,}",
                f"{r['output_tokens']:,}",
                f"{r['cache_read_tokens']:,}",
                f"{r['cache_write_tokens']:,}",
                _cost_text(r),
            ]
            for r in rows
        ],
    )


def _cost_text(row: dict) -> str:
    if not row["priced_calls"]:
        return "未定价"
    text = f"{row['cost']:.4f}"
    return text if row["priced_calls"] == row["calls"] else f"{text}（部分未定价）"
