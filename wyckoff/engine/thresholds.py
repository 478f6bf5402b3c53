"""Every threshold of the Wyckoff engine in one object, with the documented defaults
(ENGINE.md). A backtest may vary any of them with `dataclasses.replace`."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class EngineConfig:
    # Layer 1 — tradable universe
    min_market_cap: float = 3.5e9
    min_market_cap_liquid: float = 1.0e9
    liquid_turnover: float = 80e6
    min_close: float = 2.0
    min_turnover: float = 50e6
    spiky_skew: float = 3.0
    spiky_median_ratio: float = 0.45
    spiky_days_above: float = 0.35
    min_roe: float = -0.10
    max_debt_ratio: float = 0.85
    # Layer 2 — RS gate
    rs10_min: float = 2.0
    rs3_min: float = 1.0
    rs_relax_factor: float = 0.35
    rs_relax_bench10: float = 0.04
    rs_relax_bench3: float = 0.02
    # Layer 2 — structural bypass
    bypass_rps120: float = 65
    bypass_ret20: float = -0.04
    bypass_ma50_distance: float = 0.12
    bypass_drawdown60: float = 0.18
    # Layer 2 — momentum
    momentum_bench3_drop: float = -0.02
    momentum_bias200_max: float = 0.25
    rps_gate_a: tuple[float, float, float] = (65, 70, 0.5)  # rps50, rps120, slope %/day
    rps_gate_b: tuple[float, float] = (80, 50)  # rps120, rps50
    rps_gate_c: tuple[float, float, float] = (1.5, 50, 55)  # slope, rps50, rps120
    # Layer 2 — ambush
    ambush_bias200: float = 0.08
    ambush_ret20_max: float = -0.03
    ambush_rps50_max: float = 45
    ambush_rps120_min: float = 70
    ambush_rs10_min: float = -2
    ambush_rs3_min: float = -8
    # Layer 2 — accumulation / dry volume / divergence
    low_position: float = 1.35
    accumulation_range60: float = 0.30
    accumulation_volume_ratio: float = 0.65
    accumulation_ma_gap: float = 0.06
    accumulation_test_band: float = 0.05  # phase B: lows within 5% of the base low ...
    accumulation_tests: int = 3  # ... at least this many times
    accumulation_hold: float = 0.97  # phase C: no low under base low x 0.97 in the last 20 bars
    dry_volume_quantile: float = 0.05
    divergence_low_position: float = 1.5
    # Layer 2 — trend continuation / breakout
    trend_rps120: float = 75
    trend_drawdown60: float = 0.20
    trend_volume_ratio: float = 0.7
    breakout_rps50: float = 70
    breakout_ret20: float = 0.15
    breakout_volume_ratio: float = 1.3
    sos_rps120: float = 30
    # Layer 3 — sectors
    sector_min_count: int = 3
    sector_quantile: float = 0.70
    sector_top_quantile: float = 0.90
    top_sectors: int = 5
    sector_strength_keep: float = 0.60
    stock_strength_keep: float = 0.80
    min_survivors: int = 3
    # Layer 4 — triggers
    max_bias200: float = 0.25
    max_bias200_star: float = 0.40
    max_bias200_trend: float = 0.35
    spring_range_cap: float = 0.60
    spring_drift: float = 0.12
    spring_volume_prior4: float = 1.3
    spring_volume_prev: float = 1.15
    lps_ma20_band: float = 0.02
    lps_volume_ratio: float = 0.70  # median volume of the last 3 days / of the prior 60
    lps_sos_window: int = 20  # the sign of strength came in these bars before the last 3
    lps_sos_volume: float = 1.5  # its volume vs the range's median volume
    lps_hold_band: float = 0.02  # the last 3 lows stay above the broken range top x 0.98
    evr_volume: float = 1.8
    evr_pct: float = 0.02
    evr_turnover_rate: float = 0.015
    sos_pct: float = 0.06
    sos_volume: float = 3.0
    compression_quantile: float = 0.20
    compression_volume: float = 0.6
    pullback_min: float = 0.05
    pullback_max: float = 0.20
    pullback_volume: float = 0.6
    # The strategy's entries: the triggered stocks (False) or the quiet uptrends (True), and
    # the turnover quantile of the tradable universe a quiet uptrend stays under
    quiet_trend: bool = False
    quiet_turnover_quantile: float = 0.5
    # Signal lifetimes, in trading days after the screen date
    ttl_spring: int = 3
    ttl_lps: int = 5
    ttl_evr: int = 3
    ttl_sos: int = 5
    ttl_compression: int = 10
    ttl_pullback: int = 3
    # Stops and exits
    accumulation_stop: float = 0.93
    trail_start: float = 0.15
    breakdown_lookback: int = 60  # bars searched back for the range before a breakdown
    trail_high: float = 0.90
    trail_ma50: float = 0.98
    hard_breach: float = 0.05
    breach_closes: int = 2
    breach_volume: float = 0.8
    gap_skip_weekdays: int = 1  # skip stop checks on the first bar after this many skipped weekdays
    distribution_bias200: float = 0.30
    distribution_volume_ratio: float = 0.5
    # Holding health
    danger_loss: float = 0.93
    danger_ret10: float = -0.15
    long_suspension_weekdays: int = 20  # a resumption after this long is a danger sign
    resumption_watch_bars: int = 5  # ... for this many bars after it
    warn_range60: float = 0.50
    warn_stop_distance: float = 0.02
    warn_loss: float = 0.05
    warn_volume_ratio: float = 0.5
    # Market regime
    breadth_risk_off: float = 20
    breadth_risk_on: float = 60
    breadth_drop_risk_off: float = -10
    crash_index_drop: float = -0.013
    crash_small_cap_drop: float = -0.025
    crash_breadth: float = 15
    repair_index_rebound: float = 0.008
    repair_small_cap_rebound: float = 0.015
    regime_index_drop3: float = -0.03
    regime_day_drop: float = -0.03  # the market's one-day fall that rules out buying
    # Sizing
    hard_stop: float = 0.08
    atr_stop_multiple: float = 2.0
    risk_probe: float = 0.008
    risk_attack: float = 0.012
    budget_probe: float = 0.10
    budget_attack: float = 0.20
    lot: int = 100
    star_min_shares: int = 200  # STAR: a buy is >= 200 shares, then any whole share
    # Daily price limits (fractions of the previous close); dates are when a rule took effect
    limit_main: float = 0.10
    limit_growth: float = 0.20  # ChiNext and STAR, ST included
    limit_bse: float = 0.30
    limit_st_main_before: float = 0.05  # main-board ST/*ST until the 2026 rule change
    main_st_limit_change: str = "2026-07-06"  # SSE/SZSE 2026 trading rules: main-board ST 10%
    chinext_20pct_from: str = "2020-08-24"  # ChiNext registration reform (10% / ST 5% before)
    main_registration_from: str = "2023-04-10"  # main-board listings under full registration
    new_listing_free_days: int = 5  # no limit on a registered listing's first days
    # Backtest
    friction_per_side: float = 0.005
    commission: float = 0.0002
    commission_min: float = 5.0
    stamp_duty: float = 0.0005
    start_cash: float = 100_000.0
    risk_free: float = 0.02

    def signal_ttl(self, trigger: str) -> int:
        """How many trading days a pending signal of this trigger stays valid."""
        return getattr(self, f"ttl_{trigger}")


DEFAULT_CONFIG = EngineConfig()


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
