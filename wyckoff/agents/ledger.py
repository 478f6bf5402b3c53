"""Fills on the portfolio: a buy or a sell changes the position, the cash and the fill log in
one transaction, with the fees of wyckoff/ledger/fees.py, T+1 and the exchange's lot sizes.

Cost is the average-cost basis in cents, buy fees included; a sell realizes its proceeds
(after fees and the dividend tax) minus the sold shares' share of that basis.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from wyckoff import portfolio_store
from wyckoff.agents.corporate_actions import apply_due, catch_up, lots_of
from wyckoff.agents.fill_price import check_fill_price
from wyckoff.agents.portfolio_rules import held_code, validate_date, validate_stock, with_basis
from wyckoff.errors import UsageError, WyckoffError
from wyckoff.ledger import lots
from wyckoff.ledger.days import day_text
from wyckoff.ledger.fees import BrokerFees, Fees, Side, fill_fees
from wyckoff.ledger.money import half_up, price_mills, price_text, trade_value_cents, yuan
from wyckoff.portfolio_store import Position

if TYPE_CHECKING:
    from wyckoff.config import WyckoffConfig
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.store import Store


def broker_fees(config: WyckoffConfig) -> BrokerFees:
    """The commission of the broker wyckoff.json names (the common default otherwise)."""
    from wyckoff.config import LedgerConfig

    chosen = (config.ledger or LedgerConfig()).fees()
    return BrokerFees(Decimal(str(chosen.commission_rate)), round(chosen.min_commission * 100))


def trade_day(text: str) -> str:
    """A fill's date (YYYYMMDD): a real, past weekday."""
    day = validate_date(text, "成交日期")
    if datetime.strptime(day, "%Y%m%d").weekday() >= 5:
        raise UsageError(f"成交日期 {text} 是周末，A 股不交易；请检查日期。")
    return day


def trade_time(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return datetime.strptime(text.strip(), "%H:%M").strftime("%H:%M")
    except ValueError:
        raise UsageError(f"成交时间 {text} 不是 HH:MM 格式（如 09:35）。") from None


class Ledger:
    """Buys and sells recorded against the portfolio tables."""

    def __init__(self, store: Store, broker: BrokerFees, market: MarketStore | None = None) -> None:
        self.store = store
        self.broker = broker
        self.market = market  # when given, ex-dates of the stock are applied before a fill

    def open_day(self, text: str) -> str:
        """A fill's date: a past weekday the market store's calendar (when it covers the day)
        has open, so a fill on 国庆 or 春节 is refused."""
        from wyckoff.engine.clock import is_trading_day

        day = trade_day(text)
        if not is_trading_day(datetime.strptime(day, "%Y%m%d").date(), self._open_days()):
            raise UsageError(f"成交日期 {text} 是休市日（交易日历），A 股不交易；请检查日期。")
        return day

    def fill_day(self, text: str | None) -> tuple[str, str | None]:
        """A fill's date (`open_day`), or when none is given the latest session that has
        started (at 06:00 or on a Saturday, the last day that traded); the sentence saying
        so when that is not today."""
        from wyckoff.engine.clock import is_trading_day, latest_session, market_now

        if text:
            return self.open_day(text), None
        open_days, today = self._open_days(), market_now().date()
        day = latest_session(None, open_days)
        if day == today:
            return f"{day:%Y%m%d}", None
        why = "还没有开盘" if is_trading_day(today, open_days) else "休市"
        return f"{day:%Y%m%d}", f"未给成交日期：今天{why}，按最近一个交易日 {day:%Y-%m-%d} 记"

    def _open_days(self) -> set[date] | None:
        """The market store's open days (None without a store: every weekday)."""
        if self.market is None:
            return None
        return set(self.market.trading_dates().astype(object))

    def price_note(self, fill: dict[str, Any], force: bool) -> str | None:
        """Refuse a price the stock did not trade at that day (see fill_price.py); the note
        of a forced fill on a day without a bar."""
        return check_fill_price(
            self.market, fill["code"], fill["name"], fill["price_mills"], fill["trade_date"], force
        )

    def caught_up(self, code: str, day: str) -> None:
        """The stock's ex-dates up to the fill's day applied first (later ones come later)."""
        if self.market is not None:
            catch_up(self.store, self.market, [code], until=day)

    def record(
        self,
        side: Side,
        stock: str,
        shares: int,
        price: str | float,
        day: str | None,
        at: str | None = None,
        actor: str = "cli",
        force: bool = False,
    ) -> dict[str, Any]:
        """Record a buy or a sell of `stock` (a sell finds it among the holdings) on `day`
        (else the latest session, `fill_day`); `force` records it on a day the market store
        has no bar for (its price unchecked)."""
        code, name = self._named(side, stock)
        day, dated = self.fill_day(day)
        fill = self.priced(code, name, side, shares, price_mills(price), day)
        note = _notes(dated, self.price_note(fill, force))
        fill["trade_time"] = trade_time(at)
        return {**self._recorded(actor, fill), "note": note}

    def refusal(
        self,
        side: Side,
        stock: str,
        shares: int,
        price: str | float,
        day: str | None,
        force: bool = False,
    ) -> str | None:
        """Why `record` would refuse this fill (one sentence), else None: the whole record
        is tried, the stock's due ex-dates first, and rolled back."""
        try:
            fill = self.quote(side, stock, shares, price, day, force)
            with self.store.rolled_back():
                if self.market is not None:
                    apply_due(self.store, self.market, [fill["code"]], fill["trade_date"])
                self.apply(fill, "check")
        except WyckoffError as exc:
            return exc.message
        return None

    def quote(
        self,
        side: Side,
        stock: str,
        shares: int,
        price: str | float,
        day: str | None,
        force: bool = False,
    ) -> dict[str, Any]:
        """The fill a buy or sell would record, priced with its fees, and the notes of a date
        chosen for it or a price left unchecked (`note`); nothing is written."""
        code, name = self._named(side, stock)
        day, dated = self.fill_day(day)
        fill = self.priced(code, name, side, shares, price_mills(price), day)
        fill["note"] = _notes(dated, self.price_note(fill, force))
        held = portfolio_store.position(self.store, code)
        if side == "buy":
            lots.check_buy(code, shares)
        elif held:
            lots.check_sell(code, shares, held["shares"])
            fill["dividend_tax_cents"] = self._dividend_tax(held, shares, fill["trade_date"])
        return fill

    def _named(self, side: Side, stock: str) -> tuple[str, str]:
        """The code and name `stock` means: any listed stock to buy, a held one to sell."""
        if side == "buy":
            return validate_stock(stock, None)
        code = held_code(portfolio_store.positions(self.store), stock)
        held = portfolio_store.position(self.store, code)
        return code, held["name"] if held else code

    def priced(
        self, code: str, name: str, side: Side, shares: int, mills: int, day: str
    ) -> dict[str, Any]:
        """A fill at `mills` a share on `day`, with the fees of the configured broker."""
        value = trade_value_cents(shares, mills)
        fees = fill_fees(side, value, datetime.strptime(day, "%Y%m%d").date(), self.broker)
        return {
            "code": code,
            "name": name,
            "side": side,
            "shares": shares,
            "price_mills": mills,
            "trade_date": day,
            "trade_time": None,
            "value_cents": value,
            "commission_cents": fees.commission,
            "stamp_cents": fees.stamp_duty,
            "transfer_cents": fees.transfer_fee,
            "dividend_tax_cents": 0,
            "realized_cents": None,
        }

    def apply(self, fill: dict[str, Any], actor: str) -> int:
        """Check and write one fill inside the caller's transaction: position, cash and the
        fill row (its id); UsageError, with nothing written, when it cannot be made."""
        self._in_order(fill)
        if fill["side"] == "buy":
            self._apply_buy(fill)
        else:
            self._apply_sell(fill)
        return portfolio_store.add_fill(self.store, {**fill, "source": actor})

    def _apply_buy(self, fill: dict[str, Any]) -> None:
        lots.check_buy(fill["code"], fill["shares"])
        cost = fill["value_cents"] + _charges(fill)
        cash = portfolio_store.cash_cents(self.store)
        if cost > cash:
            raise UsageError(_short_of_cash(fill, cost, cash))
        held = portfolio_store.position(self.store, fill["code"])
        portfolio_store.write_position(self.store, _bought(held, fill, cost))
        portfolio_store.write_cash_cents(self.store, cash - cost)

    def _apply_sell(self, fill: dict[str, Any]) -> None:
        held = portfolio_store.position(self.store, fill["code"])
        if held is None:
            raise UsageError(f"持仓里没有 {fill['code']}，不能卖出。")
        shares = fill["shares"]
        _check_t_plus_1(self.store, held, shares, fill["trade_date"])
        lots.check_sell(fill["code"], shares, held["shares"])
        fill["dividend_tax_cents"] = self._dividend_tax(held, shares, fill["trade_date"])
        proceeds = fill["value_cents"] - _charges(fill)
        sold_basis = _sold_basis(held, shares)
        fill["realized_cents"] = proceeds - sold_basis
        if shares == held["shares"]:
            portfolio_store.delete_position(self.store, fill["code"])
        else:
            left = with_basis(held, held["shares"] - shares, held["cost_cents"] - sold_basis)
            portfolio_store.write_position(self.store, left)
        cash = portfolio_store.cash_cents(self.store)
        portfolio_store.write_cash_cents(self.store, cash + proceeds)

    def _dividend_tax(self, held: Position, shares: int, day: str) -> int:
        """The tax on the dividends the sold shares (oldest first) received while held."""
        return lots_of(self.store, held).sell(datetime.strptime(day, "%Y%m%d").date(), shares)

    def _in_order(self, fill: dict[str, Any]) -> None:
        """Fills of a stock are recorded in time order, so cost and T+1 follow the trades."""
        last = portfolio_store.last_event_date(self.store, fill["code"])
        if last and last > fill["trade_date"]:
            raise UsageError(
                f"{fill['code']} 已记录了 {day_text(last)} 的成交或除权，"
                f"不能再记更早的 {day_text(fill['trade_date'])}；"
                "请按时间顺序记录（可先 `wyckoff portfolio undo` 撤销较晚的成交）。"
            )

    def _recorded(self, actor: str, fill: dict[str, Any]) -> dict[str, Any]:
        """One fill as one change of the history."""
        code = fill["code"]
        self.caught_up(code, fill["trade_date"])
        with self.store.transaction():
            before = portfolio_store.snapshot(self.store, [code])
            fill_id = self.apply(fill, actor)
            after = portfolio_store.snapshot(self.store, [code], [fill_id])
            portfolio_store.record_change(
                self.store, actor, fill["side"], code, before, {**after, "fill": fill}
            )
        return {"action": fill["side"], "fill": fill, "before": before, "after": after}


def _notes(*notes: str | None) -> str | None:
    """The notes a fill's sentence ends with, as one (None when there are none)."""
    return "。".join(note for note in notes if note) or None


def _fees(fill: dict[str, Any]) -> Fees:
    return Fees(fill["commission_cents"], fill["stamp_cents"], fill["transfer_cents"])


def _charges(fill: dict[str, Any]) -> int:
    """What a fill costs beyond its value: the fees and, on a sell, the dividend tax."""
    return _fees(fill).total + fill["dividend_tax_cents"]


def _bought(held: Position | None, fill: dict[str, Any], cost: int) -> Position:
    if held is None:
        opened = Position(
            code=fill["code"],
            name=fill["name"],
            shares=0,
            cost_price=0.0,
            buy_dt=fill["trade_date"],
            stop_loss=None,
            cost_cents=0,
            booked_dt=None,
        )
        return with_basis(opened, fill["shares"], cost)
    return with_basis(held, held["shares"] + fill["shares"], held["cost_cents"] + cost)


def _sold_basis(held: Position, shares: int) -> int:
    """The part of the basis that leaves with `shares` (all of it when the position closes)."""
    if shares == held["shares"]:
        return held["cost_cents"]
    return half_up(Decimal(held["cost_cents"] * shares) / held["shares"])


def _check_t_plus_1(store: Store, held: Position, shares: int, day: str) -> None:
    bought_today = portfolio_store.shares_bought_on(store, held["code"], day)
    sellable = held["shares"] - bought_today
    if bought_today and shares > sellable and shares <= held["shares"]:
        raise UsageError(
            f"T+1：{held['code']} {held['name']} 在 {day_text(day)} 买入的 {bought_today} 股当天不能卖出，"
            f"当天最多可卖 {sellable} 股。"
        )


def _short_of_cash(fill: dict[str, Any], cost: int, cash: int) -> str:
    return (
        f"现金不足：买入 {fill['code']} 需 {yuan(cost)} 元（含费用），现金只有 {yuan(cash)} 元；"
        "先用 `wyckoff portfolio cash 金额` 设置现金。"
    )


def describe_quote(fill: dict[str, Any], cash: float) -> str:
    """A fill about to be recorded, as the approval dialog shows it: the fees and the cash
    (or, for a buy the cash cannot pay, why the tool will refuse it)."""
    verb, sign = ("买入", -1) if fill["side"] == "buy" else ("卖出", 1)
    net = fill["value_cents"] - sign * _charges(fill)
    cash_cents = round(cash * 100)
    head = (
        f"{verb} {fill['code']} {fill['name']} {fill['shares']} 股 @ "
        f"{price_text(fill['price_mills'])}（{day_text(fill['trade_date'])}）：成交金额 {yuan(fill['value_cents'])}，"
        f"{_fee_text(fill)}；{'共付' if sign < 0 else '共收'} {yuan(net)} 元，"
    )
    if sign < 0 and net > cash_cents:
        return head + _short_of_cash(fill, net, cash_cents)
    unchecked = f"。{fill['note']}" if fill.get("note") else ""
    return head + f"现金 {yuan(cash_cents)} → {yuan(cash_cents + sign * net)}{unchecked}"


def _fee_text(fill: dict[str, Any]) -> str:
    """'佣金 5.00，过户费 0.10（费用合计 5.10）': the fees a fill paid, zero ones left out."""
    fees = [
        ("佣金", fill["commission_cents"]),
        ("印花税", fill["stamp_cents"]),
        ("过户费", fill["transfer_cents"]),
        ("红利税", fill["dividend_tax_cents"]),
    ]
    shown = "，".join(f"{label} {yuan(c)}" for label, c in fees if c or label == "佣金")
    return f"{shown}（费用合计 {yuan(sum(c for _, c in fees))}）"


def describe_fill(change: dict[str, Any]) -> str:
    """What a recorded fill did, with each fee: the line the CLI and the tool show."""
    fill, before, after = change["fill"], change["before"], change["after"]
    verb = "买入" if fill["side"] == "buy" else "卖出"
    line = (
        f"已{verb}：{fill['code']} {fill['name']} {fill['shares']} 股 @ "
        f"{price_text(fill['price_mills'])}（{day_text(fill['trade_date'])}），成交金额 {yuan(fill['value_cents'])}；"
        + _fee_text(fill)
        + f"；现金 {yuan(before['cash_cents'])} → {yuan(after['cash_cents'])}"
    )
    if fill["realized_cents"] is not None:
        line += f"；已实现盈亏 {yuan(fill['realized_cents'])}"
    if change.get("note"):  # a forced fill on a day without a bar
        line += f"。{change['note']}"
    return line
