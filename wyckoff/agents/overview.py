"""The market as a whole: the overview (main indices, breadth, regime) and an index's history."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from wyckoff.agents import results
from wyckoff.agents.market_data import MarketData, signed_pct
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.engine.thresholds import MAIN_INDICES


class NoParams(BaseModel):
    pass


def get_market_overview(params: BaseModel, context: ToolContext) -> dict[str, Any]:
    import numpy as np

    from wyckoff.engine.regime import market_regime

    market = MarketData.from_context(context)
    panel = market.panel()
    t = len(panel.dates) - 1
    indices = []
    for code, name in MAIN_INDICES.items():
        series = panel.index_close.get(code)
        if series is None:
            continue
        indices.append(
            {
                "code": code,
                "name": name,
                "close": round(float(series[t]), 2),
                "pct_change": round(float(series[t] / series[t - 1] - 1) * 100, 2),
                "ret20_pct": round(float(series[t] / series[t - 20] - 1) * 100, 2)
                if t >= 20
                else None,
            }
        )
    pct = panel.close[t] / panel.close[t - 1] - 1
    valid = ~np.isnan(pct)
    breadth = {
        "up": int((pct[valid] > 0).sum()),
        "down": int((pct[valid] < 0).sum()),
        "flat": int((pct[valid] == 0).sum()),
    }
    return market.envelope(
        panel.as_of, indices=indices, advance_decline=breadth, regime=market_regime(panel)
    )


def summarize_overview(result: dict[str, Any]) -> str:
    regime = result["regime"]
    parts = [
        f"{i['name']} {i['close']:.2f} {signed_pct(i['pct_change'])}" for i in result["indices"][:1]
    ]
    breadth = result["advance_decline"]
    parts.append(f"涨 {breadth['up']} 跌 {breadth['down']}")
    parts.append(f"市场状态 {regime['regime']}（{regime['label']}）")
    return "，".join(parts)


class HistoryParams(BaseModel):
    index: str = Field(default="000001.SH", description="指数代码，如 000001.SH、399006.SZ")
    days: int = Field(default=60, ge=5, le=250)


def get_market_history(params: HistoryParams, context: ToolContext) -> dict[str, Any]:
    import numpy as np

    market = MarketData.from_context(context)
    code = params.index.upper()
    if code not in MAIN_INDICES:
        raise ToolFailure(f"不支持的指数 {params.index}：可选 {', '.join(MAIN_INDICES)}。")
    frame = market.store.index_history(code, params.days + 60)
    if len(frame) < 2:
        raise ToolFailure(f"本地没有 {code} 的指数数据：运行 `wyckoff data sync`。")
    close = frame["close"].to_numpy()
    volume = frame["volume"].to_numpy()
    pct = np.concatenate([[np.nan], close[1:] / close[:-1] - 1])
    recent = slice(len(frame) - min(params.days, len(frame)), len(frame))
    window_close = close[recent]
    peaks = np.maximum.accumulate(window_close)
    up = pct[recent] > 0
    volume_up = np.diff(np.concatenate([[volume[recent][0]], volume[recent]])) > 0
    summary = {
        "period_return_pct": round(float(window_close[-1] / window_close[0] - 1) * 100, 2),
        "ret20_pct": round(float(close[-1] / close[-21] - 1) * 100, 2) if len(close) > 20 else None,
        "volume_ratio_5_20": round(float(volume[-5:].mean() / volume[-20:].mean()), 2)
        if len(volume) >= 20
        else None,
        "max_drawdown_pct": round(float(np.max(1 - window_close / peaks)) * 100, 2),
        "up_days": int(up.sum()),
        "down_days": int((pct[recent] < 0).sum()),
        "price_volume_up_days": int((up & volume_up).sum()),
        "price_down_volume_up_days": int(((pct[recent] < 0) & volume_up).sum()),
    }
    rows = [
        {
            "date": str(d)[:10],
            "close": round(float(c), 2),
            "pct_change": None if np.isnan(p) else round(float(p) * 100, 2),
            "amount": round(float(a)),
        }
        for d, c, p, a in zip(
            frame["date"].iloc[recent],
            close[recent],
            pct[recent],
            frame["amount"].to_numpy()[recent],
            strict=True,
        )
    ]
    return market.envelope(
        str(frame["date"].iloc[-1])[:10],
        index=code,
        name=MAIN_INDICES[code],
        summary=summary,
        rows=rows,
    )


def summarize_index_history(result: dict[str, Any]) -> str:
    summary = result["summary"]
    return (
        f"{result['name']} 近 {len(result['rows'])} 日 {signed_pct(summary['period_return_pct'])}，"
        f"最大回撤 {summary['max_drawdown_pct']:.2f}%"
    )


OVERVIEW_TOOLS = (
    ToolSpec(
        name="get_market_overview",
        description="大盘概览：主要指数、涨跌家数、市场状态（regime）。",
        params=NoParams,
        func=get_market_overview,
        title="大盘概览",
        concurrency_safe=True,
        summarize=summarize_overview,
        timeout_s=60,
        output=results.OverviewResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="get_market_history",
        description="指数历史行情与区间统计（收益、回撤、量价配合）。",
        params=HistoryParams,
        func=get_market_history,
        title="指数历史",
        concurrency_safe=True,
        summarize=summarize_index_history,
        timeout_s=60,
        output=results.IndexHistoryResult,
        mcp_tier=2,
    ),
)
