"""The market as it stood on a day: its regime, one stock's Wyckoff diagnosis, and the
funnel replayed on a past date. Each is computed over a panel loaded up to that day, so
nothing after it can reach the result (no look-ahead); each result says so."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from wyckoff.agents import results
from wyckoff.agents.backtest import real_date
from wyckoff.agents.market_data import MarketData
from wyckoff.agents.screening import funnel_on_last_day
from wyckoff.agents.stock_args import StockText
from wyckoff.agents.stocks import stock_diagnosis
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec

POINT_IN_TIME = (
    "时点计算：只用 {as_of} 收盘及以前的行情，不含之后的任何数据（无未来函数）；"
    "价格是当日的实际成交价或其前复权值，股票名称与行业是现在的。"
)
DATE_HELP = "日期 YYYY-MM-DD：按这一天收盘时已知的行情计算；省略为最新交易日"


class OnDateParams(BaseModel):
    date: str | None = Field(default=None, description=DATE_HELP)

    @field_validator("date")
    @classmethod
    def _real_date(cls, text: str | None) -> str | None:
        return real_date(text)


class DiagnoseParams(OnDateParams):
    code: StockText = Field(description="6 位股票代码或股票名称")


class FunnelSimulationParams(BaseModel):
    date: str = Field(description="过去的某一天 YYYY-MM-DD：重演这一天收盘后的全市场漏斗")
    board: Literal["all", "main", "chinext", "star"] = Field(default="all", description="板块范围")

    @field_validator("date")
    @classmethod
    def _real_date(cls, text: str) -> str:
        checked = real_date(text)
        if checked is None:
            raise ValueError("需要一个日期 YYYY-MM-DD")
        return checked


def market_on(context: ToolContext, day: str | None, min_days: int = 2):
    """The market and its panel ending on the last trading day on or before `day`."""
    import numpy as np

    market = MarketData.from_context(context)
    dates = market.bar_dates()
    days = len(dates) if not day else int((dates <= np.datetime64(day)).sum())
    if days < min_days:
        have = f"只有 {days} 个交易日的行情" if days else "没有行情"
        raise ToolFailure(
            f"{day or '最新'} 及以前{have}，至少需要 {min_days} 个交易日：选更晚的日期，"
            "或先用 `wyckoff data sync --days N` 同步更早的行情。"
        )
    return market, market.panel(end=day)


def point_in_time(as_of: str) -> str:
    return POINT_IN_TIME.format(as_of=as_of)


def market_regime_tool(params: OnDateParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.regime import market_regime

    market, panel = market_on(context, params.date)
    return market.envelope(
        panel.as_of, **market_regime(panel), point_in_time=point_in_time(panel.as_of)
    )


def summarize_regime(result: dict[str, Any]) -> str:
    trade = "允许开新仓" if result["buy_allowed"] else "禁止开新仓"
    return f"{result['as_of']} 市场状态 {result['regime']}（{result['label']}），{trade}"


def wyckoff_diagnose(params: DiagnoseParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.regime import market_regime

    market, panel = market_on(context, params.date)
    code = market.resolve_code(params.code)
    diagnosis = stock_diagnosis(market, panel, code)
    regime = market_regime(panel)
    return {
        **diagnosis,
        "market_regime": {k: regime[k] for k in ("regime", "label", "reason", "buy_allowed")},
        "point_in_time": point_in_time(panel.as_of),
    }


def summarize_diagnose(result: dict[str, Any]) -> str:
    health = result["health_label"].split(" ")[-1]
    return (
        f"{result['as_of']} {result['code']} {result['name']}：{result['phase']}，{health}，"
        f"大盘 {result['market_regime']['label']}"
    )


def run_funnel_simulation(params: FunnelSimulationParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.window import WARMUP_DAYS

    context.progress("加载行情", params.date, 0.05)
    market, panel = market_on(context, params.date, min_days=WARMUP_DAYS)
    context.progress("全市场漏斗", f"{panel.as_of}，{len(panel.codes):,} 只股票", 0.3)
    funnel = funnel_on_last_day(panel, params.board)
    return market.envelope(
        panel.as_of,
        **funnel,
        point_in_time=point_in_time(panel.as_of),
        data_caveats=panel.caveats,
    )


def summarize_simulation(result: dict[str, Any]) -> str:
    return (
        f"{result['as_of']} 的漏斗重演：候选 {result['summary']['report_candidates']} 只，"
        f"市场状态 {result['regime']}（{result['trade_mode']}）"
    )


PAST_MARKET_TOOLS = (
    ToolSpec(
        name="market_regime",
        description="某一天（默认最新）的大盘状态：进攻/中性/防守等、理由、能否开新仓、市场宽度与指数趋势。",
        params=OnDateParams,
        func=market_regime_tool,
        title="大盘状态",
        concurrency_safe=True,
        summarize=summarize_regime,
        timeout_s=60,
        output=results.RegimeResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="wyckoff_diagnose",
        description="某一天（默认最新）一只股票的威科夫诊断：吸筹阶段、通道、信号、止损、健康度，连同当天的大盘状态。",
        params=DiagnoseParams,
        func=wyckoff_diagnose,
        title="威科夫诊断",
        concurrency_safe=True,
        summarize=summarize_diagnose,
        timeout_s=60,
        output=results.WyckoffDiagnoseResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="run_funnel_simulation",
        description="重演过去某一天收盘后的全市场漏斗（只用当天及以前的数据，无未来函数），不写入推荐记录。",
        params=FunnelSimulationParams,
        func=run_funnel_simulation,
        title="漏斗时点重演",
        concurrency_safe=True,
        summarize=summarize_simulation,
        timeout_s=600,
        output=results.FunnelSimulationResult,
        mcp_tier=2,
    ),
)
