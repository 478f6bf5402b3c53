"""`portfolio import`: a broker's holdings export replaces the positions, a deliveries export
is recorded fill by fill (the broker's own fees where the file has them), all in one
transaction and one history entry, so undo restores the book exactly. A dry run makes the
same changes and rolls them back, so its preview is exactly what an import would do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wyckoff import portfolio_store
from wyckoff.agents.portfolio_rules import stock_names
from wyckoff.errors import UsageError
from wyckoff.ledger.broker_export import BROKER_NAMES, Delivery, Export, Holding
from wyckoff.portfolio_store import Position

if TYPE_CHECKING:
    from wyckoff.agents.ledger import Ledger


class _DryRun(Exception):
    """Raised inside the import's transaction to roll it back."""


def import_export(ledger: Ledger, export: Export, today: str, dry_run: bool) -> dict[str, Any]:
    """Apply `export` (or only try it); what changed: positions and cash before and after."""
    store = ledger.store
    codes = sorted(
        {p["code"] for p in portfolio_store.positions(store)}
        | {row.code for row in [*export.holdings, *export.deliveries]}
    )
    result: dict[str, Any] = {}
    try:
        with store.transaction():
            before = portfolio_store.snapshot(store, codes)
            unchecked: list[str] = []
            if export.kind == "holdings":
                fill_ids, unlisted = [], _replace_positions(store, export.holdings, today)
            else:
                fill_ids, unlisted = _record_fills(ledger, export.deliveries, unchecked), []
            after = portfolio_store.snapshot(store, codes, fill_ids)
            result = {"before": before, "after": after, "unlisted": unlisted}
            result["unchecked"] = unchecked
            if dry_run:
                raise _DryRun
            portfolio_store.record_change(store, "import", "import", None, before, after)
    except _DryRun:
        pass
    return {"action": "import", "kind": export.kind, "dry_run": dry_run, **result}


def _replace_positions(store, holdings: list[Holding], today: str) -> list[str]:
    """The positions become the file's; codes not in the A-share list are left out (said)."""
    names = stock_names()
    kept = {p["code"]: p for p in portfolio_store.positions(store)}
    for code in kept:
        portfolio_store.delete_position(store, code)
    unlisted = []
    for holding in holdings:
        if holding.code not in names:
            unlisted.append(f"{holding.code} {holding.name}")
            continue
        old = kept.get(holding.code)
        portfolio_store.write_position(
            store,
            Position(
                code=holding.code,
                name=names[holding.code],
                shares=holding.shares,
                cost_price=round(holding.cost_cents / holding.shares / 100, 4),
                buy_dt=old["buy_dt"] if old else today,
                stop_loss=old["stop_loss"] if old else None,
                cost_cents=holding.cost_cents,
                booked_dt=today,  # the broker's count already holds every past ex-date
            ),
        )
    return unlisted


def _record_fills(ledger: Ledger, deliveries: list[Delivery], unchecked: list[str]) -> list[int]:
    """The fills' ids; a row priced outside its day's range refuses the import, a row on a
    day the market store has no bar for is recorded and its note added to `unchecked`."""
    names = stock_names()
    ids = []
    for row in sorted(deliveries, key=lambda d: (d.date, d.time or "", d.line)):
        if row.code not in names:
            raise UsageError(
                f"第 {row.line} 行：{row.code} 不在 A 股代码表中（基金、债券等不导入）。"
            )
        try:
            day = ledger.open_day(row.date)  # not a weekend, a holiday or the future
            fill = ledger.priced(
                row.code, names[row.code], row.side, row.shares, row.price_mills, day
            )
            fill["trade_time"] = row.time
            note = ledger.price_note(fill, force=True)
            if note:
                unchecked.append(f"第 {row.line} 行：{note}")
            for field in ("value_cents", "commission_cents", "stamp_cents", "transfer_cents"):
                if getattr(row, field) is not None:  # the broker's own figure
                    fill[field] = getattr(row, field)
            ids.append(ledger.apply(fill, "import"))
        except UsageError as exc:
            raise UsageError(f"第 {row.line} 行（{row.date} {row.code}）：{exc.message}") from None
    return ids


def describe_import(result: dict[str, Any], export: Export, file: str) -> list[str]:
    """The preview: one line per position that changes, the cash, what was left out."""
    from wyckoff.ledger.money import yuan

    before = {p["code"]: p for p in result["before"]["positions"]}
    after = {p["code"]: p for p in result["after"]["positions"]}
    broker = BROKER_NAMES.get(export.broker, "券商")
    what = "持仓" if export.kind == "holdings" else f"交割单 {len(export.deliveries)} 笔成交"
    lines = [f"{file}：{broker}{what}。"]
    for code in sorted(before | after):
        old, new = before.get(code), after.get(code)
        if old != new:
            lines.append(f"  {code} {(new or old)['name']}：{_held(old)} → {_held(new)}")
    cash = result["before"]["cash_cents"], result["after"]["cash_cents"]
    if cash[0] != cash[1]:
        lines.append(f"  现金：{yuan(cash[0])} → {yuan(cash[1])}")
    if len(lines) == 1:
        lines.append("  与当前持仓相同，没有改动。")
    lines += [f"  未导入：{row}（不在 A 股代码表中）" for row in result["unlisted"]]
    lines += [f"  未导入：{row}" for row in export.skipped]
    lines += [f"  价格未核对：{row}" for row in result["unchecked"]]
    return lines


def _held(position: dict[str, Any] | None) -> str:
    if position is None:
        return "（无）"
    cost = position["cost_cents"] / position["shares"] / 100
    return f"{position['shares']} 股，成本 {cost:.3f}"
