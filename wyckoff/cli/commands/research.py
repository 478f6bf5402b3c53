"""`wyckoff research signals`: how every signal of the engine has done on the stored market
(the event study, docs/research.md), as Chinese tables, JSON, an HTML page or every event
as CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wyckoff.cli.commands.market import JsonOption, _call, _note, _params
from wyckoff.cli.commands.research_views import print_groups, print_signals, render_html
from wyckoff.cli.commands.sweep import ClusterOption, WorkersOption, _where
from wyckoff.cli.output import print_json
from wyckoff.errors import UsageError

app = typer.Typer(
    help="信号研究 / research: how the engine's signals have done on the stored market.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("signals")
def signals(
    start: Annotated[str | None, typer.Option("--start", help="第一个信号日 YYYY-MM-DD")] = None,
    end: Annotated[str | None, typer.Option("--end", help="最后一个信号日 YYYY-MM-DD")] = None,
    horizons: Annotated[str, typer.Option("--horizons", help="持有交易日数，逗号分隔")] = "5,20,60",
    by: Annotated[
        str | None,
        typer.Option("--by", help="分组：year（年份）| regime（市场状态）| cap（市值三分位）"),
    ] = None,
    html: Annotated[Path | None, typer.Option("--html", help="另存为 HTML 页面")] = None,
    events_out: Annotated[
        Path | None, typer.Option("--events-out", help="把每个事件写成 CSV，便于核对")
    ] = None,
    workers: WorkersOption = None,
    cluster: ClusterOption = None,
    json_output: JsonOption = False,
) -> None:
    """信号事件研究 / event study of every trigger and the funnel's picks.

    每个信号日 t 的事件按 t+1 开盘价买入，持有 h 个交易日到收盘；与全市场等权和沪深300比较，
    按日期聚类计算 t 值。结果按行情库版本缓存，新交易日到来时只计算新的信号日。"""
    from wyckoff.agents.research import ResearchParams, research_signals

    if by not in (None, "year", "regime", "cap"):
        raise UsageError(f"--by 只能是 year、regime 或 cap，收到 {by}。")
    params = _params(ResearchParams, start=start, end=end, horizons=_horizons(horizons), by=by)
    where = _where(workers, cluster)
    result = _call(
        lambda params, context: research_signals(params, context, where, events_out),
        params,
        label="信号事件研究",
    )
    if html:
        _write_html(html, result)
    if json_output:
        print_json(result)
        return
    _note(result)
    print_signals(result)
    if by:
        print_groups(result)
    if events_out:
        typer.echo(f"全部事件已写入 {events_out}")
    if html:
        typer.echo(f"HTML 页面已写入 {html}")


def _horizons(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise UsageError(f"--horizons 要写成逗号分隔的交易日数，如 5,20,60，收到 {text}。")
    return [int(part) for part in parts]


def _write_html(path: Path, result: dict) -> None:
    from wyckoff.errors import describe_os_error

    try:
        path.write_text(render_html(result), encoding="utf-8")
    except OSError as exc:
        raise UsageError(describe_os_error(exc, "写入", path) + "请换一个可写的位置。") from None
