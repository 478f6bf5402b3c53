"""The K-line chart: candles (red up, green down, the A-share convention), volume, MA50/MA200
and markers for the triggers found, drawn with box characters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widget import Widget


class KLineChart(Widget):
    """Candles (red up, green down, the A-share convention), volume, MA50/MA200 and markers
    for the triggers found, drawn with box characters."""

    def __init__(self, data: dict[str, Any], **kwargs) -> None:
        super().__init__(**kwargs)
        self.data = data

    def render(self) -> Text:
        return render_kline(self.data, max(self.size.width, 40), max(self.size.height, 12))


def render_kline(data: dict[str, Any], width: int, height: int) -> Text:
    bars = data["bars"][-(width - 11) :]
    ma50 = data["ma50"][-len(bars) :]
    ma200 = data["ma200"][-len(bars) :]
    scale = PriceScale.of(bars, ma50 + ma200, max(height - 6, 6))
    text = _kline_legend(data)
    for y, row in enumerate(_candle_grid(bars, ma50, ma200, scale)):
        text.append(f"{scale.label(y):9.2f} " if y % 3 == 0 else " " * 10, style="dim")
        for char, style in row:
            text.append(char, style=style)
        text.append("\n")
    _append_markers(text, bars, set(data.get("markers", [])))
    _append_volume(text, bars)
    text.append(
        f"\n{' ' * 10}{bars[0]['date']}{' ' * max(len(bars) - 20, 1)}{bars[-1]['date']}",
        style="dim",
    )
    return text


@dataclass(frozen=True)
class PriceScale:
    """Maps prices to chart rows: the top row is the highest price shown."""

    top: float
    span: float
    rows: int

    @classmethod
    def of(cls, bars: list[dict[str, Any]], averages: list[float | None], rows: int) -> PriceScale:
        prices = [p for b in bars for p in (b["high"], b["low"])] + [v for v in averages if v]
        top, bottom = max(prices), min(prices)
        return cls(top, (top - bottom) or 1.0, rows)

    def row_of(self, price: float) -> int:
        return int(round((self.top - price) / self.span * (self.rows - 1)))

    def label(self, y: int) -> float:
        return self.top - self.span * y / (self.rows - 1)


def _rising(bar: dict[str, Any]) -> bool:
    return bar["close"] >= bar["open"]


def _candle_grid(
    bars: list[dict[str, Any]],
    ma50: list[float | None],
    ma200: list[float | None],
    scale: PriceScale,
) -> list[list[tuple[str, str]]]:
    """(char, style) cells: candle bodies and wicks, MA dots where no candle is drawn."""
    grid = [[(" ", "")] * len(bars) for _ in range(scale.rows)]
    for x, bar in enumerate(bars):
        style = "red" if _rising(bar) else "green"
        hi, lo = scale.row_of(bar["high"]), scale.row_of(bar["low"])
        body_top, body_bottom = sorted((scale.row_of(bar["open"]), scale.row_of(bar["close"])))
        for y in range(hi, lo + 1):
            grid[y][x] = ("█" if body_top <= y <= body_bottom else "│", style)
        for values, ma_style in ((ma50, "yellow"), (ma200, "magenta")):
            if not values[x]:
                continue
            y = scale.row_of(values[x])
            if grid[y][x][0] == " ":
                grid[y][x] = ("•", ma_style)
    return grid


def _kline_legend(data: dict[str, Any]) -> Text:
    text = Text()
    text.append(f"{data['code']} {data.get('name', '')}  ", style="bold")
    text.append("• MA50 ", style="yellow")
    text.append("• MA200 ", style="magenta")
    text.append("▲ 信号", style="cyan")
    if data.get("source") == "demo":
        text.append("  DEMO 演示数据", style="bold white on dark_red")
    text.append("\n")
    return text


def _append_markers(text: Text, bars: list[dict[str, Any]], markers: set[str]) -> None:
    text.append(" " * 10)
    for bar in bars:
        text.append("▲" if bar["date"] in markers else " ", style="cyan")
    text.append("\n")


def _append_volume(text: Text, bars: list[dict[str, Any]]) -> None:
    volumes = [b["volume"] for b in bars]
    peak = max(volumes) or 1
    levels = " ▁▂▃▄▅▆▇█"
    text.append("       量 ", style="dim")
    for bar, volume in zip(bars, volumes, strict=True):
        text.append(
            levels[int(volume / peak * (len(levels) - 1))],
            style="red" if _rising(bar) else "green",
        )
