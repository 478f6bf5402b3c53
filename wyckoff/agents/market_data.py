"""The open market of the configured source, shared by every market tool: its store, the
panels loaded from it (cached per process and on disk), and the envelope every result
carries (`source`, `as_of`; on the demo market, `data_note` saying the data is synthetic)."""

from __future__ import annotations

import threading
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wyckoff.agents.stock_lookup import resolve_stock
from wyckoff.cli.tools import ToolContext, ToolFailure
from wyckoff.engine.sources.choice import no_data_hint, resolve_source

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd  # type: ignore[import-untyped]

    from wyckoff.config import WyckoffConfig
    from wyckoff.engine.panel import Panel

DEMO_NOTE = "演示数据：这是本地合成的行情，不是真实市场数据，结论仅供体验功能。"
PANEL_DAYS = 400
_PANELS: dict[tuple[str, str, int, str | None], Panel] = {}
_PANEL_LOCK = threading.Lock()


class MarketData:
    """The market store of the configured source and the panels loaded from it."""

    def __init__(self, home: Path, config: WyckoffConfig) -> None:
        from wyckoff.engine.market_store import MarketStore

        self.home = home
        self.source = resolve_source(config)
        self.store = MarketStore.for_source(home, self.source)

    @classmethod
    def from_context(cls, context: ToolContext) -> MarketData:
        """The context's market, reopened when `wyckoff data use` changed the source meanwhile
        (an open TUI must follow the switch its own "no data" hint asks for)."""
        config = context.read_config()
        source = resolve_source(config)
        market = context.markets.get(source)
        if not isinstance(market, cls):
            context.markets.clear()  # only the current source stays open
            market = cls(context.home, config)
            context.markets[source] = market
        return market

    def ready(self) -> None:
        """Raise a clear error when there is no data; build the demo market on first use."""
        from wyckoff.engine.sources.demo import ensure_demo

        if self.source == "demo":
            ensure_demo(self.home)
        elif self.store.is_empty():
            raise ToolFailure(no_data_hint(self.source))

    def panel(self, days: int = PANEL_DAYS, end: str | None = None) -> Panel:
        """The last `days` trading days (up to `end`, else the latest): kept in memory per
        process, and the latest ones on disk per store version (see engine/panel_cache.py), so
        a warm run does not touch DuckDB."""
        from wyckoff.engine.panel_cache import cached_panel
        from wyckoff.engine.store_cache import store_version

        if not self.store.path.exists():
            self.ready()
        key = (str(self.store.path), store_version(self.store.path), days, end)
        with _PANEL_LOCK:
            panel = _PANELS.get(key)
            if panel is None:
                _PANELS.clear()
                if end:  # a window in the past: one of many, not worth a copy on disk
                    panel = self._load(days, end)
                else:
                    panel = cached_panel(
                        self.store.path, self.source, days, lambda: self._load(days)
                    )
                _PANELS[key] = panel
        return panel

    def _load(self, days: int, end: str | None = None) -> Panel:
        self.ready()
        return self.store.load_panel(days, end=end)

    def bar_dates(self) -> np.ndarray:
        """Every date the store has bars for."""
        self.ready()
        dates: np.ndarray = self.store.bar_dates()["date"].to_numpy().astype("datetime64[D]")
        return dates

    def envelope(self, as_of: str, **result: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"source": self.source, "as_of": as_of}
        if self.source == "demo":
            payload["data_note"] = DEMO_NOTE
        partial = partial_bar_note(as_of)
        if partial:
            payload["bar_note"] = partial
        payload.update(result)
        return payload

    def open_days(self) -> np.ndarray:
        """Trading days the store knows (datetime64[D], oldest first): its calendar's open
        days and every date with bars."""
        import numpy as np

        return np.array(self.open_day_list(), dtype="datetime64[D]")

    def open_day_list(self) -> list[date]:
        """`open_days` as dates, read without numpy from a copy kept on disk per store version
        (see engine/store_cache.py); empty before the store exists."""
        from wyckoff.engine.store_cache import cached_open_days

        if not self.store.path.exists():
            return []
        return cached_open_days(self.store.path, self.store.trading_dates)

    def stock_table(self) -> pd.DataFrame:
        self.ready()
        return self.store.stocks()

    def resolve_code(self, text: str) -> str:
        """The one stock `text` names (code, code with exchange, or name), else the candidates."""
        return resolve_stock(all_stocks(self.panel()), text)


def partial_bar_note(as_of: str) -> str:
    """The caveat when the latest bar is today's and the session is still running."""
    from wyckoff.engine.clock import market_now, partial_bar_note, trading_phase

    now = market_now()
    if as_of != now.date().isoformat():
        return ""
    return partial_bar_note(now, trading_phase(now))


def stored_open_days(home: Path, config: WyckoffConfig | None) -> frozenset[date]:
    """The open days of the configured market's stored calendar; empty when there is no
    store yet or it cannot be read at once (the clock then counts weekdays as open)."""
    from wyckoff.errors import WyckoffError

    if config is None:  # a broken config file: the turn's tools report it
        return frozenset()
    market = MarketData(home, config)
    market.store.lock_wait_s = 0.5  # a running `data sync` must not hold up the prompt
    try:
        return frozenset(market.open_day_list())
    except (WyckoffError, OSError):
        return frozenset()


def all_stocks(panel: Panel) -> dict[str, list[str]]:
    """The codes and names of the panel's stocks plus any listed stock it lacks, so names
    resolve against the whole market: a fragment unique among demo stocks is not unique
    among all A-shares."""
    from wyckoff.memory.codes import listed_names

    names = dict(zip(panel.codes, panel.stock_list.values("name"), strict=True))
    for code, name in listed_names().items():
        names.setdefault(code, name)
    return {"code": list(names), "name": list(names.values())}


def signed_pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}%"


def price_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
