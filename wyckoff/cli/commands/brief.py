"""`wyckoff brief`: the after-close brief, built without a model and saved by trading date."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wyckoff.cli.output import print_notice
from wyckoff.errors import UsageError


def brief(
    date: Annotated[
        str | None, typer.Option("--date", help="已保存简报的交易日 YYYY-MM-DD（默认最新）")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="md | html | json")] = "md",
    out: Annotated[Path | None, typer.Option("--out", help="另存一份到这个文件")] = None,
    push: Annotated[str | None, typer.Option("--push", help="推送到通知渠道 NAME，或 all")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="只显示，不保存不推送")] = False,
    ai: Annotated[bool, typer.Option("--ai", help="附上模型点评（需已配置模型）")] = False,
) -> None:
    """收盘简报：市场状态、持仓诊断、候选、提醒 / the after-close brief."""
    from wyckoff.cli.commands.notify import push_targets
    from wyckoff.config import wyckoff_home
    from wyckoff.routine.brief import FORMATS, load_brief, normalize_date, save_brief
    from wyckoff.routine.brief_render import render

    if fmt not in FORMATS:
        raise UsageError(f"--format 只能是 md、html 或 json，收到 {fmt}。")
    home = wyckoff_home()
    out_file = _out_file(out) if out is not None else None  # checked before the work
    targets = push_targets(push, "简报只保存不推送") if push and not dry_run else []
    day = normalize_date(date) if date is not None else None
    if day is not None and (home / "briefs" / f"{day}.json").is_file():
        content = load_brief(home, day)
    else:
        content = _build(check_alerts=not dry_run, day=day)  # refuses a past unsaved day
        if ai:
            _add_commentary(content, home)
        if not dry_run:
            saved = save_brief(home, content)
            print_notice(f"已保存：{saved[fmt]}")
    text = render(content, fmt)
    if out_file is not None:
        _write_out(out_file, text)
    typer.echo(text, nl=False)
    if targets:
        _push(content, targets)


def _build(check_alerts: bool, day: str | None) -> dict[str, Any]:
    from wyckoff.cli.commands.market import _call as run_tool
    from wyckoff.routine.brief import build_brief

    return run_tool(
        lambda _params, context: build_brief(context, check_alerts, day), None, label="收盘简报"
    )


def _add_commentary(content: dict[str, Any], home: Path) -> None:
    """The model's commentary, in its own section; without a model the brief goes on without it."""
    from wyckoff.cli.providers.factory import build_provider
    from wyckoff.config import load_config
    from wyckoff.errors import WyckoffError
    from wyckoff.routine.brief import ai_commentary

    try:
        provider = build_provider(load_config(home))
    except WyckoffError as exc:
        print_notice(f"没有可用的模型，简报不带 AI 点评：{exc.message}")
        return
    try:
        content["ai_commentary"] = ai_commentary(content, provider)
    except WyckoffError as exc:
        print_notice(f"AI 点评没有生成（{exc.message}），简报只含计算结果。")


def _out_file(path: Path) -> Path:
    """Where --out writes: a file in a folder that exists."""
    target = path.expanduser()
    if target.is_dir():
        raise UsageError(f"--out {path} 是一个文件夹：请给出文件名，如 {target / 'brief.md'}。")
    if target.exists() and not target.is_file():  # a device or pipe would be replaced
        raise UsageError(f"--out {path} 不是普通文件（是设备或管道）：请给出一个文件名。")
    if not target.parent.is_dir():
        raise UsageError(f"--out {path}：文件夹 {target.parent} 不存在，请先创建或换一个路径。")
    return target


def _write_out(target: Path, text: str) -> None:
    from wyckoff.config import write_private_file
    from wyckoff.errors import WyckoffError, describe_os_error

    try:
        write_private_file(target, text)
    except OSError as exc:
        raise WyckoffError(describe_os_error(exc, "写入", target)) from None
    print_notice(f"已另存：{target}")


def _push(content: dict[str, Any], targets: list) -> None:
    """Push the Markdown brief; exit 1 when a channel failed (the others still got it)."""
    from wyckoff.cli.commands.notify import report_push
    from wyckoff.routine.brief_render import title, to_markdown

    failed = report_push(targets, title(content), to_markdown(content))
    if failed:
        raise typer.Exit(failed)
