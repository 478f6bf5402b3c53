"""`portfolio import`: a broker's holdings export replaces the positions, a deliveries export
is recorded fill by fill (the broker's own fees where the file has them), all in one
transaction and one history entry, so undo restores the book exactly. Each fill keeps its
row's key (broker_export.Delivery.key): rows imported before are skipped, and a row repeating
an earlier one of the file is booked only when the user confirms repeats. A dry run makes the
same changes and rolls them back, so its preview is exactly what an import would do."""

from __future__ import annotations

from dataclasses import dataclass, field
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


def import_export(
    ledger: Ledger, export: Export, today: str, dry_run: bool, keep_duplicates: bool = False
) -> dict[str, Any]:
    """Apply `export` (or only try it); what changed: positions and cash before and after,
    and the rows left out as imported before (`already`) or as repeats (`repeated`)."""
    store = ledger.store
    codes = sorted(
        {p["code"] for p in portfolio_store.positions(store)}
        | {row.code for row in [*export.holdings, *export.deliveries]}
    )
    result: dict[str, Any] = {}
    try:
        with store.transaction():
            before = portfolio_store.snapshot(store, codes)
            booked = _Booked()
            if export.kind == "holdings":
                unlisted = _replace_positions(store, export.holdings, today)
            else:
                unlisted = []
                _record_fills(ledger, _new_rows(store, export, keep_duplicates, booked), booked)
            after = portfolio_store.snapshot(store, codes, booked.fill_ids)
            result = {"before": before, "after": after, "unlisted": unlisted, **booked.said()}
            if dry_run:
                raise _DryRun
            if export.kind == "holdings" or booked.fill_ids:  # nothing booked: nothing to undo
                portfolio_store.record_change(store, "import", "import", None, before, after)
    except _DryRun:
        pass
    return {"action": "import", "kind": export.kind, "dry_run": dry_run, **result}


@dataclass
class _Booked:
    """What a deliveries import booked and left out."""

    fill_ids: list[int] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # rows whose price was not checked
    already: list[Delivery] = field(default_factory=list)  # imported before
    repeated: list[Delivery] = field(default_factory=list)  # the same as an earlier row
    kept: list[Delivery] = field(default_factory=list)  # repeats booked as the user confirmed

    def said(self) -> dict[str, Any]:
        return {
            "booked": len(self.fill_ids),
            "unchecked": self.unchecked,
            "already": [row.line for row in self.already],
            "repeated": [(row.line, row.same_as) for row in self.repeated],
            "kept": [(row.line, row.same_as) for row in self.kept],
        }


def _new_rows(store, export: Export, keep_duplicates: bool, booked: _Booked) -> list[Delivery]:
    """The rows to book: not those imported before, nor a repeat of an earlier row unless the
    user confirmed repeats (`keep_duplicates`); those left out are noted in `booked`."""
    known = portfolio_store.imported_keys(store, [row.key for row in export.deliveries])
    rows = []
    for row in export.deliveries:
        if row.key in known:
            booked.already.append(row)
        elif row.same_as is not None and not keep_duplicates:
            booked.repeated.append(row)
        else:
            if row.same_as is not None:
                booked.kept.append(row)
            rows.append(row)
    return rows


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


def _record_fills(ledger: Ledger, deliveries: list[Delivery], booked: _Booked) -> None:
    """Book each row, keyed; a row priced outside its day's range refuses the import, a row
    on a day the market store has no bar for is booked and its note kept in `booked`."""
    names = stock_names()
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
            fill["import_key"] = row.key
            note = ledger.price_note(fill, force=True)
            if note:
                booked.unchecked.append(f"第 {row.line} 行：{note}")
            for field_name in ("value_cents", "commission_cents", "stamp_cents", "transfer_cents"):
                if getattr(row, field_name) is not None:  # the broker's own figure
                    fill[field_name] = getattr(row, field_name)
            booked.fill_ids.append(ledger.apply(fill, "import"))
        except UsageError as exc:
            raise UsageError(f"第 {row.line} 行（{row.date} {row.code}）：{exc.message}") from None


def all_imported_before(result: dict[str, Any], export: Export, file: str) -> str | None:
    """The one sentence for a deliveries export whose every fill was imported before."""
    rows = len(export.deliveries)
    if export.kind != "deliveries" or not rows or len(result["already"]) != rows:
        return None
    return f"{file} 里的 {rows} 笔成交都已导入过，这次没有记录任何成交。"


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
    lines += _repeats(result)
    lines += [f"  价格未核对：{row}" for row in result["unchecked"]]
    return lines


def _repeats(result: dict[str, Any]) -> list[str]:
    """The rows left out as imported before or as repeats, and repeats booked as confirmed."""
    lines = []
    if result.get("already"):
        rows = "、".join(str(line) for line in result["already"])
        lines.append(f"  已导入过，跳过：第 {rows} 行")
    lines += [
        f"  疑似重复，未导入：第 {line} 行与第 {first} 行完全相同"
        "（确是两笔成交，加 --keep-duplicates 再导入即记上）"
        for line, first in result.get("repeated", [])
    ]
    lines += [
        f"  重复行按 --keep-duplicates 导入：第 {line} 行与第 {first} 行完全相同"
        for line, first in result.get("kept", [])
    ]
    return lines


def _held(position: dict[str, Any] | None) -> str:
    if position is None:
        return "（无）"
    cost = position["cost_cents"] / position["shares"] / 100
    return f"{position['shares']} 股，成本 {cost:.3f}"
