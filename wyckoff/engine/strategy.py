"""Strategy decisions in code (ENGINE.md): EXIT > TRIM > HOLD > PROBE / ATTACK, regime gates
and position sizing. The model only writes the rationale; every number comes from here.

Money is counted in integer cents and share counts with exact integer division: in floats
`10.00 - 9.20` is 0.80000000000000071, and flooring 800 / that loses a whole lot."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig

PRIORITY = {"EXIT": 0, "TRIM": 1, "HOLD": 2, "ATTACK": 3, "PROBE": 4, "WAIT": 5}


def cents(yuan: float) -> int:
    """A CNY amount as integer cents (through its decimal text, so 9.2 is 920, not 919),
    half a cent rounded up as brokers and the ledger round (ledger/money.py)."""
    return int((Decimal(str(yuan)) * 100).to_integral_value(ROUND_HALF_UP))


def lots(shares: float, cfg: EngineConfig = DEFAULT_CONFIG) -> int:
    return int(shares // cfg.lot) * cfg.lot


def buyable(shares: int, board: str, cfg: EngineConfig = DEFAULT_CONFIG) -> int:
    """The largest order size <= shares: lots of 100; on STAR at least 200, then any share."""
    if board == "star":
        return shares if shares >= cfg.star_min_shares else 0
    return lots(shares, cfg)


def fee_cents(amount_cents: int, rate: float) -> int:
    """A fee at `rate` on an amount in cents, rounded to the cent."""
    return int((amount_cents * Decimal(str(rate))).to_integral_value(ROUND_HALF_UP))


def commission_cents(amount_cents: int, cfg: EngineConfig = DEFAULT_CONFIG) -> int:
    """Broker commission on a trade, never below the minimum."""
    return max(fee_cents(amount_cents, cfg.commission), cents(cfg.commission_min))


def affordable(cash: int, price: int, cfg: EngineConfig = DEFAULT_CONFIG) -> int:
    """Most shares whose cost plus commission fits in `cash` (both in cents)."""
    rate = Decimal(str(cfg.commission))
    by_rate = int(Decimal(cash) // (price * (1 + rate)))  # cost x (1 + rate) <= cash
    by_minimum = (cash - cents(cfg.commission_min)) // price  # cost + minimum fee <= cash
    shares = max(min(by_rate, by_minimum), 0)
    while shares and shares * price + commission_cents(shares * price, cfg) > cash:
        shares -= 1  # the fee's rounding to a cent can cost one share
    return shares


def entry_stop(entry: float, atr14: float | None, cfg: EngineConfig = DEFAULT_CONFIG) -> float:
    """The tighter (higher) of the 8% hard stop and entry - 2 x ATR14."""
    hard = entry * (1 - cfg.hard_stop)
    if atr14 is None or atr14 <= 0:
        return round(hard, 2)
    return round(max(hard, entry - cfg.atr_stop_multiple * atr14), 2)


def size_position(
    kind: str,
    equity: float,
    cash: float,
    entry: float,
    stop: float,
    cfg: EngineConfig = DEFAULT_CONFIG,
    *,
    board: str = "main",
) -> dict[str, Any]:
    """Shares for a PROBE or ATTACK: risk 0.8% / 1.2% of equity, budget caps 10% / 20%,
    cost plus commission within the free cash, in the board's order sizes."""
    risk_pct, cap_pct = (
        (cfg.risk_probe, cfg.budget_probe)
        if kind == "PROBE"
        else (cfg.risk_attack, cfg.budget_attack)
    )
    price, stop_price, equity_cents = cents(entry), cents(stop), Decimal(cents(equity))
    limits = {
        "风险": int(equity_cents * Decimal(str(risk_pct)) // max(price - stop_price, 1)),
        "仓位上限": int(equity_cents * Decimal(str(cap_pct)) // price),
        "可用现金": affordable(cents(cash), price, cfg),
    }
    limited_by = min(limits, key=limits.__getitem__)
    shares = buyable(limits[limited_by], board, cfg)
    amount = shares * price
    return {
        "shares": shares,
        "amount": amount / 100,
        "commission": commission_cents(amount, cfg) / 100 if shares else 0.0,
        "risk_amount": shares * (price - stop_price) / 100,
        "limited_by": limited_by,
    }


def holding_action(
    diagnosis: dict[str, Any], shares: int, cfg: EngineConfig = DEFAULT_CONFIG
) -> dict[str, Any]:
    """EXIT on danger or a stop exit, TRIM half on caution, else HOLD. The diagnosis was made
    with the holder's stop (`diagnose(own_stop=...)`): its stop is the tightened one."""
    stop, exit_info = diagnosis["stop"]["stop"], diagnosis["exit"]
    checked = {"stop": stop, "stop_check": exit_info["detail"]}
    if diagnosis["health"] == "danger" or exit_info["status"] == "exit":
        return {"action": "EXIT", "shares": shares, **checked}
    if diagnosis["health"] == "caution":
        trim = lots(shares / 2, cfg)
        return {"action": "TRIM" if trim else "HOLD", "shares": trim, **checked}
    return {"action": "HOLD", "shares": 0, **checked}
