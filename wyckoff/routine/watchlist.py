"""The watchlist: stocks the user follows (named through the one stock resolver), with tags
and a note; every change is logged and `undo` walks back through the log. The agent reads it
with `watchlist` and changes it with `update_watchlist`, which needs the user's approval."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from wyckoff import watchlist_store
from wyckoff.agents.portfolio import validate_stock
from wyckoff.agents.stock_args import StockText
from wyckoff.agents.stock_lookup import StockNotResolved, resolve_stock
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.errors import UsageError, WyckoffError
from wyckoff.watchlist_store import Watched

if TYPE_CHECKING:
    from wyckoff.store import Store

MAX_TAGS = 10
MAX_TAG_CHARS = 20
MAX_NOTE_CHARS = 200


class WatchlistError(UsageError):
    """A change that cannot be made; nothing was changed."""


class Watchlist:
    def __init__(self, store: Store) -> None:
        self.store = store

    def items(self, tag: str | None = None) -> list[Watched]:
        return watchlist_store.watched(self.store, tag)

    def add(
        self,
        stock: str,
        tags: tuple[str, ...] | list[str] = (),
        note: str | None = None,
        actor: str = "cli",
    ) -> dict[str, Any]:
        """Watch a stock, or add tags / replace the note of one already watched."""
        code, name = validate_stock(stock, None)
        tags = clean_tags(tags)
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise WatchlistError(f"备注最长 {MAX_NOTE_CHARS} 个字，收到 {len(note)} 个字。")
        with self.store.transaction():
            before = watchlist_store.one(self.store, code)
            after = Watched(
                code=code,
                name=name,
                tags=list(dict.fromkeys([*(before["tags"] if before else []), *tags])),
                note=note if note is not None else (before["note"] if before else ""),
            )
            if len(after["tags"]) > MAX_TAGS:
                raise WatchlistError(f"一只股票最多 {MAX_TAGS} 个标签。")
            watchlist_store.write(self.store, after)
            watchlist_store.record_change(self.store, actor, "add", code, before, after)
        return {"action": "add", "before": before, "after": after}

    def remove(self, stock: str, actor: str = "cli") -> dict[str, Any]:
        code = self.watched_code(stock)
        with self.store.transaction():
            before = watchlist_store.one(self.store, code)
            watchlist_store.delete(self.store, code)
            watchlist_store.record_change(self.store, actor, "remove", code, before, None)
        return {"action": "remove", "before": before, "after": None}

    def undo(self, actor: str = "cli") -> dict[str, Any]:
        with self.store.transaction():
            last = watchlist_store.last_undoable(self.store)
            if last is None:
                raise WatchlistError("没有可撤销的自选股改动。")
            if last["before"] is None:
                watchlist_store.delete(self.store, last["code"])
            else:
                watchlist_store.write(self.store, last["before"])
            watchlist_store.mark_undone(self.store, last["id"])
            watchlist_store.record_change(
                self.store, actor, "undo", last["code"], last["after"], last["before"]
            )
        return {"action": "undo", "before": last["after"], "after": last["before"]}

    def watched_code(self, stock: str) -> str:
        """The code of the watched stock `stock` names, by the one resolver's rules."""
        import pandas as pd  # type: ignore[import-untyped]

        watched = pd.DataFrame(self.items(), columns=["code", "name"])
        try:
            return resolve_stock(watched, stock)
        except StockNotResolved as failure:
            listed = "".join(f"\n  {line}" for line in failure.candidates)
            if not listed:
                raise WatchlistError(
                    f"自选股里没有 {stock}。用 `wyckoff watch list` 查看自选股。"
                ) from None
            raise WatchlistError(
                f"自选股里没有唯一对应 {stock} 的股票，请用代码指定其中一只：{listed}"
            ) from None


def clean_tags(tags: list[str] | tuple[str, ...]) -> list[str]:
    cleaned = [t.strip() for t in tags if t.strip()]
    for tag in cleaned:
        if len(tag) > MAX_TAG_CHARS:
            raise WatchlistError(f"标签最长 {MAX_TAG_CHARS} 个字：{tag[:MAX_TAG_CHARS]}…")
    return cleaned


def describe_change(change: dict[str, Any]) -> str:
    """What a change did, in one sentence."""
    before, after = change["before"], change["after"]
    item = after or before
    stock = f"{item['code']} {item['name']}"
    if change["action"] == "undo":
        return f"已撤销：{stock} " + ("恢复为自选" if after else "已移出自选")
    if change["action"] == "remove":
        return f"已移出自选：{stock}"
    tags = f"，标签 {'、'.join(after['tags'])}" if after["tags"] else ""
    note = f"，备注：{after['note']}" if after["note"] else ""
    verb = "已更新自选" if before else "已加入自选"
    return f"{verb}：{stock}{tags}{note}"


# --- tools --------------------------------------------------------------------------------------


class WatchlistParams(BaseModel):
    tag: str | None = Field(default=None, description="只看带这个标签的自选股")


def watchlist_tool(params: WatchlistParams, context: ToolContext) -> dict[str, Any]:
    return {"watchlist": Watchlist(context.store).items(params.tag)}


def summarize_watchlist(result: dict[str, Any]) -> str:
    items = result["watchlist"]
    if not items:
        return "自选股为空"
    shown = "、".join(f"{w['name']}（{w['code']}）" for w in items[:5])
    return f"{len(items)} 只自选股：{shown}" + ("…" if len(items) > 5 else "")


class UpdateWatchlistParams(BaseModel):
    action: Literal["add", "remove"]
    code: StockText = Field(description="6 位代码或股票名称")
    tags: list[str] = Field(default_factory=list, description="标签（add 时追加）")
    note: str | None = Field(default=None, description="备注（add 时替换原备注）")


def update_watchlist(params: UpdateWatchlistParams, context: ToolContext) -> dict[str, Any]:
    book = Watchlist(context.store)
    try:
        if params.action == "add":
            return book.add(params.code, params.tags, params.note, actor="agent")
        return book.remove(params.code, actor="agent")
    except (WatchlistError, StockNotResolved) as exc:
        raise ToolFailure(exc.message) from None


def describe_update(params: UpdateWatchlistParams, context: ToolContext) -> str:
    """The change as one Chinese sentence, for the approval dialog."""
    try:
        if params.action == "add":
            code, name = validate_stock(params.code, None)
        else:
            code = Watchlist(context.store).watched_code(params.code)
            name = (watchlist_store.one(context.store, code) or {"name": code})["name"]
    except WyckoffError:
        verb = "加入" if params.action == "add" else "移出"
        return f"{verb}自选股：{params.code}（没有找到这只股票，工具会拒绝）"
    if params.action == "remove":
        return f"把 {code} {name} 移出自选股"
    extra = "".join(
        [
            f"，标签 {'、'.join(params.tags)}" if params.tags else "",
            f"，备注：{params.note}" if params.note else "",
        ]
    )
    return f"把 {code} {name} 加入自选股{extra}"


def summarize_update(result: dict[str, Any]) -> str:
    return describe_change(result)


WATCHLIST_TOOLS = (
    ToolSpec(
        name="watchlist",
        description="查看用户的自选股（代码、名称、标签、备注），可按标签筛选。",
        params=WatchlistParams,
        func=watchlist_tool,
        title="查看自选股",
        concurrency_safe=True,
        summarize=summarize_watchlist,
        timeout_s=30,
        mcp_tier=3,
    ),
    ToolSpec(
        name="update_watchlist",
        description="把股票加入（add，可带标签、备注）或移出（remove）用户的自选股。需要用户批准；只在用户明确要求时使用。",
        params=UpdateWatchlistParams,
        func=update_watchlist,
        title="修改自选股",
        requires_approval=True,
        summarize=summarize_update,
        timeout_s=30,
        mcp_tier=3,
        describe=describe_update,
    ),
)
