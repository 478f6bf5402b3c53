"""What the default strategy did on real history: the research behind docs/strategy.md.

Every backtest result carries this record, so the command line, the agent and MCP tell the
user the same thing: on eight real years the default strategy did not beat the CSI 300, and
neither did the walk-forward's choice between it and the quiet-uptrend design. The fold
figures are those of the runs docs/strategy.md shows; a test keeps the two in step.
"""

from __future__ import annotations

from statistics import mean, stdev

# Out-of-sample excess over the CSI 300, percentage points, per one-year fold (2013-03 .. 2021-04).
DEFAULT_FOLDS_EXCESS = (26.0, -87.1, 70.1, -50.6, -42.8, -38.9, -40.6, -7.7)
WALK_FORWARD_FOLDS_EXCESS = (6.8, -57.7, 84.7, -47.2, 1.6, -24.7, -12.3, -8.1)


def _summary(folds: tuple[float, ...]) -> str:
    wins = sum(excess > 0 for excess in folds)
    return (
        f"平均超额 {mean(folds):+.1f} 个百分点（标准差 {stdev(folds):.1f}），"
        f"{len(folds)} 年里 {wins} 年跑赢"
    )


STRATEGY_RECORD = (
    "默认策略的真实记录：2013–2021 年沪深全市场（含退市股）逐年样本外检验，相对沪深300 "
    f"{_summary(DEFAULT_FOLDS_EXCESS)}；让滚动检验每年只用前一年的数据，在默认策略与“安静上升趋势”"
    f"之间选参数，{_summary(WALK_FORWARD_FOLDS_EXCESS)}。没有证据表明这个策略能跑赢指数："
    "把它当作研究和复盘的工具，不要当作收益承诺（见 docs/strategy.md）。"
)
