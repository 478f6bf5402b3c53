"""What earlier work left behind, for the model to look up: screen recommendations, pending
signals (their expiry recounted on today's calendar) and compaction archives."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from wyckoff import history_store
from wyckoff.agents import results
from wyckoff.agents.market_data import MarketData
from wyckoff.agents.stock_args import StockText
from wyckoff.archive_store import search_archives
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.engine.thresholds import DEFAULT_CONFIG

if TYPE_CHECKING:
    import numpy as np

    from wyckoff.history_store import Signal


HISTORY_KINDS = {"recommendation": "推荐记录", "signal": "信号", "archive": "压缩归档"}


def summarize_history_query(result: dict[str, Any]) -> str:
    return f"{len(result['rows'])} 条{HISTORY_KINDS[result['source']]}"


class HistoryQueryParams(BaseModel):
    source: Literal["recommendation", "signal", "archive"] = Field(
        description="recommendation 推荐记录；signal 待确认信号；archive 压缩归档"
    )
    code: StockText | None = Field(default=None, description="只看这只股票")
    limit: int = Field(default=20, ge=1, le=100)


def query_history(params: HistoryQueryParams, context: ToolContext) -> dict[str, Any]:
    if params.source == "archive":
        rows = search_archives(context.home, params.code or "", params.limit)
        return {
            "source": "archive",
            "rows": rows,
            **({} if rows else {"note": "没有匹配的上下文压缩归档。"}),
        }
    if context.store is None:
        raise ToolFailure("没有状态数据库，无法查询历史。")
    if params.source == "recommendation":
        rows = history_store.recommendations(context.store, params.code, params.limit)
    else:
        rows = history_store.signals(context.store, params.code, params.limit)
        _refresh_expiry(rows, MarketData.from_context(context).open_days())
    return {"source": params.source, "rows": rows}


def _refresh_expiry(rows: list[Signal], open_days: np.ndarray) -> None:
    """Recount each pending signal's TTL on the calendar known now (a holiday synced since
    the screen moves its expiry), and mark it expired once that day has passed."""
    from wyckoff.engine.triggers import TRIGGER_KEYS, signal_expiry

    today = date.today().isoformat()
    for row in rows:
        key = TRIGGER_KEYS.get(row["trigger"])
        if row["status"] != "pending" or key is None:
            continue
        row["expires_on"] = signal_expiry(key, row["as_of"], open_days, DEFAULT_CONFIG)
        if row["expires_on"] < today:
            row["status"] = "expired"


QUERY_HISTORY_TOOL = ToolSpec(
    name="query_history",
    description="查询历史推荐、待确认信号或上下文压缩归档。",
    params=HistoryQueryParams,
    func=query_history,
    title="查询历史",
    concurrency_safe=True,
    summarize=summarize_history_query,
    timeout_s=30,
    output=results.HistoryQueryResult,
    mcp_tier=1,
)
