"""`wyckoff screen` on the demo market: the table is in the order its text states, and a cut
table says how many of how many it shows."""

from __future__ import annotations

import json

from tests.conftest import cli


def _table_rows(stdout: str) -> list[list[str]]:
    """The 候选股 table's body rows as cells (rich draws them between │ borders)."""
    return [
        [cell.strip() for cell in line.strip("│ ").split("│")]
        for line in stdout.splitlines()
        if line.startswith("│")
    ]


def test_screen_rows_follow_the_order_the_output_states(demo_home):
    result = cli("screen")
    assert result.returncode == 0, result.stderr
    assert "先列触发信号的，再按评分从高到低" in result.stdout
    rows = _table_rows(result.stdout)
    order = [(not signals, -float(score)) for *_, signals, score in rows]
    assert rows and order == sorted(order)
    # The demo market has the case the issue saw: a lower score listed above a higher one.
    scores = [float(score) for *_, score in rows]
    assert scores != sorted(scores, reverse=True)
    # The legend no longer claims that a higher score alone means higher in the table.
    assert "越高越靠前" not in result.stdout


def test_a_cut_screen_table_says_how_many_of_how_many(demo_home):
    payload = json.loads(cli("screen", "--json").stdout)
    assert payload["shown"] == len(payload["top_candidates"]) == 20
    assert payload["total"] == payload["summary"]["layer3_passed"] > 20
    text = cli("screen").stdout
    assert len(_table_rows(text)) == 20
    assert f"第三层共 {payload['total']} 只，只显示排序前 20 只（`--limit 0` 显示全部）。" in text


def test_screen_limit_shows_as_many_as_asked_and_zero_shows_all(demo_home):
    total = json.loads(cli("screen", "--json").stdout)["total"]
    five = cli("screen", "--limit", "5")
    assert len(_table_rows(five.stdout)) == 5
    assert f"第三层共 {total} 只，只显示排序前 5 只" in five.stdout
    every = cli("screen", "--limit", "0")
    assert len(_table_rows(every.stdout)) == total and "只显示排序前" not in every.stdout
    assert json.loads(cli("screen", "--limit", "0", "--json").stdout)["shown"] == total
