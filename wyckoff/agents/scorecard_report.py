"""The scorecard's reading side: every recorded piece of advice with its entry, its outcomes
(null until known), what the user did after it (their ledger fills), and a summary per kind,
the demo market's apart from the real ones (docs/scorecard.md)."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

from wyckoff import portfolio_store, scorecard_store
from wyckoff.cli.numbers import pct
from wyckoff.store import Store

HORIZON_KEYS = ("1", "5", "20")
HEADLINE = "20"  # the horizon a kind's summary leads with
RESPONSE_DAYS = 7  # a fill this many calendar days (about 5 trading days) after the advice
RESPONSE_LABELS = {"followed": "照做", "ignored": "未理会", "against": "反向操作"}
AGREES = {  # (advice, fill side) -> how the fill answered the advice
    ("buy", "buy"): "followed",
    ("buy", "sell"): "against",
    ("sell", "sell"): "followed",
    ("sell", "buy"): "against",
    ("avoid", "sell"): "followed",
    ("avoid", "buy"): "against",
}


def scorecard(
    store: Store, since: str | None = None, kind: str | None = None, today: date | None = None
) -> dict[str, Any]:
    """Items oldest first and the summaries: `summary` of the real markets' items, and
    `demo_summary` of the demo market's (never mixed)."""
    from wyckoff.engine.clock import market_now

    today = today or market_now().date()
    rows = scorecard_store.items(store, since, kind)
    outcomes = scorecard_store.outcomes(store)
    # matched over every item, so a filter never changes which advice a fill answered
    responses = _responses(scorecard_store.items(store), portfolio_store.fills(store), today)
    items = [_item(row, outcomes.get(row["id"], {}), responses.get(row["id"])) for row in rows]
    return {
        "items": items,
        "summary": summarize([i for i in items if not i["demo"]]),
        "demo_summary": summarize([i for i in items if i["demo"]]),
    }


def _item(
    row: dict[str, Any], outcomes: dict[int, dict[str, Any]], response: dict[str, Any] | None
) -> dict[str, Any]:
    twenty = outcomes.get(int(HEADLINE), {})
    return {
        "id": row["id"],
        "kind": row["kind"],
        "code": row["code"],
        "name": row["name"],
        "as_of": row["as_of"],
        "advice": row["advice"],
        "source": row["source"],
        "demo": row["source"] == "demo",
        "price": row["price"],
        "stop": row["stop"],
        "note": row["note"],
        "recorded_at": row["recorded_at"],
        "entry_date": row["entry_date"],
        "entry_price": row["entry_price"],
        "unfillable": row["unfillable"],
        "outcomes": {h: _outcome(row["advice"], outcomes.get(int(h))) for h in HORIZON_KEYS},
        "mfe": twenty.get("mfe"),
        "mae": twenty.get("mae"),
        "stop_hit": None if twenty.get("stop_hit") is None else bool(twenty["stop_hit"]),
        "response": response and response["response"],
        "response_fill": response and response["fill"],
    }


def _outcome(advice: str, row: dict[str, Any] | None) -> dict[str, Any]:
    """One horizon: the stock's return and its excess over each benchmark, and `score`, the
    excess over the market as the advice earned it (sell and avoid: the loss avoided)."""
    if row is None:
        return dict.fromkeys(
            ("exit_date", "return", "excess_vs_market", "excess_vs_csi300", "score")
        )
    stock = row["stock_return"]
    over_market = _minus(stock, row["market_return"])
    sign = 1 if advice == "buy" else -1
    return {
        "exit_date": row["exit_date"],
        "return": stock,
        "excess_vs_market": over_market,
        "excess_vs_csi300": _minus(stock, row["csi300_return"]),
        "score": None if over_market is None else sign * over_market,
    }


def _minus(value: float, benchmark: float | None) -> float | None:
    return None if benchmark is None else value - benchmark


def _responses(
    rows: list[dict[str, Any]], fills: list[Any], today: date
) -> dict[int, dict[str, Any]]:
    """item id -> its response. Each fill answers the latest real advice on its stock dated
    before it, when within RESPONSE_DAYS; advice with no fill once that window has passed
    was ignored (and is still open before)."""
    by_code: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["source"] != "demo":
            by_code.setdefault(row["code"], []).append(row)
    found: dict[int, dict[str, Any]] = {}
    for fill in fills:
        day = _iso(fill["trade_date"])
        earlier = [r for r in by_code.get(fill["code"], []) if r["as_of"] < day]
        if not earlier:
            continue
        latest = max(r["as_of"] for r in earlier)
        if date.fromisoformat(day) - date.fromisoformat(latest) > timedelta(RESPONSE_DAYS):
            continue
        for row in (r for r in earlier if r["as_of"] == latest and r["id"] not in found):
            response = AGREES[(row["advice"], fill["side"])]
            found[row["id"]] = {"response": response, "fill": _fill_view(fill)}
    for row in (r for rows_ in by_code.values() for r in rows_):
        window_over = today - date.fromisoformat(row["as_of"]) > timedelta(RESPONSE_DAYS)
        if row["id"] not in found and window_over:
            found[row["id"]] = {"response": "ignored", "fill": None}
    return found


def _fill_view(fill: Any) -> dict[str, Any]:
    return {
        "id": fill["id"],
        "side": fill["side"],
        "shares": fill["shares"],
        "price": fill["price_mills"] / 1000,
        "trade_date": _iso(fill["trade_date"]),
    }


def _iso(day: str) -> str:
    """YYYYMMDD (a fill's date) as YYYY-MM-DD (an item's)."""
    return f"{day[:4]}-{day[4:6]}-{day[6:]}" if len(day) == 8 else day


def summarize(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per kind: how many items, how many could not be entered, per horizon how many are
    scored with their mean score (excess over the market as the advice earned it) and hit
    rate (share with a positive score), and the user's responses."""
    summary: dict[str, dict[str, Any]] = {}
    for kind in dict.fromkeys(i["kind"] for i in items):
        mine = [i for i in items if i["kind"] == kind]
        horizons = {h: _horizon(mine, h) for h in HORIZON_KEYS}
        summary[kind] = {
            "count": len(mine),
            "unfillable": sum(1 for i in mine if i["unfillable"]),
            **horizons[HEADLINE],
            "by_horizon": horizons,
            "responses": {r: sum(1 for i in mine if i["response"] == r) for r in RESPONSE_LABELS},
        }
    return summary


def _horizon(items: list[dict[str, Any]], horizon: str) -> dict[str, Any]:
    scores = [i["outcomes"][horizon]["score"] for i in items]
    known = [s for s in scores if s is not None]
    return {
        "scored": len(known),
        "mean_excess": sum(known) / len(known) if known else None,
        "hit_rate": sum(1 for s in known if s > 0) / len(known) if known else None,
    }


def refreshed_scorecard(
    home: Path, store: Store, since: str | None = None, kind: str | None = None
) -> dict[str, Any]:
    """The scorecard after filling in every outcome whose days have come."""
    from wyckoff.agents.scorecard import fill_outcomes

    fill_outcomes(home, store)
    return scorecard(store, since, kind)


def summary_line(s: dict[str, Any]) -> str:
    """One kind's summary as a Chinese line (the CLI, the brief and the web page)."""
    responses = s["responses"]
    scored = (
        f"20 日已计 {s['scored']} 条，平均超额 {pct(percent(s['mean_excess']), signed=True)}，"
        f"胜率 {pct(percent(s['hit_rate']))}"
        if s["scored"]
        else "20 日结果未出"
    )
    return (
        f"{s['count']} 条，{scored}；无法成交 {s['unfillable']} 条；"
        f"照做 {responses['followed']}、未理会 {responses['ignored']}、反向 {responses['against']}"
    )


def percent(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100
