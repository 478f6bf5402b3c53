"""The brief's account sections. The real one, for users who record fills (`portfolio buy/sell` or an
imported 交割单): today's NAV and its change from the day before, realized and unrealized
P&L, and the NAV's return beside the CSI 300 for the chart. Read-only: the ledger's own
report functions (agents/ledger_report.py) on the book as `portfolio show/nav` will have it,
ex-dates not booked yet included (booked in a transaction that is rolled back). The paper
account's (`paper`), when there is one: its NAV beside the real account and the CSI 300."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wyckoff import portfolio_store
from wyckoff.ledger.days import day_text

if TYPE_CHECKING:
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.store import Store

CURVE_DAYS = 120  # the chart's last days: the page stays small


def account(store: Store, market: MarketStore) -> dict[str, Any] | None:
    """The account of the latest close, or None when no fill was ever recorded."""
    from wyckoff.agents.corporate_actions import as_caught_up
    from wyckoff.agents.ledger_nav import daily_nav
    from wyckoff.agents.ledger_report import profit_and_loss

    if not portfolio_store.fills(store):
        return None
    nav, pnl = as_caught_up(
        store, market, None, lambda: (daily_nav(store, market), profit_and_loss(store, market))
    )
    days = nav["days"]
    summary: dict[str, Any] = {
        "realized_cents": pnl["realized_cents"],
        "unrealized_cents": pnl["unrealized_cents"],
        "unpriced": pnl["unpriced"],
        "note": nav["note"],
        "curve": [
            [day_text(d["date"]), d["return_pct"], d["csi300_pct"]] for d in days[-CURVE_DAYS:]
        ],
    }
    if days:
        today = days[-1]
        before = days[-2] if len(days) > 1 else None
        summary |= {
            "date": day_text(today["date"]),
            "nav_cents": today["nav_cents"],
            "flow_cents": today["flow_cents"],
            # the change the market made: money moved in or out that day is no gain
            "nav_change_cents": (
                None
                if before is None
                else today["nav_cents"] - before["nav_cents"] - today["flow_cents"]
            ),
            "nav_change_pct": (
                round((today["unit_value"] / before["unit_value"] - 1) * 100, 2) if before else None
            ),
            "return_pct": today["return_pct"],
            "csi300_pct": today["csi300_pct"],
        }
    return summary


def paper(store: Store, market: MarketStore) -> dict[str, Any] | None:
    """The paper account's latest day beside the real account and the CSI 300 (its return
    since it started), or None when there is no paper account or it booked no day yet."""
    from wyckoff import paper_store
    from wyckoff.agents.paper_views import account_market, paper_nav

    own = account_market(store, market) if paper_store.account(store) else None
    if own is None:
        return None
    report = paper_nav(store, own, with_real=own is market)
    if not report["days"]:
        return None
    last, account = report["days"][-1], report["account"]
    return {
        "date": day_text(last["date"]),
        "since": day_text(report["days"][0]["date"]),
        "capital_cents": account["capital_cents"],
        "nav_cents": last["nav_cents"],
        "return_pct": last["return_pct"],
        "real_return_pct": last["real_return_pct"],
        "csi300_pct": last["csi300_pct"],
        "source": account["source"],
    }
