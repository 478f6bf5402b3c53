"""Every backtest, sweep row and walk-forward fold shows the CSI 300 and the whole market
over the same window, and the strategy's excess return over each (issue 23)."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import cli
from tests.engine_fixtures import bars_panel
from wyckoff.engine.benchmark import benchmarks

nan = np.nan


def _two_stock_market():
    panel = bars_panel([[10, 20], [11, nan], [11, 18], [11.55, 18]], codes=("600001", "600002"))
    panel.index_close = {"000300.SH": np.array([4000.0, 4100.0, 4300.0, 4400.0])}
    return panel


def test_the_benchmarks_and_the_excess_return_worked_by_hand():
    result = benchmarks(_two_stock_market(), 0, 3, -5.0)
    csi300, market = result["indices"]
    assert (csi300["name"], csi300["return_pct"], csi300["excess_pct"]) == ("沪深300", 10.0, -15.0)
    # equal weight: +10% (600002 suspended), then (0% - 10%) / 2, then (+5% + 0%) / 2:
    # 1.10 x 0.95 x 1.025 = 1.071125
    assert (market["name"], market["return_pct"], market["excess_pct"]) == (
        "全市场等权",
        7.11,
        -12.11,
    )
    assert result["verdict"] == (
        "同期策略复利收益 -5.00%，跑输沪深300（+10.00%）15.00 个百分点，"
        "跑输全市场等权（+7.11%）12.11 个百分点。"
    )
    assert "没有中证全指" in result["note"]


def test_the_all_market_index_is_used_when_the_store_has_it():
    panel = _two_stock_market()
    panel.index_close["000985.CSI"] = np.array([5000.0, 5000.0, 5100.0, 4900.0])
    result = benchmarks(panel, 0, 3, 1.0)
    market = result["indices"][1]
    assert (market["code"], market["name"], market["return_pct"]) == (
        "000985.CSI",
        "中证全指",
        -2.0,
    )
    assert "note" not in result and result["verdict"].endswith(
        "跑赢中证全指（-2.00%）3.00 个百分点。"
    )


def test_a_benchmark_the_store_lacks_is_said_to_be_missing():
    panel = _two_stock_market()
    panel.index_close = {}
    result = benchmarks(panel, 0, 3, 1.0)
    assert result["indices"][0]["return_pct"] is None
    assert "沪深300（行情库没有这段数据，无法比较）" in result["verdict"]


def test_the_backtest_command_puts_the_strategy_beside_the_market(demo_home):
    payload = json.loads(cli("backtest", "--json").stdout)
    cash = payload["cash_portfolio"]["total_return_pct"]
    csi300, market = payload["benchmark"]["indices"]
    assert payload["benchmark"]["period"] == payload["period"]
    assert csi300["code"] == "000300.SH" and csi300["return_pct"] is not None
    assert csi300["excess_pct"] == round(cash - csi300["return_pct"], 2)
    assert market["excess_pct"] == round(cash - market["return_pct"], 2)
    text = cli("backtest").stdout
    side = "跑赢" if csi300["excess_pct"] > 0 else "跑输"
    assert f"同期基准（{payload['period']['start']} ~ {payload['period']['end']}）" in text
    assert f"{side}沪深300（{csi300['return_pct']:+.2f}%）" in text
    assert "不是指数" in text  # the demo store has no 中证全指: says what it uses instead


def _fold(test: tuple[str, str], params: dict, inside: float, outside: dict) -> dict:
    return {
        "test": {"start": test[0], "end": test[1]},
        "params": params,
        "in_sample": {"cash_return_pct": inside},
        "out_of_sample": outside,
    }


def _out(cash: float, csi300: float, market: float, drawdown: float, trades: int) -> dict:
    return {
        "cash_return_pct": cash,
        "csi300_return_pct": csi300,
        "market_return_pct": market,
        "excess_csi300_pct": round(cash - csi300, 2),
        "cash_max_drawdown_pct": drawdown,
        "trades": trades,
    }


def test_each_fold_gets_a_sentence_and_the_folds_a_mean_spread_and_count_worked_by_hand():
    from wyckoff.engine.walk_forward import fold_sentence, walk_forward_summary

    folds = [
        _fold(
            ("2016-01-05", "2016-12-30"),
            {"hold_days": 20, "top_n": 3, "trailing": True},
            30.0,
            _out(-4.2, -11.3, -8.0, 14.6, 41),
        ),
        _fold(
            ("2017-01-03", "2017-12-29"),
            {"hold_days": 10, "top_n": 5, "trailing": True},
            10.0,
            _out(18.6, 21.6, 2.0, 9.0, 37),
        ),
        _fold(
            ("2018-01-02", "2018-12-28"),
            {"hold_days": 5, "top_n": 3, "trailing": True},
            2.0,
            _out(-20.1, -25.3, -28.0, 30.2, 52),
        ),
    ]
    assert fold_sentence(1, folds[0], ["hold_days", "top_n"]) == (
        "第 1 段（2016-01-05 至 2016-12-30）：样本内选中 hold_days=20、top_n=3；样本外复利 -4.2%，"
        "沪深300 -11.3%，超额 +7.1 个百分点，全市场 -8.0%，最大回撤 14.6%，交易 41 笔。"
    )
    # found by hand: a training window without trades "chose" the grid's first combination
    idle = {**folds[0], "in_sample": {"cash_return_pct": 0.0, "trades": 0}}
    assert fold_sentence(1, idle, ["hold_days", "top_n"]).startswith(
        "第 1 段（2016-01-05 至 2016-12-30）：训练窗口没有交易，无从比较，"
        "沿用网格的第一个组合 hold_days=20、top_n=3；样本外复利 -4.2%，"
    )
    # excess +7.1, -3.0, +5.2: mean 3.1; deviations 4, -6.1, 2.1: variance (16 + 37.21 + 4.41) / 2
    summary = walk_forward_summary(folds)
    assert summary == {
        "folds": 3,
        "mean_excess_csi300_pct": 3.1,
        "std_excess_csi300_pct": round((57.62 / 2) ** 0.5, 2),  # 5.37
        "positive_excess_folds": 2,
        "mean_in_sample_return_pct": 14.0,
        "mean_out_of_sample_return_pct": round((-4.2 + 18.6 - 20.1) / 3, 2),
    }
    assert summary["std_excess_csi300_pct"] == 5.37
