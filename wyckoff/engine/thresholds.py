"""Every threshold of the Wyckoff engine in one object, with the documented defaults
(ENGINE.md). A backtest may vary any of them with `dataclasses.replace`; a sweep may try the
values of each threshold's range (inclusive; per item for a tuple), declared with it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

TRADABLE_PREFIXES = (
    "600",
    "601",
    "603",
    "605",
    "000",
    "001",
    "002",
    "003",
    "300",
    "301",
    "302",
    "688",
    "689",
)
BENCHMARK = "000001.SH"
MIN_VALID_SHARE = 0.8  # a window needs this share of trading days to count
SMALL_CAP_BENCHMARK = "399006.SZ"
MAIN_INDICES = {
    "000001.SH": "上证指数",
    "399001.SZ": "深证成指",
    "399006.SZ": "创业板指",
    "000300.SH": "沪深300",
    "000905.SH": "中证500",
    "000016.SH": "上证50",
}


# Ranges of the rule-change dates a sweep may try (ISO dates compare as text).
FIRST_DAY, LAST_DAY = "1990-12-19", "2099-12-31"


def tunable(default: Any, low: Any, high: Any) -> Any:
    """A threshold's default and the range of values a sweep may try in its place."""
    return field(default=default, metadata={"range": (low, high)})


@dataclass(frozen=True)
class EngineConfig:
    # Layer 1 — tradable universe
    min_market_cap: float = tunable(3.5e9, 0, 1e13)
    min_market_cap_liquid: float = tunable(1.0e9, 0, 1e13)
    liquid_turnover: float = tunable(80e6, 0, 1e13)
    min_close: float = tunable(2.0, 0, 10_000)
    min_turnover: float = tunable(50e6, 0, 1e13)
    spiky_skew: float = tunable(3.0, 0, 100)
    spiky_median_ratio: float = tunable(0.45, 0, 1)
    spiky_days_above: float = tunable(0.35, 0, 1)
    min_roe: float = tunable(-0.10, -1, 1)
    max_debt_ratio: float = tunable(0.85, 0, 2)
    # Layer 2 — RS gate
    rs10_min: float = tunable(2.0, -100, 100)
    rs3_min: float = tunable(1.0, -100, 100)
    rs_relax_factor: float = tunable(0.35, 0, 1)
    rs_relax_bench10: float = tunable(0.04, 0, 1)
    rs_relax_bench3: float = tunable(0.02, 0, 1)
    # Layer 2 — structural bypass
    bypass_rps120: float = tunable(65, 0, 100)
    bypass_ret20: float = tunable(-0.04, -1, 10)
    bypass_ma50_distance: float = tunable(0.12, 0, 1)
    bypass_drawdown60: float = tunable(0.18, 0, 1)
    # Layer 2 — momentum
    momentum_bench3_drop: float = tunable(-0.02, -1, 1)
    momentum_bias200_max: float = tunable(0.25, -1, 10)
    # rps50, rps120, slope %/day
    rps_gate_a: tuple[float, float, float] = tunable((65, 70, 0.5), (0, 0, -100), (100, 100, 100))
    rps_gate_b: tuple[float, float] = tunable((80, 50), (0, 0), (100, 100))  # rps120, rps50
    # slope, rps50, rps120
    rps_gate_c: tuple[float, float, float] = tunable((1.5, 50, 55), (-100, 0, 0), (100, 100, 100))
    # Layer 2 — ambush
    ambush_bias200: float = tunable(0.08, -1, 10)
    ambush_ret20_max: float = tunable(-0.03, -1, 10)
    ambush_rps50_max: float = tunable(45, 0, 100)
    ambush_rps120_min: float = tunable(70, 0, 100)
    ambush_rs10_min: float = tunable(-2, -100, 100)
    ambush_rs3_min: float = tunable(-8, -100, 100)
    # Layer 2 — accumulation / dry volume / divergence
    low_position: float = tunable(1.35, 0, 100)
    accumulation_range60: float = tunable(0.30, 0, 10)
    accumulation_volume_ratio: float = tunable(0.65, 0, 100)
    accumulation_ma_gap: float = tunable(0.06, 0, 1)
    # phase B: lows within 5% of the base low ...
    accumulation_test_band: float = tunable(0.05, 0, 1)
    accumulation_tests: int = tunable(3, 0, 60)  # ... at least this many times
    # phase C: no low under base low x 0.97 in the last 20 bars
    accumulation_hold: float = tunable(0.97, 0, 2)
    dry_volume_quantile: float = tunable(0.05, 0, 1)
    divergence_low_position: float = tunable(1.5, 0, 100)
    # Layer 2 — trend continuation / breakout
    trend_rps120: float = tunable(75, 0, 100)
    trend_drawdown60: float = tunable(0.20, 0, 1)
    trend_volume_ratio: float = tunable(0.7, 0, 100)
    breakout_rps50: float = tunable(70, 0, 100)
    breakout_ret20: float = tunable(0.15, -1, 10)
    breakout_volume_ratio: float = tunable(1.3, 0, 100)
    sos_rps120: float = tunable(30, 0, 100)
    # Layer 3 — sectors
    sector_min_count: int = tunable(3, 1, 500)
    sector_quantile: float = tunable(0.70, 0, 1)
    sector_top_quantile: float = tunable(0.90, 0, 1)
    top_sectors: int = tunable(5, 1, 100)
    sector_strength_keep: float = tunable(0.60, 0, 1)
    stock_strength_keep: float = tunable(0.80, 0, 1)
    min_survivors: int = tunable(3, 0, 500)
    # Layer 4 — triggers
    max_bias200: float = tunable(0.25, -1, 10)
    max_bias200_star: float = tunable(0.40, -1, 10)
    max_bias200_trend: float = tunable(0.35, -1, 10)
    spring_range_cap: float = tunable(0.60, 0, 10)
    spring_drift: float = tunable(0.12, 0, 1)
    spring_volume_prior4: float = tunable(1.3, 0, 100)
    spring_volume_prev: float = tunable(1.15, 0, 100)
    lps_ma20_band: float = tunable(0.02, 0, 1)
    # median volume of the last 3 days / of the prior 60
    lps_volume_ratio: float = tunable(0.70, 0, 100)
    # the sign of strength came in these bars before the last 3
    lps_sos_window: int = tunable(20, 1, 250)
    lps_sos_volume: float = tunable(1.5, 0, 100)  # its volume vs the range's median volume
    # the last 3 lows stay above the broken range top x 0.98
    lps_hold_band: float = tunable(0.02, 0, 1)
    evr_volume: float = tunable(1.8, 0, 100)
    evr_pct: float = tunable(0.02, 0, 1)
    evr_turnover_rate: float = tunable(0.015, 0, 1)
    sos_pct: float = tunable(0.06, 0, 1)
    sos_volume: float = tunable(3.0, 0, 100)
    compression_quantile: float = tunable(0.20, 0, 1)
    compression_volume: float = tunable(0.6, 0, 100)
    pullback_min: float = tunable(0.05, 0, 1)
    pullback_max: float = tunable(0.20, 0, 1)
    pullback_volume: float = tunable(0.6, 0, 100)
    # one trigger fires on at most this share of the day's market ...
    trigger_max_share: float = tunable(0.05, 0.001, 1)
    trigger_min_cap: int = tunable(3, 0, 100)  # ... but may always fire on this many stocks
    # The strategy's entries: the triggered stocks (False) or the quiet uptrends (True), and
    # the turnover quantile of the tradable universe a quiet uptrend stays under
    quiet_trend: bool = tunable(False, False, True)
    quiet_turnover_quantile: float = tunable(0.5, 0.05, 1)
    # Signal lifetimes, in trading days after the screen date
    ttl_spring: int = tunable(3, 1, 250)
    ttl_lps: int = tunable(5, 1, 250)
    ttl_evr: int = tunable(3, 1, 250)
    ttl_sos: int = tunable(5, 1, 250)
    ttl_compression: int = tunable(10, 1, 250)
    ttl_pullback: int = tunable(3, 1, 250)
    # Stops and exits
    accumulation_stop: float = tunable(0.93, 0, 1)
    trail_start: float = tunable(0.15, 0, 10)
    # bars searched back for the range before a breakdown
    breakdown_lookback: int = tunable(60, 1, 250)
    trail_high: float = tunable(0.90, 0, 1)
    trail_ma50: float = tunable(0.98, 0, 2)
    hard_breach: float = tunable(0.05, 0, 1)
    breach_closes: int = tunable(2, 1, 60)
    breach_volume: float = tunable(0.8, 0, 100)
    # skip stop checks on the first bar after this many skipped weekdays
    gap_skip_weekdays: int = tunable(1, 0, 60)
    distribution_bias200: float = tunable(0.30, -1, 10)
    distribution_volume_ratio: float = tunable(0.5, 0, 100)
    # Holding health
    danger_loss: float = tunable(0.93, 0, 1)
    danger_ret10: float = tunable(-0.15, -1, 1)
    # a resumption after this long is a danger sign
    long_suspension_weekdays: int = tunable(20, 1, 2500)
    resumption_watch_bars: int = tunable(5, 0, 250)  # ... for this many bars after it
    warn_range60: float = tunable(0.50, 0, 10)
    warn_stop_distance: float = tunable(0.02, 0, 1)
    warn_loss: float = tunable(0.05, 0, 1)
    warn_volume_ratio: float = tunable(0.5, 0, 100)
    # Market regime
    breadth_risk_off: float = tunable(20, 0, 100)
    breadth_risk_on: float = tunable(60, 0, 100)
    breadth_drop_risk_off: float = tunable(-10, -100, 100)
    crash_index_drop: float = tunable(-0.013, -1, 1)
    crash_small_cap_drop: float = tunable(-0.025, -1, 1)
    crash_breadth: float = tunable(15, 0, 100)
    repair_index_rebound: float = tunable(0.008, 0, 1)
    repair_small_cap_rebound: float = tunable(0.015, 0, 1)
    regime_index_drop3: float = tunable(-0.03, -1, 1)
    # the market's one-day fall that rules out buying
    regime_day_drop: float = tunable(-0.03, -1, 1)
    # Sizing
    hard_stop: float = tunable(0.08, 0, 1)
    atr_stop_multiple: float = tunable(2.0, 0, 20)
    risk_probe: float = tunable(0.008, 0, 1)
    risk_attack: float = tunable(0.012, 0, 1)
    budget_probe: float = tunable(0.10, 0, 1)
    budget_attack: float = tunable(0.20, 0, 1)
    lot: int = tunable(100, 1, 10_000)
    # STAR: a buy is >= 200 shares, then any whole share
    star_min_shares: int = tunable(200, 1, 10_000)
    # Daily price limits (fractions of the previous close); dates are when a rule took effect
    limit_main: float = tunable(0.10, 0, 1)
    limit_growth: float = tunable(0.20, 0, 1)  # ChiNext and STAR, ST included
    limit_bse: float = tunable(0.30, 0, 1)
    # main-board ST/*ST until the 2026 rule change
    limit_st_main_before: float = tunable(0.05, 0, 1)
    # SSE/SZSE 2026 trading rules: main-board ST 10%
    main_st_limit_change: str = tunable("2026-07-06", FIRST_DAY, LAST_DAY)
    # ChiNext registration reform (10% / ST 5% before)
    chinext_20pct_from: str = tunable("2020-08-24", FIRST_DAY, LAST_DAY)
    # main-board listings under full registration
    main_registration_from: str = tunable("2023-04-10", FIRST_DAY, LAST_DAY)
    new_listing_free_days: int = tunable(5, 0, 250)  # no limit on a registered listing's first days
    # Backtest
    friction_per_side: float = tunable(0.005, 0, 0.1)
    commission: float = tunable(0.0002, 0, 0.1)
    commission_min: float = tunable(5.0, 0, 1000)
    start_cash: float = tunable(100_000.0, 1, 1e12)
    risk_free: float = tunable(0.02, -0.1, 1)

    def signal_ttl(self, trigger: str) -> int:
        """How many trading days a pending signal of this trigger stays valid."""
        return getattr(self, f"ttl_{trigger}")


DEFAULT_CONFIG = EngineConfig()
THRESHOLD_RANGES: dict[str, tuple[Any, Any]] = {
    f.name: f.metadata["range"] for f in fields(EngineConfig)
}


def board_of(code: str) -> str:
    """main | chinext | star | bse, from the 6-digit code."""
    if code.startswith(("300", "301", "302")):
        return "chinext"
    if code.startswith(("688", "689")):
        return "star"
    if code.startswith(("8", "4", "920")):
        return "bse"
    return "main"


def limit_pct(
    board: str, is_st: bool, on: object = None, cfg: EngineConfig = DEFAULT_CONFIG
) -> float:
    """A-share daily price limit of a board and risk-warning (ST) status on a date
    (YYYY-MM-DD or datetime64; None = the rules in force today)."""
    day = "9999-12-31" if on is None else str(on)[:10]
    if board == "bse":
        return cfg.limit_bse
    if board == "star" or (board == "chinext" and day >= cfg.chinext_20pct_from):
        return cfg.limit_growth
    if is_st and day < cfg.main_st_limit_change:
        return cfg.limit_st_main_before
    return cfg.limit_main


def ts_code(code: str) -> str:
    """600519 -> 600519.SH (tushare style)."""
    if "." in code:
        return code
    if code.startswith(("6", "9")) and not code.startswith("920"):
        return f"{code}.SH"
    if code.startswith(("8", "4", "920")):
        return f"{code}.BJ"
    return f"{code}.SZ"
