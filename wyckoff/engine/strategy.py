"""Strategy decisions in code (ENGINE.md): EXIT > TRIM > HOLD > PROBE / ATTACK, regime gates
and position sizing. The model only writes the rationale; every number comes from here."""

from __future__ import annotations

from typing import Any

from wyckoff.engine.config import DEFAULT_CONFIG, EngineConfig

PRIORITY = {"EXIT": 0, "TRIM": 1, "HOLD": 2, "ATTACK": 3, "PROBE": 4, "WAIT": 5}


def lots(shares: float, cfg: EngineConfig = DEFAULT_CONFIG) -> int:
    return int(shares // cfg.lot) * cfg.lot


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
) -> dict[str, Any]:
    """Shares for a PROBE or ATTACK: risk 0.8% / 1.2% of equity, budget caps 10% / 20%,
    never more than the free cash, in lots of 100."""
    risk_pct, cap_pct = (
        (cfg.risk_probe, cfg.budget_probe)
        if kind == "PROBE"
        else (cfg.risk_attack, cfg.budget_attack)
    )
    risk_per_share = max(entry - stop, 0.01)
    by_risk = lots(equity * risk_pct / risk_per_share, cfg)
    by_budget = lots(equity * cap_pct / entry, cfg)
    by_cash = lots(cash / entry, cfg)
    shares = min(by_risk, by_budget, by_cash)
    limit = min((by_risk, "风险"), (by_budget, "仓位上限"), (by_cash, "可用现金"))[1]
    return {
        "shares": shares,
        "amount": round(shares * entry, 2),
        "risk_amount": round(shares * (entry - stop), 2),
        "limited_by": limit,
    }


def holding_action(
    diagnosis: dict[str, Any],
    shares: int,
    old_stop: float | None,
    cfg: EngineConfig = DEFAULT_CONFIG,
) -> dict[str, Any]:
    """EXIT on danger or a stop exit, TRIM half on caution, else HOLD; stops only tighten."""
    stop = max(filter(None, [old_stop, diagnosis["stop"]["stop"]]), default=None)
    if diagnosis["health"] == "danger" or diagnosis["exit"]["status"] == "exit":
        return {"action": "EXIT", "shares": shares, "stop": stop}
    if diagnosis["health"] == "caution":
        trim = lots(shares / 2, cfg)
        return {"action": "TRIM" if trim else "HOLD", "shares": trim, "stop": stop}
    return {"action": "HOLD", "shares": 0, "stop": stop}
