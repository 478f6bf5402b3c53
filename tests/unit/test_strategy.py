"""Strategy sizing and holding actions: exact money, fees inside the cash, board order sizes,
and exit decisions taken on the stop that is actually reported."""

from __future__ import annotations

from decimal import Decimal

from tests.engine_fixtures import DAYS, make_panel, series
from wyckoff.engine.health import diagnose
from wyckoff.engine.strategy import cents, holding_action, size_position
from wyckoff.ledger.money import half_up


def test_a_risk_budget_that_divides_exactly_buys_every_lot():
    # 0.8% of 100,000 = 800 at risk; 10.00 - 9.20 = 0.80 a share: 1,000 shares, not 900
    sizing = size_position("PROBE", 100_000, 100_000, 10.00, 9.20)
    assert sizing["shares"] == 1_000 and sizing["amount"] == 10_000
    assert sizing["risk_amount"] == 800


def test_the_cash_cap_leaves_room_for_the_commission():
    sizing = size_position("ATTACK", 100_000, 5_000, 10.00, 9.20)
    # 500 shares cost exactly 5,000 and the 5 yuan minimum commission would not fit
    assert sizing["shares"] == 400 and sizing["limited_by"] == "可用现金"
    assert sizing["amount"] + sizing["commission"] <= 5_000


def test_star_orders_start_at_200_shares_and_then_go_by_one_share():
    star = size_position("PROBE", 100_000, 100_000, 40.00, 36.80, board="star")
    assert star["shares"] == 250  # 10% of equity / 40; the main board would buy 200
    too_small = size_position("PROBE", 100_000, 100_000, 60.00, 55.20, board="star")
    assert too_small["shares"] == 0  # 166 shares is below the STAR minimum of 200
    assert size_position("PROBE", 100_000, 100_000, 60.00, 55.20)["shares"] == 100


def test_the_exit_decision_uses_the_tightened_stop():
    close = series((DAYS, 0.001))
    close[-1] = close[-2] * 0.93  # 12.79, below the engine's trailing stop (~13.16) by < 5%
    panel = make_panel(close)
    diagnosis = diagnose(panel, "600000", cost=10)
    engine_stop = diagnosis["stop"]["stop"]
    assert close[-1] < engine_stop < close[-1] / 0.95 and diagnosis["exit"]["status"] == "watch"
    # the holder's own stop of 13.60 is tighter: the close is more than 5% below it
    held = diagnose(panel, "600000", cost=10, own_stop=13.60)
    action = holding_action(held, 1_000)
    assert action["action"] == "EXIT" and action["shares"] == 1_000 and action["stop"] == 13.6
    assert "13.60" in action["stop_check"]
    # with no tighter stop of its own, the engine's stop is only being watched
    looser = diagnose(panel, "600000", cost=10, own_stop=12.0)
    assert holding_action(looser, 1_000)["action"] != "EXIT"
    assert looser["stop"]["stop"] == engine_stop


def test_half_a_cent_rounds_up_as_the_ledger_rounds():
    # Python's round() and Decimal's default go to the even cent: 10.005 -> 10.00, 0.125 -> 0.12
    for yuan, expected in [(10.005, 1001), (0.125, 13), (0.135, 14), (2.5e-3, 0), (0.005, 1)]:
        assert cents(yuan) == expected
        assert cents(yuan) == half_up(Decimal(str(yuan)) * 100)
    assert cents(9.2) == 920 and cents(-0.125) == -13
