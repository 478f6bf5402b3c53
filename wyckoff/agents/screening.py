"""The whole-market funnel screen (a background tool); its candidates and signals are saved
for `query_history`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from wyckoff import history_store
from wyckoff.agents import results
from wyckoff.agents.market_data import MarketData
from wyckoff.agents.signal_record import SCREEN_SIGNAL, records_for
from wyckoff.cli.tools import ToolContext, ToolSpec
from wyckoff.engine.thresholds import DEFAULT_CONFIG, board_of

if TYPE_CHECKING:
    import numpy as np


class ScreenParams(BaseModel):
    board: Literal["all", "main", "chinext", "star"] = Field(default="all", description="板块范围")
    limit: int = Field(
        default=history_store.SCREEN_MAX_CANDIDATES,
        ge=0,
        description="返回前几只候选（默认 20；0 为第三层全部）",
    )


def screen_stocks(params: ScreenParams, context: ToolContext) -> dict[str, Any]:
    market = MarketData.from_context(context)
    context.progress("加载行情", market.source, 0.05)
    panel = market.panel()
    context.progress("全市场漏斗", f"{len(panel.codes):,} 只股票", 0.3)
    funnel = funnel_on_last_day(panel, params.board, params.limit)
    context.progress("保存结果", f"{funnel['shown']} 只候选", 0.9)
    if context.store is not None:
        saved = funnel["top_candidates"][: history_store.SCREEN_MAX_CANDIDATES]
        save_screen(context.store, market.source, panel.as_of, saved, market.open_days())
        record_advice(context.store, market.source, panel.as_of, funnel["top_candidates"])
    keys = [key for c in funnel["top_candidates"] for key in c["trigger_keys"]]
    picks, *signals = records_for(market, [SCREEN_SIGNAL, *keys])  # one read of the cache
    return market.envelope(
        panel.as_of,
        **funnel,
        record=picks,
        signal_records=signals,
        next_step="可以调用 generate_ai_report(stock_codes=symbols_for_report) 生成研报。",
        data_caveats=panel.caveats,
    )


def funnel_on_last_day(
    panel, board: str, limit: int = history_store.SCREEN_MAX_CANDIDATES
) -> dict[str, Any]:
    """The funnel and the regime on the panel's last day, limited to `board`, its first
    `limit` candidates (0: all): the result fields of a screen (and of its replay on a past
    date, over a panel that ends there)."""
    import numpy as np

    from wyckoff.engine.funnel import run_funnel, trigger_groups
    from wyckoff.engine.regime import market_regime

    result = run_funnel(panel)
    regime = market_regime(panel)
    boards = np.array([board_of(c) for c in panel.codes])
    in_board = np.ones(len(boards), dtype=bool) if board == "all" else boards == board
    ranked = [j for j in result.ranked() if in_board[j]]
    top = [_candidate(panel, result, j) for j in ranked[: limit or None]]
    triggered = [c for c in top if c["triggers"]]
    return {
        "board": board,
        "summary": {
            "total_scanned": int((~np.isnan(panel.close[-1]) & in_board).sum()),
            "layer1_passed": int((result.layer1 & in_board).sum()),
            "layer2_passed": int((result.layer2 & in_board).sum()),
            "layer3_passed": int((result.layer3 & in_board).sum()),
            "report_candidates": int((result.layer4 & in_board).sum()),
        },
        "regime": regime["regime"],
        "regime_label": regime["label"],
        "trade_mode": "允许开新仓" if regime["buy_allowed"] else "禁止开新仓（只管理持仓）",
        "top_candidates": top,
        "total": len(ranked),
        "shown": len(top),
        "trigger_groups": trigger_groups(result, panel.codes),
        "top_sectors": [
            {"industry": s["industry"], "strength": round(s["strength"], 3), "passed": s["count"]}
            for s in result.sectors
            if s.get("top")
        ],
        "symbols_for_report": [c["code"] for c in (triggered or top)[:10]],
    }


def summarize_screen(result: dict[str, Any]) -> str:
    summary = result["summary"]
    return (
        f"扫描 {summary['total_scanned']} 只，候选 {summary['report_candidates']} 只，"
        f"市场状态 {result['regime']}（{result['trade_mode']}）"
    )


def _candidate(panel, result, j: int) -> dict[str, Any]:
    from wyckoff.engine.triggers import TRIGGER_LABELS

    code = panel.codes[j]
    traded = panel.close if panel.raw_close is None else panel.raw_close  # as traded that day
    return {
        "code": code,
        "name": panel.stock_value(code, "name"),
        "industry": panel.stock_value(code, "industry"),
        "close": round(float(traded[-1, j]), 2),
        "channels": result.channel_labels(j),
        "triggers": [TRIGGER_LABELS[t] for t in result.trigger_labels(j)],
        "trigger_keys": result.trigger_labels(j),
        "score": round(float(result.score[j]), 1),
    }


def save_screen(
    store, source: str, as_of: str, candidates: list[dict[str, Any]], open_days: np.ndarray
) -> None:
    """Candidates as recommendations; each trigger as a pending signal with its TTL."""
    from wyckoff.engine.triggers import TRIGGER_LABELS, signal_expiry

    recommendations = [
        history_store.NewRecommendation(
            c["code"], c["name"], c["channels"], c["triggers"], c["score"], c["close"]
        )
        for c in candidates
    ]
    signals = [
        history_store.NewSignal(
            c["code"],
            c["name"],
            TRIGGER_LABELS[key],
            c["score"],
            signal_expiry(key, as_of, open_days, DEFAULT_CONFIG),
        )
        for c in candidates
        for key in c["trigger_keys"]
    ]
    history_store.save_screen(store, source, as_of, recommendations, signals)


def record_advice(store, source: str, as_of: str, candidates: list[dict[str, Any]]) -> None:
    """The candidates shown, each a buy as of the screen's day, in the scorecard."""
    from wyckoff.agents import scorecard
    from wyckoff.scorecard_store import NewItem

    items = [
        NewItem("screen", c["code"], c["name"], as_of, "buy", source, c["close"])
        for c in candidates
    ]
    scorecard.record(store, items)


SCREEN_TOOL = ToolSpec(
    name="screen_stocks",
    description="全市场威科夫漏斗筛选（后台任务），返回候选股、信号分组和强势行业；"
    "record 是 screen 前 20 在本地行情库历史上的记录，signal_records 是各信号的记录，回答时引用其 text。",
    params=ScreenParams,
    func=screen_stocks,
    title="全市场筛选",
    background=True,
    summarize=summarize_screen,
    timeout_s=600,
    output=results.ScreenResult,
    mcp_tier=2,
)
