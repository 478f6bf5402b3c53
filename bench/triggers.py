"""How often each Layer-4 trigger fires: the share of trading stocks it fires on per day,
mean and max over the last N days and the worst day. A trigger that fires on more than 5%
of the market on any day is noise. Run: python bench/triggers.py [days] [market.duckdb]
(default: the demo market, built in a temporary folder; a store file: its own bars)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from wyckoff.engine.funnel import layer2, layer4  # noqa: E402
from wyckoff.engine.indicators import features_at  # noqa: E402
from wyckoff.engine.market_store import MarketStore  # noqa: E402
from wyckoff.engine.sources.demo import ensure_demo  # noqa: E402
from wyckoff.engine.thresholds import DEFAULT_CONFIG  # noqa: E402
from wyckoff.engine.triggers import TRIGGER_LABELS, TRIGGERS  # noqa: E402


def daily_hit_rates(panel, days: int) -> dict[str, list[tuple[float, float]]]:
    """trigger -> per day (raw detector share, share under the Layer-4 rules), in %."""
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in TRIGGERS}
    last = len(panel.dates) - 1
    for t in range(last - days + 1, last + 1):
        f = features_at(panel, t, DEFAULT_CONFIG)
        trading = ~np.isnan(f.close)
        sos, _ = TRIGGERS["sos"](panel, t, f, DEFAULT_CONFIG)
        ruled, _ = layer4(panel, t, f, DEFAULT_CONFIG, layer2(panel, f, DEFAULT_CONFIG, t, sos))
        for name, detect in TRIGGERS.items():
            raw = detect(panel, t, f, DEFAULT_CONFIG)[0] & trading
            share = 100 / trading.sum()
            rates[name].append((raw.sum() * share, (ruled[name] & trading).sum() * share))
    return rates


def load(store_file: str | None):
    if store_file:
        return MarketStore(Path(store_file), "bench").load_panel(600)
    with tempfile.TemporaryDirectory() as home:
        return ensure_demo(Path(home)).load_panel(320)


def main() -> None:
    print(describe_machine())
    days = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    panel = load(sys.argv[2] if len(sys.argv) > 2 else None)
    print(f"{len(panel.codes)} stocks, last {days} trading days to {panel.as_of}")
    print(
        f"{'trigger':<10}{'raw mean %':>12}{'raw max %':>11}{'ruled mean %':>14}"
        f"{'ruled max %':>13}  worst day"
    )
    first = len(panel.dates) - days
    for name, per_day in daily_hit_rates(panel, days).items():
        raw, ruled = np.array(per_day).T
        worst = panel.dates[first + int(np.argmax(raw))]
        print(
            f"{TRIGGER_LABELS[name]:<10}{raw.mean():>12.2f}{raw.max():>11.2f}"
            f"{ruled.mean():>14.2f}{ruled.max():>13.2f}  {worst}"
        )


if __name__ == "__main__":
    main()
