"""How the command line writes percentages: a change too small to show is 0.00%."""

from wyckoff.cli.numbers import pct
from wyckoff.routine.brief_render import account_lines


def test_a_percentage_that_rounds_to_zero_has_no_sign():
    assert [pct(v, signed=True) for v in (-0.001, 0.004, 0.0, -0.005001, 1.5)] == [
        "0.00%",
        "0.00%",
        "0.00%",
        "-0.01%",
        "+1.50%",
    ]
    assert pct(-0.001) == "0.00%" and pct(None) == "—"


def test_the_briefs_nav_line_never_shows_minus_zero_percent():
    account = {
        "nav_cents": 100_000_000,
        "nav_change_cents": -500,
        "nav_change_pct": -0.0005,
        "date": "2026-12-03",
        "realized_cents": 0,
        "unrealized_cents": -500,
        "unpriced": [],
        "note": None,
    }
    line = account_lines(account)[0]
    assert "较前一交易日 -5.00，0.00%" in line and "-0.00%" not in line
