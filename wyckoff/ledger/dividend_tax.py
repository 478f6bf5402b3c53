"""The tax on cash dividends, charged when the shares are sold, by how long they were held
(差别化征税, 财税〔2015〕101号 from 2015-09-08; 财税〔2012〕85号 from 2013-01-01 to then):

    held up to 1 month (inclusive): 20%   up to 1 year: 10%   longer: 0 (5% before 2015-09-08)

The holding period runs from the buy date to the day before the sale; the shares sold are
the oldest first (FIFO), and bonus shares belong to the lot they were issued on. Bonus
shares themselves (送股, taxed on their 1-yuan par value) are not taxed here: the market data
does not tell 送股 from 转增 (docs/ledger.md).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from wyckoff.ledger.money import half_up

LONG_TERM_EXEMPT_FROM = date(2015, 9, 8)
DIFFERENTIATED_FROM = date(2013, 1, 1)


@dataclass
class Lot:
    bought: date
    shares: int
    dividends: Decimal  # cash dividends received on these shares, in cents, not yet taxed


def add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    year, month = day.year + month // 12, month % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def tax_rate(bought: date, sold: date) -> Decimal:
    """The rate on the dividends of shares bought on `bought` and sold on `sold`."""
    if sold < DIFFERENTIATED_FROM:
        return Decimal(0)  # the older rules withheld the tax at payment
    held_until = sold - timedelta(days=1)
    if held_until <= add_months(bought, 1):
        return Decimal("0.2")
    if held_until <= add_months(bought, 12):
        return Decimal("0.1")
    return Decimal(0) if sold >= LONG_TERM_EXEMPT_FROM else Decimal("0.05")


class Lots:
    """The shares of one stock as lots by buy date, oldest first."""

    def __init__(self) -> None:
        self.lots: list[Lot] = []

    def buy(self, day: date, shares: int) -> None:
        self.lots.append(Lot(day, shares, Decimal(0)))

    def corporate_action(self, bonus_shares: int, cash_cents: int) -> None:
        """Spread a dividend and bonus shares over the lots by their share counts."""
        held = sum(lot.shares for lot in self.lots)
        if not held:
            return
        given = 0
        for i, lot in enumerate(self.lots):
            share = (
                bonus_shares - given
                if i == len(self.lots) - 1
                else bonus_shares * lot.shares // held
            )
            lot.dividends += Decimal(cash_cents * lot.shares) / held
            given += share
            lot.shares += share

    def sell(self, day: date, shares: int) -> int:
        """Take `shares` off the oldest lots; the dividend tax they owe, in cents."""
        tax = Decimal(0)
        while shares and self.lots:
            lot = self.lots[0]
            taken = min(shares, lot.shares)
            dividends = lot.dividends * taken / lot.shares
            tax += dividends * tax_rate(lot.bought, day)
            lot.dividends -= dividends
            lot.shares -= taken
            shares -= taken
            if not lot.shares:
                self.lots.pop(0)
        return half_up(tax)
