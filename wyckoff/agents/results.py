"""The shapes of tool results that are stable enough to promise (a ToolSpec's `output`).

MCP clients receive them as the tool's output schema and validate structured results
against it. Each model names the fields a caller can rely on and allows more, so a
detail added to a result later does not break a client.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class MarketResult(Open):
    """Every market result: where the data came from, and the demo label."""

    source: str = Field(description="数据源；demo 表示本地合成的演示数据")
    as_of: str = Field(description="数据截至的交易日")
    data_note: str | None = Field(default=None, description="演示数据的标注（仅 demo）")
    bar_note: str | None = Field(
        default=None, description="盘中：as_of 当天的日线尚未收盘（仅交易时段）"
    )


class StockQuote(Open):
    code: str
    name: str
    industry: str | None = None
    board: str | None = None
    close: float | None = None
    pct_change: float | None = None


class SearchResult(MarketResult):
    results: list[StockQuote]
    note: str | None = None


class DailyBar(Open):
    date: str
    open: float
    high: float
    low: float
    close: float
    volume: int
    amount: float


class SignalRecord(Open):
    """How a signal has done on this store (agents/signal_record.py); numbers only when
    `status` is ok."""

    signal: str
    label: str
    horizon: int = Field(description="持有交易日数")
    status: str = Field(description="ok | demo | not_studied | too_short | too_few")
    text: str = Field(description="给用户看的一句话，回答时照引")
    years: float | None = None
    excess_vs_market: float | None = Field(
        default=None, description="对全市场等权的平均超额（小数）"
    )
    excess_vs_csi300: float | None = None
    hit_rate: float | None = None
    t_stat: float | None = Field(default=None, description="按日期聚类的 t 值")
    events: int | None = None
    after_cost: bool | None = None
    evidence: str | None = Field(
        default=None, description="edge（正且 |t|≥2）| negative（负且 |t|≥2）| none"
    )
    note: str | None = None


class AnalyzeResult(MarketResult):
    code: str
    name: str
    health: str | None = Field(default=None, description="diagnose：健康度")
    health_label: str | None = None
    reasons: list[str] | None = Field(default=None, description="diagnose：健康度的理由")
    phase: str | None = Field(default=None, description="diagnose：吸筹阶段")
    stop: dict[str, Any] | None = Field(default=None, description="diagnose：止损位")
    bars: list[DailyBar] | None = Field(default=None, description="price：最近日线（前复权）")
    signal_records: list[SignalRecord] | None = Field(
        default=None, description="diagnose：每个信号在本地行情库历史上的记录"
    )


class IndexQuote(Open):
    code: str
    name: str
    close: float
    pct_change: float
    ret20_pct: float | None = None


class OverviewResult(MarketResult):
    indices: list[IndexQuote]
    advance_decline: dict[str, int]
    regime: dict[str, Any]


class IndexRow(Open):
    date: str
    close: float
    pct_change: float | None = None
    amount: float


class IndexHistoryResult(MarketResult):
    index: str
    name: str
    summary: dict[str, float | int | None]
    rows: list[IndexRow]


class Candidate(Open):
    code: str
    name: str
    industry: str | None = None
    close: float
    channels: list[str]
    triggers: list[str]
    score: float


class ScreenResult(MarketResult):
    board: str
    summary: dict[str, int]
    regime: str
    regime_label: str
    trade_mode: str
    top_candidates: list[Candidate]
    total: int
    shown: int
    trigger_groups: dict[str, list[str]]
    top_sectors: list[dict[str, Any]]
    symbols_for_report: list[str]
    record: SignalRecord | None = Field(default=None, description="screen 前 20 的历史记录")
    signal_records: list[SignalRecord] | None = Field(
        default=None, description="候选里每个信号在本地行情库历史上的记录"
    )


class BacktestResult(MarketResult):
    period: dict[str, str]
    params: dict[str, Any]
    trades: int
    win_rate_pct: float | None = None
    avg_ret_pct: float | None = None
    simple_view: dict[str, Any]
    cash_portfolio: dict[str, Any]
    benchmark: dict[str, Any] = Field(
        description="同期沪深300与全市场的收益、策略（复利口径）超额收益和一句结论"
    )
    trade_list: list[dict[str, Any]]
    trade_list_note: str | None = None


class HistoryQueryResult(Open):
    source: str = Field(description="查询的历史：recommendation / signal / archive")
    rows: list[dict[str, Any]]
    note: str | None = None


class PortfolioResult(Open):
    positions: list[dict[str, Any]]
    cash: float
    note: str | None = None
    source: str | None = Field(default=None, description="diagnose：行情数据源")
    data_note: str | None = None


class PortfolioChange(Open):
    action: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class RegimeResult(MarketResult):
    regime: str
    label: str
    reason: str
    buy_allowed: bool
    point_in_time: str = Field(description="只用 as_of 及以前的行情计算的说明")


class WyckoffDiagnoseResult(AnalyzeResult):
    market_regime: dict[str, Any]
    point_in_time: str = Field(description="只用 as_of 及以前的行情计算的说明")


class FunnelSimulationResult(ScreenResult):
    point_in_time: str = Field(description="只用 as_of 及以前的行情计算的说明")
