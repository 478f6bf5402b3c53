"""A sweep's parameter grid, read from TOML: exit parameters and EngineConfig thresholds, each
a list, an inclusive range table {start, stop, step} or a single value.

    hold_days = [5, 10, 20]
    stop_loss_pct = { start = 4, stop = 10, step = 2 }
    trailing = [true, false]
    rs10_min = [1.5, 2.0]          # an engine threshold: changes the signals
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.errors import UsageError

# Exit parameters of run_backtest and their defaults: they never change the signals.
EXIT_DEFAULTS: dict[str, Any] = {
    "hold_days": 10,
    "top_n": 3,
    "stop_loss_pct": 8.0,
    "take_profit_pct": 20.0,
    "trailing": True,
}
ENGINE_NAMES = tuple(f.name for f in fields(DEFAULT_CONFIG))


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
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"找不到参数网格文件 {path}，请检查路径。") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"参数网格文件 {path} 不是有效的 TOML（{exc}），请按 README 的格式修改后重试。"
        ) from None


def parse_grid(table: dict[str, Any]) -> Grid:
    unknown = [name for name in table if name not in EXIT_DEFAULTS and name not in ENGINE_NAMES]
    if unknown:
        raise UsageError(
            f"参数网格里有未知参数 {'、'.join(unknown)}；可用的离场参数：{'、'.join(EXIT_DEFAULTS)}；"
            f"可用的引擎阈值：{'、'.join(ENGINE_NAMES)}。"
        )
    if not table:
        raise UsageError("参数网格是空的：请至少写一个参数，例如 hold_days = [5, 10, 20]。")
    exits = {n: _values(n, v, EXIT_DEFAULTS[n]) for n, v in table.items() if n in EXIT_DEFAULTS}
    engine = {
        n: _values(n, v, getattr(DEFAULT_CONFIG, n)) for n, v in table.items() if n in ENGINE_NAMES
    }
    return Grid(engine, exits)


def _values(name: str, spec: Any, default: Any) -> list[Any]:
    if isinstance(spec, dict):
        raw = _range(name, spec)
    else:
        raw = spec if isinstance(spec, list) else [spec]
    if not raw:
        raise UsageError(f"参数 {name} 的取值列表是空的，请至少给一个值。")
    values = [_typed(name, value, default) for value in raw]
    if name in EXIT_DEFAULTS and name != "trailing" and any(v <= 0 for v in values):
        raise UsageError(f"参数 {name} 的取值必须大于 0。")
    return list(dict.fromkeys(values))  # duplicates would only repeat work


def _range(name: str, spec: dict[str, Any]) -> list[float]:
    try:
        start, stop, step = (float(spec[key]) for key in ("start", "stop", "step"))
    except (KeyError, TypeError, ValueError):
        raise UsageError(
            f"参数 {name} 的区间要写成 {{ start = 数, stop = 数, step = 正数 }}（含 stop）。"
        ) from None
    if step <= 0 or stop < start:
        raise UsageError(f"参数 {name} 的区间要求 step > 0 且 stop 不小于 start。")
    count = math.floor((stop - start) / step + 1e-9) + 1
    return [round(start + i * step, 10) for i in range(count)]


def _typed(name: str, value: Any, default: Any) -> Any:
    """The value in the default's type; a tuple threshold takes a list of the same length."""
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value == int(value)
        value = int(value) if ok else value
    elif isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:  # a tuple of numbers
        ok = isinstance(value, list) and len(value) == len(default)
        ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        value = tuple(float(v) for v in value) if ok else value
    if not ok:
        raise UsageError(f"参数 {name} 的取值 {value!r} 类型不对：应与默认值 {default!r} 同类型。")
    return value
