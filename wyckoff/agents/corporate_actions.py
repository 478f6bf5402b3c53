"""Corporate actions on held positions, from the market data: on each ex-date a held stock's
bonus and 转增 shares are added (cost unchanged, so the average cost falls), its cash
dividend is credited to cash and its stop (set before the ex-date) moves with the price. Each
is a change in the history (undo takes it back; it is applied again the next time the ledger
catches up).

So a holding's per-share cost and stop are in today's prices as traded, the basis every
comparison with a price uses (the panel's qfq prices equal the traded ones on its last day);
readers see the book as if caught up (`positions_in_traded_prices`), without writing it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from wyckoff import portfolio_store
from wyckoff.agents.portfolio_rules import with_basis
from wyckoff.cli.output import local_today
from wyckoff.ledger.dividend_tax import Lots
from wyckoff.ledger.money import half_up

if TYPE_CHECKING:
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.portfolio_store import Position
    from wyckoff.store import Store

T = TypeVar("T")


def catch_up(
    store: Store, market: MarketStore, codes: list[str] | None = None, until: str | None = None
) -> list[dict]:
    """Apply the ex-dates up to `until` (else today) of held stocks (`codes`, else all) not
    applied yet, each in its own transaction and history entry; what was applied."""
    applied = []
    for event in _due(store, market, codes, until):
        with store.transaction():
            change = _apply(store, *event)
        if change:
            applied.append(change)
    return applied


def as_caught_up(store: Store, market: MarketStore, until: str | None, read: Callable[[], T]) -> T:
    """What `read` returns on the book with the ex-dates up to `until` (YYYYMMDD, else
    today) applied, the book left as it is (`Store.rolled_back`). Readers (alerts,
    `portfolio check`, the brief, the tail check) use it so that a holding's cost and stop
    meet today's prices on one basis."""
    due = _due(store, market, None, until)
    if not due:
        return read()
    with store.rolled_back():
        for event in due:
            _apply(store, *event)
        return read()


def apply_due(store: Store, market: MarketStore, codes: list[str], until: str) -> None:
    """The ex-dates of `codes` up to `until` applied inside the caller's transaction."""
    for event in _due(store, market, codes, until):
        _apply(store, *event)


def positions_in_traded_prices(store: Store, market: MarketStore, as_of: str) -> list[Position]:
    """The holdings with per-share cost and stop in the prices of `as_of` (YYYYMMDD or
    YYYY-MM-DD) as traded: the ex-dates up to it applied and those the ledger booked after it
    taken back (a check of a past day), the book left as it is."""
    day = as_of.replace("-", "")
    later = [a for a in portfolio_store.corporate_actions(store) if a["ex_date"] > day]
    if not later:
        return as_caught_up(store, market, day, lambda: portfolio_store.positions(store))
    with store.rolled_back():
        _take_back(store, market, later, day)
        for event in _due(store, market, None, day):
            _apply(store, *event)
        return portfolio_store.positions(store)


def _take_back(store: Store, market: MarketStore, actions: list[dict[str, Any]], day: str) -> None:
    """Undo the price effect of the ex-dates booked after `day`, newest first, inside the
    caller's transaction: the shares back to the count before (the basis unchanged, so the
    per-share cost rises again) and the stop back to the prices before (÷ the ex-date's
    price ratio). Cash and fills are left alone: only the holdings are read."""
    from wyckoff.engine.marks import ex_events

    events = ex_events(market, sorted({a["code"] for a in actions}), day)
    ratios = {(e.code, e.date): float(e.ratio) for e in events.itertuples()}
    for action in sorted(actions, key=lambda a: a["ex_date"], reverse=True):
        held = portfolio_store.position(store, action["code"])
        portfolio_store.delete_corporate_action(store, action["id"])
        if held is None:
            continue
        before = action["shares_before"]
        shares = max(1, round(held["shares"] * before / (before + action["bonus_shares"])))
        back = with_basis(held, shares, held["cost_cents"])
        ratio = ratios.get((action["code"], action["ex_date"]))
        if held["stop_loss"] and ratio:
            back["stop_loss"] = round(held["stop_loss"] / ratio, 2)
        portfolio_store.write_position(store, back)


def _due(
    store: Store, market: MarketStore, codes: list[str] | None, until: str | None
) -> list[tuple[str, str, tuple[float, float], float]]:
    """(code, ex-date, (bonus, cash) per share, the stop's price ratio) of each ex-date after
    a holding's buy date and the day its count was stated (`booked_dt`), up to `until` (else
    today); applied ones are skipped later."""
    from wyckoff.engine.marks import ex_events

    held = {
        p["code"]: p for p in portfolio_store.positions(store) if not codes or p["code"] in codes
    }
    if not held:
        return []
    until = until or local_today().strftime("%Y%m%d")
    since = {code: max(p["buy_dt"], p["booked_dt"] or "") for code, p in held.items()}
    events = ex_events(market, sorted(held), min(since.values()))
    stops_set = stop_dates(store, list(held.values()))  # before the catch-up's own changes
    return [
        (
            event.code,
            event.date,
            (float(event.bonus), float(event.cash)),
            float(event.ratio) if event.date > stops_set[event.code] else 1.0,
        )
        for event in events.itertuples()
        if since[event.code] < event.date <= until
    ]


def stop_dates(store: Store, positions: list[Position]) -> dict[str, str]:
    """code -> the day (YYYYMMDD) whose prices its stop is in: the position's newest change
    (a stop typed by hand, or a fill or ex-date the ledger brought it to), else its buy date."""
    from wyckoff.cli.output import local_time

    changed = portfolio_store.last_changed(store)
    return {
        p["code"]: max(p["buy_dt"], local_time(changed.get(p["code"], ""))[:10].replace("-", ""))
        for p in positions
    }


def _apply(
    store: Store, code: str, ex_date: str, paid: tuple[float, float], stop_ratio: float
) -> dict | None:
    """Apply one ex-date inside the caller's transaction: `paid` is (bonus shares, cash) per
    share; the stop moves with the price (x `stop_ratio`) when it was set before the ex-date."""
    bonus, cash = paid
    held = portfolio_store.position(store, code)
    if held is None or portfolio_store.corporate_action_applied(store, code, ex_date):
        return None
    shares = _held_before(store, held, ex_date)
    if shares <= 0:
        return None
    bonus_shares = int(shares * Decimal(str(round(bonus, 4))))  # fractions are not paid
    cash_cents = half_up(shares * Decimal(str(round(cash, 3))) * 100)
    if not bonus_shares and not cash_cents:
        return None
    before = portfolio_store.snapshot(store, [code])
    moved = with_basis(held, held["shares"] + bonus_shares, held["cost_cents"])
    if held["stop_loss"]:
        moved["stop_loss"] = round(held["stop_loss"] * stop_ratio, 2)
    portfolio_store.write_position(store, moved)
    portfolio_store.write_cash_cents(store, before["cash_cents"] + cash_cents)
    action = {"code": code, "ex_date": ex_date, "shares_before": shares}
    action.update(bonus_shares=bonus_shares, cash_cents=cash_cents)
    action_id = portfolio_store.add_corporate_action(store, action)
    action["name"] = held["name"]
    after = {**portfolio_store.snapshot(store, [code]), "action_ids": [action_id]}
    portfolio_store.record_change(
        store, "market", "corporate_action", code, before, {**after, "corporate_action": action}
    )
    return action


def _held_before(store: Store, held: Position, ex_date: str) -> int:
    """The shares held at the close before `ex_date`: today's, less what fills and other
    corporate actions on or after it added."""
    later: int = sum(
        f["shares"] if f["side"] == "buy" else -f["shares"]
        for f in portfolio_store.fills(store, held["code"])
        if f["trade_date"] >= ex_date
    )
    later += sum(
        a["bonus_shares"]
        for a in portfolio_store.corporate_actions(store)
        if a["code"] == held["code"] and a["ex_date"] > ex_date
    )
    return held["shares"] - later


def lots_of(store: Store, held: Position) -> Lots:
    """The position as lots by buy date (for the dividend tax): its fills and corporate
    actions replayed in date order, shares entered by hand as one lot on their buy date."""
    fills = portfolio_store.fills(store, held["code"])
    actions = [a for a in portfolio_store.corporate_actions(store) if a["code"] == held["code"]]
    by_hand = (
        held["shares"]
        - sum(f["shares"] if f["side"] == "buy" else -f["shares"] for f in fills)
        - sum(a["bonus_shares"] for a in actions)
    )
    lots = Lots()
    if by_hand > 0:
        lots.buy(_day(held["buy_dt"]), by_hand)
    # an ex-date comes before that day's trades
    timeline: list[tuple[str, int, Any]] = [(a["ex_date"], 0, a) for a in actions]
    timeline += [(f["trade_date"], 1, f) for f in fills]
    for day, _, item in sorted(timeline, key=lambda entry: entry[:2]):
        if "ex_date" in item:
            lots.corporate_action(item["bonus_shares"], item["cash_cents"])
        elif item["side"] == "buy":
            lots.buy(_day(day), item["shares"])
        else:
            lots.sell(_day(day), item["shares"])
    return lots


def _day(text: str) -> date:
    return datetime.strptime(text, "%Y%m%d").date()


def describe_action(action: dict[str, Any]) -> str:
    from wyckoff.ledger.money import yuan

    parts = [f"送转 {action['bonus_shares']} 股"] if action["bonus_shares"] else []
    if action["cash_cents"]:
        parts.append(f"现金分红 {yuan(action['cash_cents'])} 元（卖出时按持有期限扣红利税）")
    return (
        f"除权除息 {action['ex_date']}：{action['code']} {action['name']} "
        f"{action['shares_before']} 股，{'，'.join(parts)}"
    )
