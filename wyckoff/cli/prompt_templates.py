"""Prompt templates: structured research asks the user fills in and sends as a question."""

from __future__ import annotations

TEMPLATES: dict[str, tuple[str, str]] = {
    "deep-dive": (
        "个股深度分析",
        "请对 {股票} 做一次威科夫深度分析：先调用 analyze_stock 诊断，再看 get_market_overview 的市场状态；"
        "说明所处阶段、关键支撑与阻力、量价关系、触发信号、止损位，以及在什么条件下观点失效。",
    ),
    "entry-plan": (
        "建仓计划",
        "我想建仓 {股票}，可用资金 {金额} 元。请诊断该股和市场状态，若允许开新仓，按威科夫信号给出分批建仓计划："
        "每批股数（100 股一手）、价格区间、止损位、放弃条件。",
    ),
    "sector-rotation": (
        "行业轮动",
        "请调用 screen_stocks 后分析当前最强的行业：每个行业的代表股、通道和信号，以及行业强弱是否可能切换。",
    ),
    "risk-review": (
        "风险复盘",
        '请调用 portfolio(mode="diagnose") 和 get_market_overview，列出我持仓中最大的三个风险，并给出每个风险的应对条件。',
    ),
}
