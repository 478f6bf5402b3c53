"""Tool implementations the agent, the direct commands and MCP share: the open market
(`market_data`) and the engine's tools by family (`stocks`, `overview`, `screening`,
`backtest`, `history`), the portfolio, AI reports and decisions, backtest sweeps, stock lookup,
and the result shapes promised to MCP clients (`results`). They import the tool contract
(`cli/tools.py`), which names none of them, and sit above the engine and the stores; they write
no SQL themselves.
"""
