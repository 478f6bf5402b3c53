"""The ledger's pure rules: fees half-up to the cent by date, and the dividend tax by
holding period over FIFO lots."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from wyckoff.ledger.dividend_tax import Lots, tax_rate
from wyckoff.ledger.fees import BrokerFees, fill_fees


def test_each_fee_is_rounded_half_up_to_the_cent():
    cheap = BrokerFees(Decimal("0.0001"), 0)
    # 12,345.00: commission 1.2345 -> 1.23, transfer 0.12345 -> 0.12, duty 6.1725 -> 6.17
    fees = fill_fees("sell", 1_234_500, date(2026, 1, 5), cheap)
    assert (fees.commission, fees.transfer_fee, fees.stamp_duty) == (123, 12, 617)
    # 50.00 x 0.001% = 0.0005 -> 0.00; 150.00 x 0.05% = 0.075 -> 0.08 (a half rounds up)
    assert fill_fees("buy", 5_000, date(2026, 1, 5), cheap).transfer_fee == 0
    assert fill_fees("sell", 15_000, date(2026, 1, 5), cheap).stamp_duty == 8


@pytest.mark.parametrize(
    ("sold", "rate"),
    [
        (date(2026, 2, 6), "0.2"),  # held to 2026-02-05: exactly one month counts as a month
        (date(2026, 2, 7), "0.1"),
        (date(2027, 1, 6), "0.1"),  # held to 2027-01-05: exactly one year
        (date(2027, 1, 7), "0"),
    ],
)
def test_the_dividend_tax_rate_follows_the_holding_period(sold, rate):
    assert tax_rate(date(2026, 1, 5), sold) == Decimal(rate)


def test_before_2015_09_08_a_long_holding_still_paid_5_percent():
    assert tax_rate(date(2013, 1, 4), date(2015, 9, 7)) == Decimal("0.05")
    assert tax_rate(date(2013, 1, 4), date(2015, 9, 8)) == 0


def test_the_oldest_shares_are_sold_first_with_the_dividends_they_received():
    lots = Lots()
    lots.buy(date(2025, 1, 6), 1000)  # held over a year by the sale: exempt
    lots.buy(date(2026, 1, 5), 1000)  # held days: 20%
    lots.corporate_action(bonus_shares=0, cash_cents=100_000)  # 0.50 a share
    assert lots.sell(date(2026, 1, 20), 1000) == 0
    assert lots.sell(date(2026, 1, 20), 500) == 5_000  # 250.00 of dividends x 20%
