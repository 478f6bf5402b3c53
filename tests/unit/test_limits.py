"""Daily limit prices as the exchange computes them: reference price x (1 ± limit), rounded
half up to the cent on prices as traded, compared in cents; new listings' free days."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine_fixtures import bars_panel
from wyckoff.engine.limits import cannot_buy, limit_cents, limit_prices, locked


def _after(previous: float, price: float, **stock) -> tuple:
    """A stock closing at `previous` twice, then one one-price bar at `price` (day 2)."""
    return bars_panel([[previous], [previous], [price]], **stock), 2, 0


@pytest.mark.parametrize(
    ("reference", "limit", "down", "up"),
    [
        (317, 0.05, 301, 333),  # 3.17 x 0.95 = 3.0115 -> 3.01 (-5.05%); x 1.05 = 3.3285 -> 3.33
        (205, 0.05, 195, 215),  # 1.9475 -> 1.95 (-4.88%); 2.1525 -> 2.15 (+4.88%)
        (1000, 0.10, 900, 1100),
        (1055, 0.20, 844, 1266),  # 8.44 exactly; 12.66 exactly
        (1005, 0.10, 905, 1106),  # 9.045 -> 9.05 (half up); 11.055 -> 11.06
    ],
)
def test_limit_prices_are_rounded_half_up_to_the_cent(reference, limit, down, up):
    assert limit_prices(reference, limit) == (down, up)


def test_a_low_priced_st_stock_locks_at_its_cent_rounded_limits():
    st = {"is_st": True, "start": "2025-06-02"}  # main-board ST before 2026-07-06: 5%
    assert locked(*_after(3.17, 3.01, **st), -1) and not locked(*_after(3.17, 3.02, **st), -1)
    assert locked(*_after(2.05, 1.95, **st), -1)  # -4.88%: a fraction test misses it
    assert locked(*_after(2.05, 2.15, **st), +1)
    assert cannot_buy(*_after(2.05, 2.15, **st))  # an open at 2.15 is at the up limit
    assert not cannot_buy(*_after(2.05, 2.14, **st))


def test_a_bar_a_cent_above_the_limit_down_is_not_locked():
    panel, t, j = _after(10.00, 9.01)  # -9.9%, but the limit is 9.00
    assert limit_cents(panel, t, j) == (900, 1100) and not locked(panel, t, j, -1)


def test_chinext_limits_before_and_after_the_2020_08_24_reform():
    chinext = {"codes": ("300001",), "board": "chinext"}
    assert locked(*_after(10.00, 9.00, start="2020-08-19", **chinext), -1)  # day 2: 08-21
    assert not locked(*_after(10.00, 9.00, start="2020-08-22", **chinext), -1)  # 08-24
    assert locked(*_after(10.00, 8.00, start="2020-08-22", **chinext), -1)


def test_a_new_chinext_listings_first_five_days_are_never_locked():
    closes = [[40.0], [30.0], [22.0], [16.0], [12.0], [9.6], [9.6]]  # -25%, ..., then -20%
    panel = bars_panel(
        closes, codes=("301999",), board="chinext", start="2025-03-03", list_date="20250303"
    )
    assert [locked(panel, t, 0, -1) for t in range(1, 6)] == [False] * 4 + [True]
    assert [limit_cents(panel, t, 0) for t in range(1, 5)] == [None] * 4
    old_main = bars_panel(closes, start="2021-03-01", list_date="20210301")
    assert limit_cents(old_main, 1, 0) == (3600, 4400)  # a 2021 main-board listing: day 2 limited


def test_limits_are_computed_on_prices_as_traded_from_the_ex_rights_reference():
    st = {"is_st": True, "start": "2025-06-02"}
    panel, t, j = _after(1.025, 0.975, **st)  # qfq prices after a later 2-for-1 split
    panel.raw_close = panel.close * 2  # traded at 2.05, then 1.95
    assert limit_cents(panel, t, j) == (195, 215) and locked(panel, t, j, -1)
    bonus, t, j = _after(5.0, 4.5)  # 10送10 on day 2: 10.00 before, reference price 5.00
    bonus.raw_close = np.array([[10.0], [10.0], [4.5]])
    assert limit_cents(bonus, t, j) == (450, 550) and locked(bonus, t, j, -1)
