"""Defects found by using Wyckoff as a new A-share investor would, each pinned by a test."""

from __future__ import annotations

from tests.conftest import cli


def test_backtest_with_an_impossible_date_is_a_usage_error(demo_home):
    result = cli("backtest", "--start", "2026-13-05")
    assert result.returncode == 2, result.stderr
    assert "2026-13-05" in result.stderr and "YYYY-MM-DD" in result.stderr
    assert "Traceback" not in result.stderr


def test_backtest_starting_after_the_data_says_so(demo_home):
    result = cli("backtest", "--start", "2099-01-05")
    assert result.returncode != 0
    assert "晚于行情的最后一天" in result.stderr
    assert "Traceback" not in result.stderr
