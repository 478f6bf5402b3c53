"""A-share trading fees of one fill, each in integer cents rounded half-up.

Commission is the broker's (rate and minimum per fill, both sides, from wyckoff.json);
stamp duty and the transfer fee are the law's, by the fill's date (docs/ledger.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Literal

from wyckoff.ledger.money import half_up

Side = Literal["buy", "sell"]

# (from this day, rate on sells, rate on buys); the newest rule whose day is <= the fill's.
# Fills before 2005-01-24 use the first rule.
STAMP_DUTY: tuple[tuple[date, Decimal, Decimal], ...] = (
    (date(2005, 1, 24), Decimal("0.001"), Decimal("0.001")),
    (date(2007, 5, 30), Decimal("0.003"), Decimal("0.003")),
    (date(2008, 4, 24), Decimal("0.001"), Decimal("0.001")),
    (date(2008, 9, 19), Decimal("0.001"), Decimal(0)),
    (date(2023, 8, 28), Decimal("0.0005"), Decimal(0)),
)
# (from this day, rate on both sides), both exchanges; earlier fills use the first rule.
TRANSFER_FEE: tuple[tuple[date, Decimal], ...] = (
    (date(2015, 8, 1), Decimal("0.00002")),
    (date(2022, 4, 29), Decimal("0.00001")),
)


@dataclass(frozen=True)
class BrokerFees:
    """A broker's commission: a rate of the trade value with a minimum per fill."""

    commission_rate: Decimal = Decimal("0.00025")
    min_commission_cents: int = 500


@dataclass(frozen=True)
class Fees:
    commission: int
    stamp_duty: int
    transfer_fee: int

    @property
    def total(self) -> int:
        return self.commission + self.stamp_duty + self.transfer_fee


def fill_fees(side: Side, value_cents: int, day: date, broker: BrokerFees) -> Fees:
    """The fees of a fill of `value_cents` (成交金额) on `day`."""
    commission = max(half_up(value_cents * broker.commission_rate), broker.min_commission_cents)
    _, sell_duty, buy_duty = _in_force(STAMP_DUTY, day)
    duty = sell_duty if side == "sell" else buy_duty
    (_, transfer) = _in_force(TRANSFER_FEE, day)
    return Fees(commission, half_up(value_cents * duty), half_up(value_cents * transfer))


def _in_force(rules: tuple, day: date) -> tuple:
    return next((rule for rule in reversed(rules) if rule[0] <= day), rules[0])
