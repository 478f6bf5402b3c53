"""The funnel strategy's backtest as a background tool, and the window every backtest and
sweep runs over (`backtest_span`)."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from wyckoff.agents import results
from wyckoff.agents.market_data import MarketData, signed_pct
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec

YEAR = 250  # trading days


class BacktestParams(BaseModel):
    start: str | None = Field(
        default=None, description="开始日期 YYYY-MM-DD；省略为结束前 250 个交易日"
    )
    end: str | None = Field(default=None, description="结束日期 YYYY-MM-DD；省略为最新")
    hold_days: int = Field(default=10, ge=1, le=120)
    top_n: int = Field(default=3, ge=1, le=20)
    board: Literal["all", "main", "chinext", "star"] = "all"
    stop_loss_pct: float = Field(default=8.0, gt=0, le=50)
    take_profit_pct: float = Field(default=20.0, gt=0, le=200)

    @field_validator("start", "end")
    @classmethod
    def _real_date(cls, text: str | None) -> str | None:
        return real_date(text)


def real_date(text: str | None) -> str | None:
    """YYYY-MM-DD (YYYYMMDD and slashes accepted), None when empty. A typo like 2026-13-05
    is the user's mistake, not an empty range."""
    text = (text or "").strip()
    if not text:
        return None
    parts = text.replace("/", "-").split("-")
    if len(parts) == 1 and len(text) == 8:  # YYYYMMDD
        parts = [text[:4], text[4:6], text[6:]]
    try:
        return date(*(int(part) for part in parts)).isoformat()
    except (TypeError, ValueError):
        raise ValueError(f"日期 {text} 无效，请用 YYYY-MM-DD，如 2026-01-05") from None


def run_backtest_tool(params: BacktestParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.backtest import run_backtest

    market, panel, start_t, end_t = backtest_span(context, params.start, params.end)
    dates = [str(d) for d in panel.dates]
    result = run_backtest(
        panel,
        start_t,
        end_t,
        hold_days=params.hold_days,
        top_n=params.top_n,
        board=params.board,
        stop_loss_pct=params.stop_loss_pct,
        take_profit_pct=params.take_profit_pct,
        progress=lambda fraction: _backtest_progress(context, dates, start_t, end_t, fraction),
        cancelled=context.cancelled,
    )
    result.pop("signals")
    total, result["trade_list"] = len(result["trade_list"]), result["trade_list"][-30:]
    if total > len(result["trade_list"]):
        result["trade_list_note"] = f"共 {total} 笔交易，这里只列出最近 30 笔"
    return market.envelope(dates[end_t], data_caveats=panel.caveats, **result)


def backtest_span(context: ToolContext, start: str | None, end: str | None):
    """The market, the panel of the window `start`..`end` with its warm-up, and the day
    indices of the window (engine/window.py: exactly the window asked for, or one sentence
    naming the missing dates)."""
    from wyckoff.engine.window import MissingHistory, backtest_window

    market = MarketData.from_context(context)
    context.progress("加载行情", market.source, 0.02)
    try:
        window = backtest_window(
            market.bar_dates(), start, end, market.open_days(), source=market.source
        )
    except MissingHistory as exc:
        raise ToolFailure(exc.message) from None
    # The latest window is cached on disk: rounded up to whole years, few sizes are cached.
    days = window.days if end else -(-window.days // YEAR) * YEAR
    panel = market.panel(days, end=window.end if end else None)
    dates = [str(d) for d in panel.dates]
    return market, panel, dates.index(window.start), dates.index(window.end)


def _backtest_progress(
    context: ToolContext, dates: list[str], start_t: int, end_t: int, fraction: float
) -> None:
    if fraction >= 1:
        context.progress("汇总统计", "交易明细、收益与回撤", 1.0)
        return
    done = round(fraction * (end_t - start_t))
    day = f"{dates[start_t + done]}（{done}/{end_t - start_t} 个交易日）"
    context.progress("逐日回测", day, fraction)


def summarize_backtest(result: dict[str, Any]) -> str:
    period, account = result["period"], result["cash_portfolio"]
    return (
        f"{period['start']} 至 {period['end']}：复利收益 {signed_pct(account['total_return_pct'])}，"
        f"最大回撤 {account['max_drawdown_pct']:.2f}%；{result['benchmark']['verdict']}"
    )


BACKTEST_TOOL = ToolSpec(
    name="run_backtest",
    description="威科夫漏斗策略的逐日无未来函数回测（后台任务），两种记账口径。",
    params=BacktestParams,
    func=run_backtest_tool,
    title="策略回测",
    background=True,
    summarize=summarize_backtest,
    timeout_s=1800,
    output=results.BacktestResult,
    mcp_tier=2,
)
