"""Intraday views: the minute-path chart (`/chart CODE --intraday`: price dots red above the
prior close and green below, VWAP and the confirmed support as lines, volume underneath) and
the panel a tail check's verdicts are shown in."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from wyckoff.cli.tui.kline import PriceScale

VERDICT_STYLES = {
    "可买": "bold red",
    "观察": "yellow",
    "放弃": "green",
    "持仓破位预警": "bold white on dark_red",
}


class IntradayChart(Widget):
    def __init__(self, data: dict[str, Any], **kwargs) -> None:
        super().__init__(**kwargs)
        self.data = data

    def render(self) -> Text:
        return render_intraday(self.data, max(self.size.width, 40), max(self.size.height, 12))


def render_intraday(data: dict[str, Any], width: int, height: int) -> Text:
    points = _columns(data["points"], width - 11)
    levels = [data.get("support"), data["prior_close"]]
    prices = [{"high": p["close"], "low": p["close"]} for p in points]
    scale = PriceScale.of(prices, [p["vwap"] for p in points] + levels, max(height - 5, 6))
    text = _legend(data)
    grid = [[(" ", "")] * len(points) for _ in range(scale.rows)]
    if data.get("support"):
        for x in range(len(points)):
            grid[scale.row_of(data["support"])][x] = ("┄", "cyan")
    for x, point in enumerate(points):
        if point["vwap"] is not None:
            grid[scale.row_of(point["vwap"])][x] = ("─", "yellow")
        style = "red" if point["close"] >= data["prior_close"] else "green"
        grid[scale.row_of(point["close"])][x] = ("•", style)
    for y, row in enumerate(grid):
        text.append(f"{scale.label(y):9.2f} " if y % 3 == 0 else " " * 10, style="dim")
        for char, style in row:
            text.append(char, style=style)
        text.append("\n")
    _append_volume(text, points)
    text.append(
        f"\n{' ' * 10}{points[0]['time']}{' ' * max(len(points) - 10, 1)}{points[-1]['time']}",
        style="dim",
    )
    return text


def _columns(points: list[dict[str, Any]], width: int) -> list[dict[str, Any]]:
    """At most `width` points: each column shows the last bar of its stretch, its volume
    the stretch's sum."""
    if len(points) <= width:
        return points
    step = len(points) / width
    shown = []
    for x in range(width):
        stretch = points[int(x * step) : int((x + 1) * step)] or [points[int(x * step)]]
        shown.append({**stretch[-1], "volume": sum(p["volume"] for p in stretch)})
    return shown


def _legend(data: dict[str, Any]) -> Text:
    text = Text()
    text.append(
        f"{data['code']} {data.get('name', '')} 分时 {data['minutes']['as_of']}  ", style="bold"
    )
    text.append("─ VWAP ", style="yellow")
    if data.get("support"):
        text.append(f"┄ 确认支撑 {data['support']:.2f} ", style="cyan")
    text.append(f"昨收 {data['prior_close']:.2f}", style="dim")
    if not data["minutes"]["complete"]:
        text.append("  盘中（未收盘）", style="bold")
    if data.get("source") == "demo":
        text.append("  DEMO 演示数据", style="bold white on dark_red")
    text.append("\n")
    return text


def _append_volume(text: Text, points: list[dict[str, Any]]) -> None:
    peak = max(p["volume"] for p in points) or 1
    levels = " ▁▂▃▄▅▆▇█"
    text.append("       量 ", style="dim")
    for point in points:
        text.append(levels[int(point["volume"] / peak * (len(levels) - 1))], style="dim")


class TailPanel(Static):
    """A tail check's verdicts: one row per stock with its reasons."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.table = tail_table(result)
        super().__init__(self.table, classes="tail-panel")


def tail_table(result: dict[str, Any]) -> Table:
    table = Table(
        title=f"尾盘检查 {result['checked_at']}（{result['phase']}）",
        expand=True,
        show_lines=True,
    )
    for column in ("股票", "结论", "现价", "理由"):
        table.add_column(column, overflow="fold")
    for row in result["results"]:
        reasons = list(row.get("reasons") or [])
        reasons += [f"未检查：{u}" for u in row.get("unchecked") or []]
        table.add_row(
            f"{row['code']} {row.get('name') or ''}\n{row['role']}",
            Text(row["verdict"], style=VERDICT_STYLES.get(row["verdict"], "dim")),
            _price_cell(row),
            "\n".join(reasons),
        )
    if result.get("playbook"):
        table.caption = f"按你的剧本：「{result['playbook']['quote']}」"
    return table


def _price_cell(row: dict) -> str:
    """The price and the day's VWAP beside it, as `wyckoff tail` prints them."""
    if row.get("price") is None:
        return "—"
    vwap = (row.get("facts") or {}).get("vwap")
    return f"{row['price']:.2f}" + ("" if vwap is None else f"\nVWAP {vwap:.2f}")
