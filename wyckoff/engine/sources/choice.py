"""Which source is in use: the configured one, or for `auto` the best one available."""

from __future__ import annotations

import os

from wyckoff.engine.sources.base import SourceError

SOURCES = ("auto", "tushare", "akshare", "baostock", "demo", "import")


def chosen_source(config) -> str:
    """WYCKOFF_DATA_SOURCE, else the configured source ('auto' unless `data use` set one)."""
    source = os.environ.get("WYCKOFF_DATA_SOURCE") or config.data.source
    if source not in SOURCES:
        raise SourceError(f"未知的数据源 '{source}'：可选 {', '.join(SOURCES)}。")
    return source


def resolve_source(config) -> str:
    """The concrete source: auto = tushare with a token, else akshare if installed, else baostock."""
    source = chosen_source(config)
    if source != "auto":
        return source
    if tushare_token(config):
        return "tushare"
    try:
        import importlib.util

        if importlib.util.find_spec("akshare") is not None:
            return "akshare"
    except ValueError:
        pass
    return "baostock"


def tushare_token(config) -> str | None:
    return config.data.tushare_token or os.environ.get("TUSHARE_TOKEN") or None


def no_data_hint(source: str) -> str:
    if source == "import":
        return (
            "导入行情库还没有数据：先运行 `wyckoff data import FILE`（格式见 docs/data.md），"
            "或用 `wyckoff data use demo` 改用内置演示数据（合成数据，仅供体验）。"
        )
    return (
        f"本地行情库（数据源 {source}）还没有数据：先运行 `wyckoff data sync`，"
        "或用 `wyckoff data use demo` 改用内置演示数据（合成数据，仅供体验）。"
    )
