"""The user's portfolio in the local SQLite db: positions, free cash, an append-only history.

Every change is one transaction and is validated first (code and name against the stock
list, positive lots of 100, real dates), so a failed or refused update leaves everything
as it was. `undo` reverts the newest change and records that too.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, model_validator
from pydantic_core import PydanticCustomError

from wyckoff import portfolio_store
from wyckoff.agents import results
from wyckoff.agents.ledger import Ledger, broker_fees, describe_fill, describe_quote
from wyckoff.agents.ledger_report import open_market
from wyckoff.agents.market_data import MarketData
from wyckoff.agents.portfolio_rules import (
    PortfolioError,
    held_code,
    stock_names,
    validate_amount,
    validate_basis,
    validate_date,
    validate_price,
    validate_shares,
    validate_stock,
)
from wyckoff.agents.stock_args import StockText
from wyckoff.agents.stock_lookup import StockNotResolved
from wyckoff.cli.output import local_today
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.errors import UsageError
from wyckoff.ledger.days import day_text
from wyckoff.portfolio_store import Change, Position, basis_cents

if TYPE_CHECKING:
    from wyckoff.store import Store


class Portfolio:
    """The portfolio rules (validation, weighted-average cost, undo) over the portfolio tables."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def positions(self) -> list[Position]:
        return portfolio_store.positions(self.store)

    def cash(self) -> float:
        return portfolio_store.cash(self.store)

    def history(self, limit: int = 50) -> list[Change]:
        return portfolio_store.changes(self.store, limit)

    # --- changes ------------------------------------------------------------------------------

    def add(
        self,
        code: str,
        name: str | None,
        shares: int,
        cost_price: float,
        buy_dt: str,
        stop_loss: float | None = None,
        actor: str = "cli",
    ) -> dict[str, Any]:
        """Add a position, or add shares to one already held (weighted-average cost): the
        shares as the user holds them today, so no ex-date up to today is applied to them."""
        code, name = validate_stock(code, name)
        validate_shares(shares)
        validate_price(cost_price, "成本价")
        if stop_loss is not None:
            validate_price(stop_loss, "止损价")
        buy_dt = validate_date(buy_dt)
        with self.store.transaction():
            before = portfolio_store.position(self.store, code)
            if before:
                total = before["shares"] + shares
                validate_shares(total)
                validate_basis(shares, cost_price)
                cost = (before["shares"] * before["cost_price"] + shares * cost_price) / total
                after: Position = {
                    **before,
                    "shares": total,
                    "cost_price": round(cost, 4),
                    "stop_loss": stop_loss or before["stop_loss"],
                    "cost_cents": before["cost_cents"] + basis_cents(shares, cost_price),
                    "booked_dt": _today(),
                }
            else:
                validate_basis(shares, cost_price)
                after = {
                    "code": code,
                    "name": name,
                    "shares": shares,
                    "cost_price": cost_price,
                    "buy_dt": buy_dt,
                    "stop_loss": stop_loss,
                    "cost_cents": basis_cents(shares, cost_price),
                    "booked_dt": _today(),
                }
            self._write(actor, "add", before, after)
        added = {"shares": shares, "cost_price": cost_price}
        return {"action": "add", "before": before, "after": after, "added": added}

    def update(
        self,
        code: str,
        shares: int | None = None,
        cost_price: float | None = None,
        stop_loss: float | None = None,
        buy_dt: str | None = None,
        actor: str = "cli",
    ) -> dict[str, Any]:
        code = held_code(self.positions(), code)
        with self.store.transaction():
            before = portfolio_store.position(self.store, code)
            if before is None:
                raise PortfolioError(f"持仓里没有 {code}，无法修改。")
            after = Position(**before)
            if shares is not None:
                validate_shares(shares)
                after["shares"] = shares
            if cost_price is not None:
                validate_price(cost_price, "成本价")
                after["cost_price"] = cost_price
            if stop_loss is not None:
                validate_price(stop_loss, "止损价")
                after["stop_loss"] = stop_loss
            if buy_dt is not None:
                after["buy_dt"] = validate_date(buy_dt)
            if shares is not None or cost_price is not None:  # as the user holds them today
                validate_basis(after["shares"], after["cost_price"])
                after["cost_cents"] = basis_cents(after["shares"], after["cost_price"])
                after["booked_dt"] = _today()
            self._write(actor, "update", before, after)
        return {"action": "update", "before": before, "after": after}

    def remove(self, code: str, actor: str = "cli") -> dict[str, Any]:
        code = held_code(self.positions(), code)
        with self.store.transaction():
            before = portfolio_store.position(self.store, code)
            if before is None:
                raise PortfolioError(f"持仓里没有 {code}。用 `wyckoff portfolio list` 查看持仓。")
            portfolio_store.delete_position(self.store, code)
            portfolio_store.record_change(self.store, actor, "remove", code, before, None)
        return {"action": "remove", "before": before, "after": None}

    def set_cash(self, amount: float, actor: str = "cli", day: str | None = None) -> dict[str, Any]:
        """Set the free cash; the difference is money moved in or out on `day` (else today,
        or the opening balance while no fill is recorded), so the daily NAV does not count a
        deposit as a gain."""
        validate_amount(amount, "现金")
        if amount < 0:
            raise PortfolioError(
                f"现金不能为负数（收到 {amount:g}）：请给出账户里的可用现金，如 `wyckoff portfolio cash 100000`。"
            )
        if day:
            day = validate_date(day, "资金变动日期")
        with self.store.transaction():
            if not day and portfolio_store.fills(self.store):
                day = _today()
            before = self.cash()
            moved = round(amount * 100) - portfolio_store.cash_cents(self.store)
            portfolio_store.write_cash(self.store, amount)
            recorded: dict[str, Any] = {"cash": amount}  # and the flow, for undo
            if moved:
                recorded["flow_id"] = portfolio_store.add_cash_flow(self.store, day, moved)
            portfolio_store.record_change(
                self.store, actor, "set_cash", None, {"cash": before}, recorded
            )
        return {"action": "set_cash", "before": {"cash": before}, "after": {"cash": amount}}

    def undo(self, actor: str = "cli") -> dict[str, Any]:
        """Revert the newest change not yet undone (repeated undos walk back through history)."""
        with self.store.transaction():
            last = portfolio_store.last_undoable(self.store)
            if last is None:
                raise PortfolioError("没有可撤销的持仓改动。")
            before, after = last["before"], last["after"]
            if before is not None and "cash_cents" in before:  # a ledger change
                portfolio_store.restore(self.store, before, after)
            elif last["code"] is None:  # a cash change, and the money it moved
                portfolio_store.write_cash(self.store, before["cash"])
                if after.get("flow_id"):
                    portfolio_store.delete_cash_flow(self.store, after["flow_id"])
            elif before is None:
                portfolio_store.delete_position(self.store, last["code"])
            else:
                portfolio_store.write_position(self.store, before)
            portfolio_store.mark_undone(self.store, last["id"])
            portfolio_store.record_change(self.store, actor, "undo", last["code"], after, before)
        return {
            "action": "undo",
            "reverted": last["action"],
            "code": last["code"],
            "restored": before,
        }

    def _write(self, actor: str, action: str, before: Position | None, after: Position) -> None:
        portfolio_store.write_position(self.store, after)
        portfolio_store.record_change(self.store, actor, action, after["code"], before, after)


def _today() -> str:
    return local_today().strftime("%Y%m%d")


ACTION_LABELS = {
    "add": "添加",
    "update": "修改",
    "remove": "删除",
    "set_cash": "设置现金",
    "undo": "撤销",
    "buy": "买入",
    "sell": "卖出",
    "import": "导入",
    "corporate_action": "分红送转",
}
ACTOR_LABELS = {
    "cli": "命令行",
    "agent": "智能体",
    "web": "网页",
    "import": "导入",
    "market": "行情（除权除息）",
}


def describe_state(state: dict[str, Any] | None) -> str:
    """One readable phrase for a history entry's before/after."""
    if state is None:
        return "（无）"
    if "cash" in state:
        return f"现金 {state['cash']:,.2f}"
    if "cash_cents" in state:  # a ledger change: its fill, the positions it touched, the cash
        held = [describe_state(p) for p in state["positions"]] or [
            "不持有 " + "、".join(state["codes"])
        ]
        return "；".join([*_fill_of(state), *held, f"现金 {state['cash_cents'] / 100:,.2f}"])
    stop = f"，止损 {price_text(state['stop_loss'])}" if state.get("stop_loss") else ""
    return (
        f"{state['code']} {state['name']} {state['shares']} 股 @ {price_text(state['cost_price'])}"
        + stop
    )


def _fill_of(state: dict[str, Any]) -> list[str]:
    """The fill a ledger change recorded, with its date, as the history shows it."""
    from wyckoff.ledger.money import price_text as mills_text

    fill = state.get("fill")
    if fill is None:
        return []
    verb = ACTION_LABELS[fill["side"]]
    return [
        f"{verb} {fill['shares']} 股 @ {mills_text(fill['price_mills'])}"
        f"（{day_text(fill['trade_date'])}）"
    ]


def describe_change(change: dict[str, Any]) -> str:
    """What a change did, in one sentence: what was added and the new total for an add."""
    before, after = change.get("before"), change.get("after")
    if change["action"] == "undo":
        reverted = ACTION_LABELS.get(change["reverted"], change["reverted"])
        return f"已撤销最近一次{reverted}，恢复为：{describe_state(change['restored'])}"
    if change["action"] == "add" and before:
        lot = change["added"]
        return (
            f"已加仓：{after['code']} {after['name']} {lot['shares']} 股 @ {price_text(lot['cost_price'])}；"
            f"现持有 {after['shares']} 股，平均成本 {price_text(after['cost_price'])}"
        )
    if change["action"] == "set_cash":
        return f"已设置现金：{before['cash']:,.2f} → {after['cash']:,.2f}"
    if change["action"] == "update":
        return f"已修改：{describe_state(before)} → {describe_state(after)}"
    return f"已{ACTION_LABELS[change['action']]}：{describe_state(after or before)}"


def price_text(price: float) -> str:
    """A price with 2 decimals, or 3 when the third one matters (1533.333)."""
    return f"{price:.3f}" if round(price, 2) != round(price, 3) else f"{price:.2f}"


# --- tools --------------------------------------------------------------------------------------


class PortfolioParams(BaseModel):
    mode: Literal["view", "diagnose"] = Field(
        default="view", description="view 查看持仓；diagnose 对每只持仓做健康诊断"
    )


def portfolio_tool(params: PortfolioParams, context: ToolContext) -> dict[str, Any]:
    book = Portfolio(context.store)
    positions = book.positions()
    cash = book.cash()
    if not positions:
        return {
            "positions": [],
            "cash": cash,
            "note": "持仓为空。用户可以用 `wyckoff portfolio add` 添加持仓。",
        }
    if params.mode == "view":
        return {"positions": positions, "cash": cash}
    from wyckoff.agents.corporate_actions import positions_in_traded_prices
    from wyckoff.engine.health import diagnose

    market = MarketData.from_context(context)
    panel = market.panel()
    rows, value = [], cash
    for position in positions_in_traded_prices(book.store, market.store, panel.as_of):
        if not panel.has(position["code"]):
            rows.append(
                {**position, "health": "unknown", "reasons": ["本地行情库没有这只股票的数据"]}
            )
            continue
        result = diagnose(
            panel, position["code"], cost=position["cost_price"], own_stop=position["stop_loss"]
        )
        value += position["shares"] * result["close"]
        rows.append(
            {
                **position,
                "close": result["close"],
                "pnl_pct": result["pnl_pct"],
                "health": result["health"],
                "health_label": result["health_label"],
                "reasons": result["reasons"],
                "stop_level": result["stop"]["stop"],
                "stop_kind": result["stop"]["kind"],
                "stop_label": result["stop"]["label"],
                "exit_status": result["exit"],
                "phase": result["phase"],
            }
        )
    return market.envelope(panel.as_of, positions=rows, cash=cash, equity=round(value, 2))


def summarize_positions(result: dict[str, Any]) -> str:
    positions = result["positions"]
    if not positions:
        return f"持仓为空，现金 {result['cash']:,.2f}"
    line = f"{len(positions)} 只持仓，现金 {result['cash']:,.2f}"
    labels = [p["health_label"].split(" ")[-1] for p in positions if p.get("health_label")]
    if labels:
        counts = {label: labels.count(label) for label in dict.fromkeys(labels)}
        line += "；" + "、".join(f"{label} {n}" for label, n in counts.items())
    return line


def summarize_change(result: dict[str, Any]) -> str:
    """What a portfolio change did, in the user's words: '已加仓 600519 贵州茅台 100 股，现持 300 股 @ 1533.33'."""
    before, after = result["before"], result["after"]
    if result["action"] in ("buy", "sell"):
        return describe_fill(result)
    if result["action"] == "set_cash":
        return f"现金 {before['cash']:,.2f} → {after['cash']:,.2f}"
    stock = f"{(after or before)['code']} {(after or before)['name']}"
    if result["action"] == "remove":
        return f"已删除 {stock}（原 {before['shares']} 股）"
    holding = f"现持 {after['shares']} 股 @ {after['cost_price']:.2f}"
    if after.get("stop_loss"):
        holding += f"，止损 {after['stop_loss']:.2f}"
    if result["action"] == "add" and before:
        return f"已加仓 {stock} {after['shares'] - before['shares']} 股，{holding}"
    verb = "已添加" if result["action"] == "add" else "已修改"
    return f"{verb} {stock}，{holding}"


class UpdatePortfolioParams(BaseModel):
    action: Literal["add", "update", "remove", "set_cash", "buy", "sell"] = Field(
        description="add/update/remove/set_cash 直接改持仓；buy/sell 记录一笔成交（扣费用、改现金）"
    )
    code: StockText | None = Field(
        default=None, description="6 位代码或股票名称（set_cash 不需要）"
    )
    name: str | None = Field(default=None, description="股票名称，需与代码一致")
    shares: int | None = Field(
        default=None,
        description="股数：add/update 是持有的股数（零股也可以）；buy/sell 按一手 100 股（科创板至少 200 股）",
    )
    cost_price: float | None = None
    buy_dt: str | None = Field(default=None, description="买入日期 YYYYMMDD")
    stop_loss: float | None = None
    cash: float | None = Field(default=None, description="set_cash 的现金金额")
    price: float | None = Field(default=None, description="buy/sell 的成交价")
    trade_date: str | None = Field(
        default=None, description="buy/sell 的成交日期 YYYYMMDD，默认最近一个已开盘的交易日"
    )
    trade_time: str | None = Field(default=None, description="buy/sell 的成交时间 HH:MM")
    force: bool = Field(
        default=False,
        description="buy/sell：行情库没有成交日的日线（停牌或未同步）时仍记录，价格不核对",
    )

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        """A misnamed argument (`cost` for cost_price) is an error the model can fix, not a
        silently empty value the user would be asked to approve."""
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise ValueError(
                    f"没有参数 {', '.join(unknown)}；可用：{', '.join(cls.model_fields)}"
                )
        return data

    @model_validator(mode="after")
    def _complete(self) -> UpdatePortfolioParams:
        needed = {
            "set_cash": ("cash",),
            "add": ("code", "shares", "cost_price"),
            "buy": ("code", "shares", "price"),
            "sell": ("code", "shares", "price"),
        }
        missing = [f for f in needed.get(self.action, ("code",)) if getattr(self, f) in (None, "")]
        if missing:  # `missing` in ctx: the web form names them as its labels read
            raise PydanticCustomError(
                "value_error",
                "{action} 需要 {fields}",
                {"action": self.action, "fields": "、".join(missing), "missing": missing},
            )
        return self


def update_portfolio(params: UpdatePortfolioParams, context: ToolContext) -> dict[str, Any]:
    try:
        return apply_update(params, context, actor="agent")
    except UsageError as exc:
        raise ToolFailure(exc.message) from None


def apply_update(params: UpdatePortfolioParams, context: ToolContext, actor: str) -> dict[str, Any]:
    """Make the change `params` describes (the agent's tool and the web page's execute)."""
    if params.action in ("buy", "sell"):
        return _fill(params, context, actor)
    book = Portfolio(context.store)
    if params.action == "set_cash":
        return book.set_cash(params.cash, actor=actor)
    if params.action == "add":
        return book.add(
            params.code,
            params.name,
            params.shares,
            params.cost_price,
            params.buy_dt or _today(),
            params.stop_loss,
            actor=actor,
        )
    if params.action == "update":
        return book.update(
            params.code,
            params.shares,
            params.cost_price,
            params.stop_loss,
            params.buy_dt,
            actor=actor,
        )
    return book.remove(params.code, actor=actor)


def _ledger(context: ToolContext) -> Ledger:
    """The ledger with the configured broker's fees and the market store (when built)."""
    config = context.read_config()
    market, _ = open_market(context.home, config, build=False)
    return Ledger(context.store, broker_fees(config), market)


def _fill(params: UpdatePortfolioParams, context: ToolContext, actor: str) -> dict[str, Any]:
    return _ledger(context).record(
        params.action,
        params.code,
        params.shares,
        params.price,
        params.trade_date,
        params.trade_time,
        actor,
        force=params.force,
    )


def describe_update(params: UpdatePortfolioParams, context: ToolContext) -> str:
    """The change as one Chinese sentence, from the arguments and the current book:
    what an approval or ask_user dialog shows before the user consents."""
    book = Portfolio(context.store) if context.store is not None else None
    if params.action in ("buy", "sell") and context.store is not None:
        return _describe_fill(params, context)
    if params.action == "set_cash":
        before = f"从 {book.cash():,.2f} 元" if book else ""
        return f"把现金{before}改为 {params.cash:,.2f} 元"
    code = _named_code(params, book)
    label = f"{code} {stock_names().get(code, '（A 股代码表中没有这个代码）')}"
    held = _held(book, code)
    if params.action == "remove":
        return (
            f"删除持仓 {label}（{held['shares']} 股）"
            if held
            else f"删除持仓 {label}（当前未持有）"
        )
    if params.action == "add":
        return f"买入记录：{label} {params.shares} 股，成本 {params.cost_price} 元" + "".join(
            [
                f"，买入日 {params.buy_dt}" if params.buy_dt else "",
                f"，止损 {params.stop_loss} 元" if params.stop_loss else "",
                f"（已持有 {held['shares']} 股，将合并）" if held else "",
            ]
        )
    changes = [
        f"{what} {(held or {}).get(field) or '无'} → {value}"
        for what, field, value in (
            ("股数", "shares", params.shares),
            ("成本价", "cost_price", params.cost_price),
            ("止损价", "stop_loss", params.stop_loss),
            ("买入日", "buy_dt", params.buy_dt),
        )
        if value is not None
    ]
    return f"修改持仓 {label}：{'，'.join(changes) or '没有改动'}"


def refuse_update(params: UpdatePortfolioParams, context: ToolContext) -> str | None:
    """Why a buy or sell cannot be recorded as it stands (short of cash, T+1, a price the
    stock did not trade at, ...): told to the model at once, so the user is never asked to
    approve a call that would fail."""
    if params.action not in ("buy", "sell") or context.store is None:
        return None
    return _ledger(context).refusal(
        params.action, params.code, params.shares, params.price, params.trade_date, params.force
    )


def _describe_fill(params: UpdatePortfolioParams, context: ToolContext) -> str:
    """The fill with its fees and the cash before and after, priced as the tool will price it."""
    ledger = _ledger(context)
    verb = "买入" if params.action == "buy" else "卖出"
    try:
        fill = ledger.quote(
            params.action, params.code, params.shares, params.price, params.trade_date, params.force
        )
    except UsageError as exc:  # the tool will refuse the same way
        day = _typed_day(params.trade_date) if params.trade_date else "最近一个交易日"
        return f"{verb} {params.code} {params.shares} 股 @ {params.price}（{day}）：{exc.message}"
    return describe_quote(fill, Portfolio(context.store).cash())


def _typed_day(text: str) -> str:
    """A date as typed, shown YYYY-MM-DD when it is YYYYMMDD (else as it was typed)."""
    return day_text(text) if re.fullmatch(r"\d{8}", text.strip()) else text


def _named_code(params: UpdatePortfolioParams, book: Portfolio | None) -> str:
    """The code the tool will act on, found as the tool finds it; the text itself when it
    names none (the tool then refuses with the reason)."""
    try:
        if params.action == "add":
            return validate_stock(params.code, params.name)[0]
        if book is not None:
            return held_code(book.positions(), params.code)
    except (PortfolioError, StockNotResolved):
        pass
    return params.code.strip().split(".")[0]


def _held(book: Portfolio | None, code: str) -> dict[str, Any] | None:
    if book is None:
        return None
    return next((p for p in book.positions() if p["code"] == code), None)


PORTFOLIO_TOOLS = (
    ToolSpec(
        name="portfolio",
        description="查看用户持仓（view），或对每只持仓做健康诊断（diagnose：健康度、理由、止损位、离场状态）。",
        params=PortfolioParams,
        func=portfolio_tool,
        title="查看持仓",
        concurrency_safe=True,
        summarize=summarize_positions,
        timeout_s=120,
        output=results.PortfolioResult,
        mcp_tier=3,
    ),
    ToolSpec(
        name="update_portfolio",
        description="修改用户持仓（add/update/remove/set_cash），或记录一笔成交（buy/sell：按券商费率扣费、T+1、改现金）。需要用户批准；只在用户明确要求时使用。",
        params=UpdatePortfolioParams,
        func=update_portfolio,
        title="修改持仓",
        requires_approval=True,
        summarize=summarize_change,
        timeout_s=30,
        output=results.PortfolioChange,
        mcp_tier=3,
        describe=describe_update,
        refusal=refuse_update,
    ),
)
