"""The account's daily NAV: its value at each trading day's close since its first fill, and a
time-weighted return beside the CSI 300 over the same days.

Walked back from today's book: each day is valued, then that day's fills, corporate actions
and cash moves are reversed. Positions added or removed by hand have no trade date and count
as if they had always been so; so does the cash set before the first fill (the opening
balance). The return is time-weighted: a unit value that moves with each day's NAV over the
day before plus the money moved in that day, so a deposit is no gain and a withdrawal no loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wyckoff import portfolio_store
from wyckoff.agents.ledger_report import value_cents

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

    from wyckoff.engine.market_store import MarketStore
    from wyckoff.store import Store


def daily_nav(store: Store, market: MarketStore) -> dict[str, Any]:
    """Each day's date, nav_cents, cash_cents, flow_cents (money moved in that day), unit
    value, return_pct and csi300_pct; a note on what the figures leave out."""
    from wyckoff.engine.benchmark import CSI300
    from wyckoff.engine.marks import closes, index_closes

    events = _dated_events(store)
    held = {p["code"]: p["shares"] for p in portfolio_store.positions(store)}
    traded = [e for e in events if e["code"]]
    start = min(
        [e["date"] for e in traded] + [p["buy_dt"] for p in portfolio_store.positions(store)],
        default=None,
    )
    if start is None:
        return {"days": [], "note": "还没有持仓或成交记录：先用 `wyckoff portfolio buy` 记录成交。"}
    codes = sorted(set(held) | {e["code"] for e in traded})
    prices = closes(market, codes, start).pivot(index="date", columns="code", values="close")
    prices = prices.sort_index().ffill()  # a suspended stock keeps its last close
    days, unpriced = _walk_back(store, events, prices)
    if not days:
        named = "、".join(_named(store, code) for code in codes)
        return {
            "days": [],
            "note": f"行情库没有 {named} 在 {start} 之后的收盘价，无法计算每日净值。",
        }
    _time_weighted(days)
    beside = _beside_index(days, index_closes(market, CSI300[0], start))
    notes: list[str | None] = [
        _unpriced_note(store, c, when) for c, when in sorted(unpriced.items())
    ]
    notes += [_undated_note(store, events), beside.pop("note")]
    return {"days": days, "note": " ".join(n for n in notes if n) or None, **beside}


def _walk_back(
    store: Store, events: list[dict[str, Any]], prices: pd.DataFrame
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The days, oldest first, and code -> the days a held stock had no close."""
    shares = {p["code"]: p["shares"] for p in portfolio_store.positions(store)}
    cash = portfolio_store.cash_cents(store)
    pending = sorted(events, key=lambda e: e["date"], reverse=True)
    days: list[dict[str, Any]] = []
    unpriced: dict[str, list[str]] = {}
    for day in reversed(prices.index):
        while pending and pending[0]["date"] > day:
            event = pending.pop(0)
            cash = _reverse(event, shares, cash)
            if event["code"] is None and days:  # money moved in on the day after this one
                days[-1]["flow_cents"] += event["cash"]
        marks = prices.loc[day].dropna()  # none before a stock's first bar
        value = sum(value_cents(n, marks[code]) for code, n in shares.items() if code in marks)
        for code in (c for c, n in shares.items() if n and c not in marks):
            unpriced.setdefault(code, []).insert(0, day)
        days.append({"date": day, "nav_cents": cash + value, "cash_cents": cash, "flow_cents": 0})
    days.reverse()
    return days, unpriced


def _time_weighted(days: list[dict[str, Any]]) -> None:
    """Each day's unit value: the day before's x NAV / (the NAV before + the money moved in
    that day). A day whose starting value is not positive (all money out) keeps the unit."""
    unit = 1.0
    for before, day in zip([None, *days], days, strict=False):
        if before is not None:
            base = before["nav_cents"] + day["flow_cents"]
            unit = unit * day["nav_cents"] / base if base > 0 else unit
        day["unit_value"] = round(unit, 6)


def _beside_index(days: list[dict[str, Any]], index: pd.DataFrame) -> dict[str, Any]:
    """Each day's return since the first day, for the account (time-weighted) and the CSI 300."""
    from wyckoff.engine.benchmark import CSI300

    by_date = dict(zip(index["date"], index["close"], strict=True))
    first_index = by_date.get(days[0]["date"])
    for day in days:
        day["return_pct"] = round((day["unit_value"] - 1) * 100, 2)
        close = by_date.get(day["date"])
        day["csi300_pct"] = (
            round((close / first_index - 1) * 100, 2) if close and first_index else None
        )
    if first_index is None:
        return {
            "note": f"行情库没有{CSI300[1]}（{CSI300[0]}）在这些日子的指数日线，无法对比；同步或导入指数后再看。"
        }
    return {"note": None}


def _named(store: Store, code: str) -> str:
    """'600519 贵州茅台': a stock held or traded, by its name in the book."""
    names = {f["code"]: f["name"] for f in portfolio_store.fills(store, code)}
    names.update({p["code"]: p["name"] for p in portfolio_store.positions(store)})
    return f"{code} {names.get(code, '')}".strip()


def _unpriced_note(store: Store, code: str, days: list[str]) -> str:
    """Which held stock the NAV left out, and on which days."""
    when = (
        f"{days[0]} " if len(days) == 1 else f"{days[0]} 至 {days[-1]}（共 {len(days)} 个交易日）"
    )
    return (
        f"行情库没有持仓 {_named(store, code)} 在 {when}的收盘价，这些天的净值没有计入它的市值；"
        f"用 `wyckoff data sync --codes {code}` 同步后再看。"
    )


def _undated_note(store: Store, events: list[dict[str, Any]]) -> str | None:
    """The cash no record explains (set before cash moves were dated): counted as always so."""
    from wyckoff.ledger.money import yuan

    opening = sum(f["cents"] for f in portfolio_store.cash_flows(store) if not f["flow_date"])
    undated = portfolio_store.cash_cents(store) - opening - sum(e["cash"] for e in events)
    if not undated:
        return None
    return (
        f"有 {yuan(undated)} 元现金改动没有日期（在记录资金转入转出之前设置），按一直如此计算，"
        "那段时间的收益率可能失真；以后用 `wyckoff portfolio cash 金额 --date 日期` 记下转入转出的日期。"
    )


def _dated_events(store: Store) -> list[dict[str, Any]]:
    """Fills, corporate actions and dated cash moves as (date, code or None for a cash move,
    shares change, cash change in cents)."""
    events = []
    for fill in portfolio_store.fills(store):
        fees = fill["commission_cents"] + fill["stamp_cents"] + fill["transfer_cents"]
        if fill["side"] == "buy":
            change = (fill["shares"], -(fill["value_cents"] + fees))
        else:
            change = (-fill["shares"], fill["value_cents"] - fees - fill["dividend_tax_cents"])
        events.append(_event(fill["trade_date"], fill["code"], *change))
    for action in portfolio_store.corporate_actions(store):
        events.append(
            _event(action["ex_date"], action["code"], action["bonus_shares"], action["cash_cents"])
        )
    for flow in portfolio_store.cash_flows(store):
        if flow["flow_date"]:  # the opening balance has none: always so
            events.append(_event(flow["flow_date"], None, 0, flow["cents"]))
    return events


def _event(day: str, code: str | None, shares: int, cash: int) -> dict[str, Any]:
    return {"date": day, "code": code, "shares": shares, "cash": cash}


def _reverse(event: dict[str, Any], shares: dict[str, int], cash: int) -> int:
    """Take `event` back out of the holdings; the cash before it."""
    if event["code"] is not None:
        shares[event["code"]] = shares.get(event["code"], 0) - event["shares"]
    return cash - int(event["cash"])
