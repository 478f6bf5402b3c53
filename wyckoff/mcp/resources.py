"""Read-only MCP resources, by tier: the latest screen (tier 1, local history), the
portfolio and the latest brief (tier 3, the user's data; the brief only when a `briefs/`
folder under WYCKOFF_HOME holds one). Each read is fresh from disk and redacted."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wyckoff import history_store
from wyckoff.cli.tools import ToolContext
from wyckoff.config import redact_text

BRIEFS_DIR = "briefs"
BRIEF_TYPES = {".md": "text/markdown", ".txt": "text/plain", ".json": "application/json"}
JSON = "application/json"


@dataclass(frozen=True)
class Offer:
    uri: str
    name: str
    title: str
    description: str
    tier: int
    mime_type: str
    read: Callable[[ToolContext], str]


def read_latest_screen(context: ToolContext) -> str:
    rows = history_store.latest_screen(context.store)
    if not rows:
        return as_json({"candidates": [], "note": "还没有筛选结果：运行 `wyckoff screen`。"})
    first = rows[0]
    candidates = [
        {k: r[k] for k in ("code", "name", "channels", "triggers", "score", "close")} for r in rows
    ]
    return as_json(
        {
            "as_of": first["as_of"],
            "source": first["source"],
            "saved_at": first["created_at"],
            "candidates": candidates,
        }
    )


def read_portfolio(context: ToolContext) -> str:
    from wyckoff.agents.portfolio import PortfolioParams, portfolio_tool

    return as_json(portfolio_tool(PortfolioParams(mode="view"), context))


def latest_brief(home: Path) -> Path | None:
    """The newest brief file (a regular file in briefs/, not a link out of it), if any."""
    folder = home / BRIEFS_DIR
    if not folder.is_dir():
        return None
    files = [
        p
        for p in folder.iterdir()
        if p.suffix in BRIEF_TYPES and p.is_file() and not p.is_symlink()
    ]
    return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name), default=None)


def read_latest_brief(context: ToolContext) -> str:
    path = latest_brief(context.home)
    if path is None:
        return "还没有简报。"
    return path.read_text(encoding="utf-8", errors="replace")


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


SCREEN = Offer(
    "wyckoff://screen/latest",
    "latest-screen",
    "最近一次筛选",
    "最近一次全市场漏斗筛选保存的候选股（代码、名称、通道、信号、评分、收盘价）",
    1,
    JSON,
    read_latest_screen,
)
PORTFOLIO = Offer(
    "wyckoff://portfolio",
    "portfolio",
    "持仓",
    "当前持仓与现金（只读；修改请用 update_portfolio 工具，需要用户确认）",
    3,
    JSON,
    read_portfolio,
)


def brief_offer(home: Path) -> Offer | None:
    path = latest_brief(home)
    if path is None:
        return None
    return Offer(
        "wyckoff://brief/latest",
        "latest-brief",
        "最新简报",
        f"{BRIEFS_DIR}/ 里最新的简报（{path.name}）",
        3,
        BRIEF_TYPES[path.suffix],
        read_latest_brief,
    )


def served_resources(context: ToolContext, tier: int) -> dict[str, Offer]:
    offers = [SCREEN, PORTFOLIO, brief_offer(context.home)]
    return {o.uri: o for o in offers if o is not None and o.tier <= tier}


def read_offer(offer: Offer, context: ToolContext) -> str:
    return redact_text(offer.read(context))
