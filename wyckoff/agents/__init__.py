"""Tool implementations the agent, the direct commands and MCP share: market data and the
Wyckoff engine (`market`), the portfolio, AI reports and decisions, backtest sweeps, stock
lookup, and the result shapes promised to MCP clients (`results`). They sit below the tool
contract (`cli/tools.py`) and above the engine and the stores; they write no SQL themselves.
"""
