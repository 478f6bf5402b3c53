"""`wyckoff portfolio check`: the holdings diagnosis without a model, the agent tool's numbers."""

from __future__ import annotations

import json

from tests.cli_runner import cli


def demo_codes(home, count: int) -> list[str]:
    from wyckoff.engine.market_store import MarketStore

    return list(MarketStore.for_source(home, "demo").load_panel(60).codes[:count])


def test_check_diagnoses_each_holding_as_analyze_does_without_a_model(demo_home):
    (code,) = demo_codes(demo_home, 1)
    assert cli("portfolio", "add", code, "--shares", "100", "--cost", "12").returncode == 0
    checked = cli("portfolio", "check", "--json")
    assert checked.returncode == 0, checked.stderr
    (row,) = json.loads(checked.stdout)["positions"]
    analyzed = json.loads(cli("analyze", code, "--cost", "12", "--json").stdout)
    assert row["health"] == analyzed["health"] and row["reasons"] == analyzed["reasons"]
    assert row["stop_level"] == analyzed["stop"]["stop"]
    assert row["stop_kind"] == analyzed["stop"]["kind"]
    assert row["exit_status"] == analyzed["exit"]
    shown = cli("portfolio", "check")
    assert shown.returncode == 0 and code in shown.stdout
    assert analyzed["health_label"] in shown.stdout and "演示数据" in shown.stdout
    assert all(reason in shown.stdout for reason in analyzed["reasons"])


def test_check_of_an_empty_portfolio_says_how_to_add_one(demo_home):
    empty = cli("portfolio", "check")
    assert empty.returncode == 0 and "wyckoff portfolio add" in empty.stderr
