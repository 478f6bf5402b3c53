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


def test_piped_tables_print_every_value_whole(openai_server):
    from tests.conftest import add_scripted_model

    add_scripted_model(openai_server)
    listing = cli("model", "list")
    assert listing.returncode == 0, listing.stderr
    assert openai_server.base_url + "/v1" in listing.stdout  # not "http://…"
    assert "1,000,000" in listing.stdout  # gpt-4.1's context window, not "1,000,00…"
    assert "…" not in listing.stdout
