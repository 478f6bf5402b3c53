"""Single-stock tools: find a stock by code or name, diagnose it, and its K-line chart data."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from wyckoff import history_store
from wyckoff.agents import results
from wyckoff.agents.market_data import MarketData, price_text, signed_pct
from wyckoff.agents.signal_record import records_for
from wyckoff.agents.stock_args import StockText
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec

# --- search_stock_by_name -------------------------------------------------------------------


def search_names(stocks, keyword: str, limit: int = 10) -> list[str]:
    """Codes matching a keyword: exact code, exact name, names containing it, then the
    longest stock name contained in the keyword ("茅台最近怎么样" -> 贵州茅台)."""
    keyword = keyword.strip()
    codes = stocks["code"].tolist()
    names = stocks["name"].fillna("").tolist()
    found: list[str] = []

    def add(code: str) -> None:
        if code not in found:
            found.append(code)

    for code, name in zip(codes, names, strict=True):
        if keyword in (code, name):
            add(code)
    for code, name in zip(codes, names, strict=True):
        if keyword and (keyword in name or (keyword.isdigit() and code.startswith(keyword))):
            add(code)
    contained = sorted(
        ((len(n), c) for c, n in zip(codes, names, strict=True) if len(n) >= 2 and n in keyword),
        reverse=True,
    )
    for _, code in contained:
        add(code)
    return found[:limit]


def _latest_quote(panel, code: str) -> dict[str, Any]:
    import numpy as np

    if not panel.has(code):
        return {"close": None, "pct_change": None}
    j = panel.column(code)
    closes = panel.close[:, j]
    valid = np.flatnonzero(~np.isnan(closes))
    if len(valid) < 2:
        return {"close": None, "pct_change": None}
    last, prev = closes[valid[-1]], closes[valid[-2]]
    return {"close": round(float(last), 2), "pct_change": round(float(last / prev - 1) * 100, 2)}


class SearchParams(BaseModel):
    keyword: StockText = Field(description="股票代码、名称或包含名称的一句话")


def search_stock_by_name(params: SearchParams, context: ToolContext) -> dict[str, Any]:
    market = MarketData.from_context(context)
    stocks = market.stock_table().set_index("code", drop=False)
    panel = market.panel()
    results = []
    for code in search_names(stocks.reset_index(drop=True), params.keyword):
        row = stocks.loc[code]
        results.append(
            {
                "code": code,
                "name": row["name"],
                "industry": row["industry"],
                "board": row["board"],
                **_latest_quote(panel, code),
            }
        )
    note = None if results else f"没有找到与 '{params.keyword}' 匹配的股票。"
    return market.envelope(panel.as_of, results=results, **({"note": note} if note else {}))


def summarize_search(result: dict[str, Any]) -> str:
    found = result["results"]
    if not found:
        return "没有找到匹配的股票"
    shown = "、".join(
        f"{r['name']}（{r['code']}）{price_text(r['close'])} {signed_pct(r['pct_change'])}"
        for r in found[:3]
    )
    return f"找到 {len(found)} 只：{shown}"


# --- analyze_stock ----------------------------------------------------------------------------


class AnalyzeParams(BaseModel):
    code: StockText = Field(description="6 位股票代码或股票名称")
    mode: Literal["diagnose", "price"] = Field(
        default="diagnose", description="diagnose 诊断；price 最近日线"
    )
    cost: float = Field(
        default=0,
        ge=0,
        allow_inf_nan=False,
        description="持仓成本价（可选，用于盈亏与健康判断）",
    )
    days: int = Field(default=30, ge=1, le=250, description="price 模式返回的天数")


def analyze_stock(params: AnalyzeParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.triggers import TRIGGER_KEYS

    market = MarketData.from_context(context)
    code = market.resolve_code(params.code)
    panel = market.panel()
    if params.mode == "diagnose":
        result = stock_diagnosis(market, panel, code, params.cost)
        keys = [TRIGGER_KEYS[label] for label in result["triggers"]]
        return {**result, "signal_records": records_for(market, keys)}
    name = name_with_bars(panel, code)
    frame = panel.stock_frame(code, params.days)
    rows = [
        {
            "date": d.strftime("%Y-%m-%d"),
            **{k: round(float(v), 2) for k, v in row.items() if k not in ("volume", "amount")},
            "volume": int(row["volume"]),
            "amount": round(float(row["amount"])),
        }
        for d, row in frame.iterrows()
    ]
    return market.envelope(panel.as_of, code=code, name=name, adjust="qfq", bars=rows)


def name_with_bars(panel, code: str) -> str:
    """The stock's name, when the panel has its bars."""
    if not panel.has(code):
        raise ToolFailure(
            f"{code} 在本地行情库中没有日线数据：运行 `wyckoff data sync --codes {code}` 后重试。"
        )
    return panel.stock_value(code, "name")


def stock_diagnosis(market: MarketData, panel, code: str, cost: float = 0.0) -> dict[str, Any]:
    """The engine's diagnosis of one stock on the panel's last day, in the market envelope."""
    from wyckoff.engine.health import diagnose

    name = name_with_bars(panel, code)
    result = diagnose(panel, code, cost=cost)
    if "error" in result:
        raise ToolFailure(f"{code} {name}：{result['error']}")
    return market.envelope(
        panel.as_of, name=name, industry=panel.stock_value(code, "industry"), **result
    )


def summarize_analysis(result: dict[str, Any]) -> str:
    stock = f"{result['code']} {result['name']}"
    if "bars" in result:
        bars = result["bars"]
        return f"{stock} 最近 {len(bars)} 根日线，最新收盘 {bars[-1]['close']:.2f}"
    health = result["health_label"].split(" ")[-1]
    return f"{stock} 收盘 {result['close']:.2f}，{health}，{result['phase']}"


BAR_FIELDS = ("open", "high", "low", "close", "volume")


def kline_data(context: ToolContext, code: str, days: int = 120) -> dict[str, Any]:
    """Bars, MA50/MA200 and signal dates of one stock, for the K-line chart."""
    import pandas as pd

    market = MarketData.from_context(context)
    code = market.resolve_code(code)
    panel = market.panel()
    if not panel.has(code):
        raise ToolFailure(f"{code} 在本地行情库中没有日线数据。")
    frame = panel.stock_frame(code)
    close = frame["close"]
    ma50, ma200 = close.rolling(50).mean(), close.rolling(200).mean()
    frame = frame.tail(days)
    dates = [d.strftime("%Y-%m-%d") for d in frame.index]
    markers: set[str] = set()
    if context.store is not None:
        markers = history_store.signal_dates(context.store, code) & set(dates)

    def clean(series: pd.Series) -> list[float | None]:
        return [None if pd.isna(v) else float(v) for v in series.tail(days)]

    return market.envelope(
        panel.as_of,
        code=code,
        name=panel.stock_value(code, "name"),
        bars=[
            {"date": d, **dict(zip(BAR_FIELDS, map(float, row), strict=True))}
            for d, row in zip(dates, frame[list(BAR_FIELDS)].to_numpy(), strict=True)
        ],
        ma50=clean(ma50),
        ma200=clean(ma200),
        markers=sorted(markers),
    )


STOCK_TOOLS = (
    ToolSpec(
        name="search_stock_by_name",
        description="按代码或名称查找 A 股股票，返回最新价和涨跌幅。",
        params=SearchParams,
        func=search_stock_by_name,
        title="查找股票",
        concurrency_safe=True,
        summarize=summarize_search,
        timeout_s=60,
        output=results.SearchResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="analyze_stock",
        description="诊断一只股票（健康度与理由、均线、通道、吸筹阶段、信号、止损）或返回最近日线。"
        "每个信号带 signal_records：它在本地行情库历史上的记录（20 日超额、胜率、t 值、事件数），"
        "回答时引用其 text。",
        params=AnalyzeParams,
        func=analyze_stock,
        title="个股诊断",
        concurrency_safe=True,
        summarize=summarize_analysis,
        timeout_s=60,
        output=results.AnalyzeResult,
        mcp_tier=2,
    ),
)
