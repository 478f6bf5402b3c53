"""Money as integer cents (分) and prices as integer thousandths of a yuan (厘), parsed from
text without floats, rounded half-up as brokers round; and the sanity caps every share count,
price and amount passes (the CLI, the agent's tool, the web forms and broker imports), so an
absurd number is refused in a sentence before any arithmetic can overflow."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from wyckoff.errors import UsageError

MAX_SHARES = 10**12  # beyond any listed company's share count
MAX_PRICE = 10**7  # yuan a share: beyond any stock's price
MAX_CENTS = 10**15  # 10 trillion yuan: beyond any real account, far inside SQLite's integers
MAX_DIGITS = 18  # significant digits and decimals of a typed number; keeps Decimal exact


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
    digits, exponent = len(number.as_tuple().digits), int(number.as_tuple().exponent)
    if number.adjusted() > MAX_DIGITS:
        raise UsageError(f"{label} {value} 大得不合实际，请检查。")
    if digits > MAX_DIGITS or exponent < -MAX_DIGITS:
        raise UsageError(f"{label} {value} 位数太多（最多 {MAX_DIGITS} 位数字），请检查。")
    return number


def check_shares(shares: int, label: str = "股数") -> int:
    """A share count no company has is refused (its sign is the caller's rule)."""
    if abs(shares) > MAX_SHARES:
        raise UsageError(f"{label} {shares} 大得不合实际（上限 {MAX_SHARES:.0e} 股），请检查。")
    return shares


def check_cents(cents: int, label: str) -> int:
    """An amount beyond any real account is refused."""
    if abs(cents) > MAX_CENTS:
        raise UsageError(
            f"{label}大得不合实际（上限 {MAX_CENTS // 100:.0e} 元），请检查股数和价格。"
        )
    return cents


def price_mills(value: str | float | int, label: str = "成交价") -> int:
    """A positive price with at most 3 decimals, in thousandths of a yuan."""
    price = decimal_of(value, label)
    if price > MAX_PRICE:
        raise UsageError(f"{label} {value} 大得不合实际，请检查。")
    mills = price * 1000
    if price <= 0 or mills != mills.to_integral_value():
        raise UsageError(f"{label}必须大于 0 且最多 3 位小数，收到 {value}。")
    return int(mills)


def amount_cents(value: str | float | int, label: str) -> int:
    """An amount of money with at most 2 decimals, in cents (negative allowed)."""
    amount = decimal_of(value, label) * 100
    if amount != amount.to_integral_value():
        raise UsageError(f"{label}最多 2 位小数，收到 {value}。")
    if abs(amount) > MAX_CENTS:
        raise UsageError(f"{label} {value} 大得不合实际，请检查。")
    return int(amount)


def trade_value_cents(shares: int, mills: int) -> int:
    """成交金额: shares x price, to the cent half-up; absurd share counts and amounts refused."""
    check_shares(shares, "成交股数")
    return check_cents(half_up(Decimal(shares * mills) / 10), "成交金额")


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
