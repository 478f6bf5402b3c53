"""A small text chart of two or three return series (%) over the same days, for the terminal."""

from __future__ import annotations

MARKS = ("●", "○", "▲")  # the first series, the second, the third; "◉" where two share a cell
BOTH = "◉"
FLAT_STEP = 0.5  # % between rows when every value is the same


def line_chart(series: dict[str, list[float | None]], width: int = 60, height: int = 8) -> str:
    """Rows of the chart, top = highest %, a y label on each row and a legend below."""
    columns = _resampled(series, width)
    values = [v for points in columns.values() for v in points if v is not None]
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:  # one flat line (a single day): its row's label is its value
        above = (height - 1) // 2
        low, high = low - (height - 1 - above) * FLAT_STEP, high + above * FLAT_STEP
    span = high - low
    grid = [[" "] * len(next(iter(columns.values()))) for _ in range(height)]
    for mark, points in zip(MARKS, columns.values(), strict=False):
        for x, value in enumerate(points):
            if value is None:
                continue
            y = height - 1 - round((value - low) / span * (height - 1))
            grid[y][x] = BOTH if grid[y][x] not in (" ", mark) else mark
    labels = [high - span * row / (height - 1) for row in range(height)]
    lines = [f"{label:+7.2f}% ┤{''.join(cells)}" for label, cells in zip(labels, grid, strict=True)]
    legend = "  ".join(f"{mark} {name}" for mark, name in zip(MARKS, columns, strict=False))
    return "\n".join([*lines, " " * 9 + legend])


def _resampled(series: dict[str, list[float | None]], width: int) -> dict[str, list[float | None]]:
    """At most `width` points per series: evenly spaced days, the last one included."""
    length = max(len(points) for points in series.values())
    if length <= width:
        return series
    picks = [round(i * (length - 1) / (width - 1)) for i in range(width)]
    return {name: [points[i] for i in picks] for name, points in series.items()}
