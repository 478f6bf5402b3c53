"""A fill checked against the demo's synthetic prices says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from wyckoff.agents.fill_price import check_fill_price
from wyckoff.engine import marks
from wyckoff.engine.market_store import MarketStore
from wyckoff.errors import UsageError


@pytest.mark.parametrize("source", ["demo", "baostock"])
def test_a_price_outside_the_demos_synthetic_range_says_the_range_is_synthetic(monkeypatch, source):
    """Found by hand: importing a real 交割单 on demo data said 600519 traded 13.11–13.90 that
    day and "请检查价格和成交日期", as if the user's 1500.00 were wrong."""
    monkeypatch.setattr(marks, "traded_range", lambda market, code, day: (13.11, 13.90))
    store = MarketStore(Path("/nonexistent/market.duckdb"), source)
    with pytest.raises(UsageError) as refused:
        check_fill_price(store, "600519", "贵州茅台", 1_500_000, "20260105", force=False)
    said = refused.value.message
    assert "成交区间 13.11–13.90（未复权）内" in said
    if source == "demo":
        assert "演示数据" in said and "合成" in said and "wyckoff data use" in said
    else:
        assert said.endswith("请检查价格和成交日期。") and "演示" not in said
