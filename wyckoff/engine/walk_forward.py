"""A walk-forward's verdict in words and numbers: one Chinese sentence per fold (its choice,
its out-of-sample return beside the CSI 300 and the market, drawdown, trades) and the summary
over folds: mean and spread of the out-of-sample excess over the CSI 300, and how many folds
beat it. The mean alone hides a strategy that wins one year big and loses the others."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any


def swept_names(grid: dict[str, list[Any]]) -> list[str]:
    """The parameters that take more than one value (the rest are the same in every row)."""
    return [name for name, values in grid.items() if len(values) > 1]


def fold_sentence(number: int, fold: dict[str, Any], swept: list[str]) -> str:
    """第 3 段（2016-01-05 至 2016-12-30）：样本内选中 hold_days=20、top_n=3；样本外复利 -4.2%，…"""
    out = fold["out_of_sample"]
    chosen = "、".join(f"{name}={fold['params'][name]}" for name in swept) or "网格中唯一的组合"
    market = _pct(out["market_return_pct"])
    excess = out["excess_csi300_pct"]
    versus = (
        "沪深300 无行情，无法比较"
        if excess is None
        else (f"沪深300 {_pct(out['csi300_return_pct'])}，超额 {excess:+.1f} 个百分点")
    )
    picked = (
        # no trades in training: every combination's metric is missing, the first one stands
        f"训练窗口没有交易，无从比较，沿用网格的第一个组合 {chosen}"
        if fold["in_sample"].get("trades") == 0
        else f"样本内选中 {chosen}"
    )
    return (
        f"第 {number} 段（{fold['test']['start']} 至 {fold['test']['end']}）：{picked}；"
        f"样本外复利 {_pct(out['cash_return_pct'])}，{versus}，全市场 {market}，"
        f"最大回撤 {out['cash_max_drawdown_pct']:.1f}%，交易 {out['trades']} 笔。"
    )


def _pct(value: float | None) -> str:
    return "无" if value is None else f"{value:+.1f}%"


def walk_forward_summary(folds: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the folds: the mean and (sample) standard deviation of the out-of-sample excess
    over the CSI 300 in points, the folds with a positive one, and the mean returns."""
    excess = [f["out_of_sample"]["excess_csi300_pct"] for f in folds]
    known = [x for x in excess if x is not None]
    return {
        "folds": len(folds),
        "mean_excess_csi300_pct": _rounded(statistics.fmean(known)) if known else None,
        "std_excess_csi300_pct": _rounded(statistics.stdev(known)) if len(known) > 1 else None,
        "positive_excess_folds": sum(1 for x in known if x > 0),
        "mean_in_sample_return_pct": _mean(f["in_sample"]["cash_return_pct"] for f in folds),
        "mean_out_of_sample_return_pct": _mean(
            f["out_of_sample"]["cash_return_pct"] for f in folds
        ),
    }


def summary_sentence(summary: dict[str, Any]) -> str:
    """The summary in one sentence, for the end of the table."""
    mean, std = summary["mean_excess_csi300_pct"], summary["std_excess_csi300_pct"]
    returns = (
        f"平均每段复利收益：样本内 {summary['mean_in_sample_return_pct']:.2f}%，"
        f"样本外 {summary['mean_out_of_sample_return_pct']:.2f}%（样本外明显更差说明参数可能过拟合）"
    )
    if mean is None:
        return returns + "；行情库没有沪深300，无法计算超额。"
    spread = "只有一段，无标准差" if std is None else f"标准差 {std:.2f} 个百分点"
    return (
        f"{returns}；样本外超额（对沪深300）平均 {mean:+.2f} 个百分点，{spread}；"
        f"样本外跑赢同期沪深300的有 {summary['positive_excess_folds']} / {summary['folds']} 段。"
    )


def _mean(values: Iterable[float]) -> float:
    return _rounded(statistics.fmean(values))


def _rounded(value: float) -> float:
    return round(value, 2)
