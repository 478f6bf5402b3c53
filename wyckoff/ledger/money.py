"""Money as integer cents (分) and prices as integer thousandths of a yuan (厘), parsed from
text without floats, rounded half-up as brokers round."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from wyckoff.errors import UsageError


def half_up(value: Decimal) -> int:
    """`value` rounded to the nearest integer, halves away from zero (0.5 -> 1)."""
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def decimal_of(value: str | float | int, label: str) -> Decimal:
    """The exact decimal a user typed ("10.00", 10.5); floats go through their shortest text."""
    try:
        number = Decimal(str(value).strip().replace(",", ""))
    except InvalidOperation:
        raise UsageError(f"{label} {value} 不是数字。") from None
    if not number.is_finite():
        raise UsageError(f"{label}必须是有限数字，收到 {value}。")
    return number


def price_mills(value: str | float | int, label: str = "成交价") -> int:
    """A positive price with at most 3 decimals, in thousandths of a yuan."""
    price = decimal_of(value, label)
    mills = price * 1000
    if price <= 0 or mills != mills.to_integral_value():
        raise UsageError(f"{label}必须大于 0 且最多 3 位小数，收到 {value}。")
    if price > 10**7:
        raise UsageError(f"{label} {value} 大得不合实际，请检查。")
    return int(mills)


def amount_cents(value: str | float | int, label: str) -> int:
    """An amount of money with at most 2 decimals, in cents (negative allowed)."""
    amount = decimal_of(value, label) * 100
    if amount != amount.to_integral_value():
        raise UsageError(f"{label}最多 2 位小数，收到 {value}。")
    if abs(amount) > 10**15:
        raise UsageError(f"{label} {value} 大得不合实际，请检查。")
    return int(amount)


def trade_value_cents(shares: int, mills: int) -> int:
    """成交金额: shares x price, to the cent half-up."""
    return half_up(Decimal(shares * mills) / 10)


def yuan(cents: int) -> str:
    """10000510 -> '100,005.10'."""
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{part:02d}"


def price_text(mills: int) -> str:
    """10500 -> '10.50', 10505 -> '10.505'."""
    whole, part = divmod(mills, 1000)
    text = f"{whole}.{part:03d}"
    return text[:-1] if text.endswith("0") else text
