"""A sweep's parameter grid, read from TOML: exit parameters and EngineConfig thresholds, each
a list, an inclusive range table {start, stop, step} or a single value.

    hold_days = [5, 10, 20]
    stop_loss_pct = { start = 4, stop = 10, step = 2 }
    trailing = [true, false]
    rs10_min = [1.5, 2.0]          # an engine threshold: changes the signals

A grid is counted from its list lengths and range arithmetic before any value is built, so
a range with a tiny step is refused in microseconds instead of filling the memory.
"""

from __future__ import annotations

import itertools
import math
import os
import reprlib
import stat
import tomllib
from dataclasses import dataclass, fields
from datetime import date
from pathlib import Path
from typing import Any

from wyckoff.engine.thresholds import DEFAULT_CONFIG, THRESHOLD_RANGES
from wyckoff.errors import UsageError, describe_os_error

# Exit parameters of run_backtest and their defaults: they never change the signals.
EXIT_DEFAULTS: dict[str, Any] = {
    "hold_days": 10,
    "top_n": 3,
    "stop_loss_pct": 8.0,
    "take_profit_pct": 20.0,
    "trailing": True,
}
# The values a sweep may try (inclusive); the engine's thresholds declare theirs in EngineConfig.
EXIT_RANGES: dict[str, tuple[Any, Any]] = {
    "hold_days": (1, 250),  # trading days: a year at most
    "top_n": (1, 100),  # positions held at once
    "stop_loss_pct": (0.1, 100),
    "take_profit_pct": (0.1, 1000),
    "trailing": (False, True),
}
RANGES = {**EXIT_RANGES, **THRESHOLD_RANGES}
ENGINE_NAMES = tuple(f.name for f in fields(DEFAULT_CONFIG))
MAX_COMBINATIONS = 5000  # the most any caller may allow; the agent's tool defaults to fewer
GRID_FILE_MAX_BYTES = 64 * 1024  # a grid is a few lines; anything near this is not one


@dataclass(frozen=True)
class Grid:
    engine: dict[str, list[Any]]  # EngineConfig overrides to try
    exits: dict[str, list[Any]]  # exit parameters to try

    def engine_configs(self) -> list[dict[str, Any]]:
        return _product(self.engine)

    def exit_combinations(self) -> list[dict[str, Any]]:
        """Every exit combination, with the defaults filled in for names not swept."""
        return [{**EXIT_DEFAULTS, **combo} for combo in _product(self.exits)]

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in (*self.engine.values(), *self.exits.values()))

    def describe(self) -> dict[str, list[Any]]:
        return {**self.exits, **self.engine}


def _product(axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


def read_grid_file(path: Path) -> dict[str, Any]:
    """The grid file's table, as written (parse_grid checks it)."""
    text = _grid_text(Path(path))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"参数网格文件 {path} 不是有效的 TOML（{exc}），请按 README 的格式修改后重试。"
        ) from None
    except RecursionError:
        raise UsageError(
            f"参数网格文件 {path} 的嵌套过深，不是参数网格：每个参数写成列表、区间表或单个值。"
        ) from None


def _grid_text(path: Path) -> str:
    """The text of a regular file of at most GRID_FILE_MAX_BYTES: a FIFO would block the
    read forever and /dev/zero never ends, so neither is read at all."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UsageError(f"找不到参数网格文件 {path}，请检查路径。") from None
    except OSError as exc:
        raise UsageError(describe_os_error(exc, "读取参数网格文件", path)) from None
    try:
        kind = os.fstat(fd).st_mode
        if stat.S_ISDIR(kind):
            raise UsageError(f"{path} 是一个文件夹，不是参数网格文件：请给出 TOML 文件的路径。")
        if not stat.S_ISREG(kind):
            raise UsageError(f"{path} 不是普通文件（设备或管道），请把参数网格写进一个 TOML 文件。")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(GRID_FILE_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > GRID_FILE_MAX_BYTES:
        raise UsageError(
            f"参数网格文件 {path} 超过 {GRID_FILE_MAX_BYTES // 1024} KB，不像参数网格：请检查文件。"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(
            f"参数网格文件 {path} 不是 UTF-8 编码的文本，请用 UTF-8 保存后重试。"
        ) from None


def parse_grid(table: dict[str, Any], cap: int = MAX_COMBINATIONS) -> Grid:
    """The grid of `table`, refused when it has more than `cap` combinations: counted from
    the lengths of the lists and ranges before any value is built."""
    unknown = [name for name in table if name not in EXIT_DEFAULTS and name not in ENGINE_NAMES]
    if unknown:
        raise UsageError(
            f"参数网格里有未知参数 {'、'.join(unknown)}；可用的离场参数：{'、'.join(EXIT_DEFAULTS)}；"
            f"可用的引擎阈值：{'、'.join(ENGINE_NAMES)}。"
        )
    if not table:
        raise UsageError("参数网格是空的：请至少写一个参数，例如 hold_days = [5, 10, 20]。")
    axes = {name: _axis(name, spec) for name, spec in table.items()}
    _check_size({name: _length(axis) for name, axis in axes.items()}, cap)
    exits = {n: _values(n, a, EXIT_DEFAULTS[n]) for n, a in axes.items() if n in EXIT_DEFAULTS}
    engine = {
        n: _values(n, a, getattr(DEFAULT_CONFIG, n)) for n, a in axes.items() if n in ENGINE_NAMES
    }
    return Grid(engine, exits)


@dataclass(frozen=True)
class Steps:
    """An inclusive range start, start + step, ... up to stop: counted without building it."""

    start: float
    stop: float
    step: float

    @property
    def count(self) -> int:
        return math.floor((self.stop - self.start) / self.step + 1e-9) + 1

    def values(self) -> list[float]:
        return [round(self.start + i * self.step, 10) for i in range(self.count)]


def _axis(name: str, spec: Any) -> list[Any] | Steps:
    if isinstance(spec, dict):
        return _steps(name, spec)
    return spec if isinstance(spec, list) else [spec]


def _length(axis: list[Any] | Steps) -> int:
    return axis.count if isinstance(axis, Steps) else len(axis)


def _check_size(lengths: dict[str, int], cap: int) -> None:
    size = math.prod(lengths.values())
    if size > cap:
        widest = max(lengths, key=lengths.__getitem__)
        raise UsageError(
            f"参数网格共 {_amount(size)} 个组合，超过上限 {cap}（{widest} 一项就有 "
            f"{_amount(lengths[widest])} 个取值）：请少列几个取值或加大区间的 step。"
        )


def _amount(count: int) -> str:
    """A count as a person reads it: exact, or its order of magnitude when it is huge."""
    return str(count) if count < 10**9 else f"约 10^{len(str(count)) - 1}"


def _values(name: str, axis: list[Any] | Steps, default: Any) -> list[Any]:
    raw = axis.values() if isinstance(axis, Steps) else axis
    if not raw:
        raise UsageError(f"参数 {name} 的取值列表是空的，请至少给一个值。")
    values = [_typed(name, value, default) for value in raw]
    for value in values:
        _within_range(name, value)
    return list(dict.fromkeys(values))  # duplicates would only repeat work


def _within_range(name: str, value: Any) -> None:
    """Refuse a value outside the parameter's declared range (each item of a tuple)."""
    low, high = RANGES[name]
    items = zip(value, low, high, strict=True) if isinstance(value, tuple) else [(value, low, high)]
    for place, (item, lo, hi) in enumerate(items, 1):
        if not lo <= item <= hi:
            which = f"第 {place} 项" if isinstance(value, tuple) else "取值"
            raise UsageError(
                f"参数 {name} 的{which} {reprlib.repr(item)} 超出范围：应在 {lo} 到 {hi} 之间（含两端），"
                "请改正网格后重试。"
            )


def _steps(name: str, spec: dict[str, Any]) -> Steps:
    try:
        start, stop, step = (_number(spec[key]) for key in ("start", "stop", "step"))
    except (KeyError, TypeError):
        raise UsageError(
            f"参数 {name} 的区间要写成 {{ start = 数, stop = 数, step = 正数 }}（含 stop）。"
        ) from None
    if not all(math.isfinite(x) for x in (start, stop, step)):
        raise UsageError(f"参数 {name} 的区间里有 inf 或 nan：start、stop、step 都要是有限的数。")
    if step <= 0 or stop < start:
        raise UsageError(f"参数 {name} 的区间要求 step > 0 且 stop 不小于 start。")
    if not math.isfinite((stop - start) / step):
        raise UsageError(f"参数 {name} 的区间取值多到数不清（step 太小）：请加大 step。")
    return Steps(start, stop, step)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(value)
    return float(value)


def _is_iso_date(text: str) -> bool:
    try:
        return date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def _typed(name: str, value: Any, default: Any) -> Any:
    """The value in the default's type; a tuple threshold takes a list of the same length."""
    numbers = value if isinstance(value, list) else [value]
    if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):
        raise UsageError(
            f"参数 {name} 的取值 {reprlib.repr(value)} 不是有限的数：不能用 inf 或 nan。"
        )
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value == int(value)
        value = int(value) if ok else value
    elif isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, str):  # a rule's start date
        ok = isinstance(value, str) and _is_iso_date(value)
    else:  # a tuple of numbers
        ok = isinstance(value, list) and len(value) == len(default)
        ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        value = tuple(float(v) for v in value) if ok else value
    if not ok:
        raise UsageError(
            f"参数 {name} 的取值 {reprlib.repr(value)} 类型不对：应与默认值 {default!r} 同类型。"
        )
    return value
