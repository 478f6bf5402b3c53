"""The terminal's small return chart."""

from __future__ import annotations

from wyckoff.ledger.chart import line_chart


def test_a_flat_series_sits_on_the_row_labelled_with_its_value():
    """Found by hand: `paper nav` on the first day drew the +0.00% point on a row labelled
    -1.00%."""
    rows = line_chart({"纸面账户": [0.0], "沪深300": [0.0]}).splitlines()
    marked = [row for row in rows[:-1] if row.rstrip().endswith(("●", "◉"))]
    assert [row.split("┤")[0].strip() for row in marked] == ["+0.00%"]
    rows = line_chart({"a": [2.5, 2.5, 2.5]}).splitlines()
    marked = [row for row in rows[:-1] if "●" in row]
    assert [row.split("┤")[0].strip() for row in marked] == ["+2.50%"]


def test_the_top_and_bottom_rows_are_the_highest_and_lowest_values():
    rows = line_chart({"a": [-3.0, 0.0, 5.0]}).splitlines()
    assert rows[0].startswith("  +5.00% ┤") and rows[7].startswith("  -3.00% ┤")
    assert rows[0].endswith("●") and rows[7].split("┤")[1].startswith("●")
