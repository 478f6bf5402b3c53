"""The scorecard's writing side: advice recorded as it is given (by the screen, the strategy
decision, the tail check, the alerts, the agent's `record_advice` tool and `wyckoff scorecard
add`), and its outcomes filled in as the days arrive, measured as engine/forward_returns.py
measures every signal (docs/scorecard.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from wyckoff import scorecard_store
from wyckoff.agents.market_data import PANEL_DAYS, MarketData
from wyckoff.agents.stock_args import StockText
from wyckoff.cli.tools import ToolContext, ToolSpec
from wyckoff.errors import UsageError, WyckoffError
from wyckoff.scorecard_store import NewItem

if TYPE_CHECKING:
    from wyckoff.engine.panel import Panel
    from wyckoff.store import Store

KINDS = ("screen", "decision", "tail", "alert", "agent", "manual")
ADVICE = ("buy", "sell", "avoid")
KIND_LABELS = {
    "screen": "筛选候选",
    "decision": "策略决策",
    "tail": "尾盘判断",
    "alert": "卖出提醒",
    "agent": "智能体建议",
    "manual": "我的判断",
}
ADVICE_LABELS = {"buy": "买入", "sell": "卖出", "avoid": "回避"}


def record(store: Store | None, items: list[NewItem]) -> int:
    """Record advice as it is given (one insert batch); how many items were new. Without a
    state db (a brief's screen, a replay) nothing is recorded."""
    if store is None or not items:
        return 0
    return scorecard_store.record(store, items)


def record_latest(
    store: Store,
    market: MarketData,
    kind: str,
    stock: str,
    advice: str,
    note: str = "",
    stop: float | None = None,
) -> dict[str, Any]:
    """One piece of advice on `stock` as of the market's latest stored day (the agent's tool
    and `scorecard add`): the item as recorded and whether it was new."""
    panel = market.panel()
    code = market.resolve_code(stock)
    if not panel.has(code):
        raise UsageError(
            f"本地行情中没有 {code}，无法记录建议：请先同步行情（wyckoff data sync）。"
        )
    name = panel.stock_value(code, "name")
    price = _traded_close(panel, code)
    item = NewItem(kind, code, name, panel.as_of, advice, market.source, price, stop, note)
    new = record(store, [item])
    return {"recorded": bool(new), **dataclasses.asdict(item)}


def _traded_close(panel: Panel, code: str) -> float | None:
    """The stock's last close as traded (a suspended stock's last)."""
    from wyckoff.engine.panel import last_close, traded_ratio

    t, j = len(panel.dates) - 1, panel.column(code)
    traded = last_close(panel, t, j) * traded_ratio(panel, t, j)
    return None if traded != traded else round(traded, 2)


def fill_outcomes(home: Path, store: Store) -> int:
    """Compute every entry and outcome whose days have come, on the market each item was
    given on; how many rows were written."""
    from wyckoff.engine.forward_returns import HORIZONS

    pending = scorecard_store.unfinished(store, HORIZONS)
    written = 0
    for source in sorted({item["source"] for item in pending}):
        panel = _final_panel(home, source)
        if panel is None:
            continue
        known = scorecard_store.outcomes(store)
        entries, found = [], []
        for item in (i for i in pending if i["source"] == source):
            entry, outcomes = _results(panel, item, known.get(item["id"], {}))
            entries += [entry] if entry else []
            found += outcomes
        scorecard_store.save_results(store, entries, found)
        written += len(entries) + len(found)
    return written


def _final_panel(home: Path, source: str) -> Panel | None:
    """The market's latest panel without a day still trading (its bar is not final); None
    when there is none, or another process (a sync) holds the store: the outcomes wait for
    the next look, which must not wait for the sync."""
    from wyckoff.agents.market_data import partial_bar_note
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.engine.panel_cache import cached_panel

    market = MarketStore.for_source(home, source)
    if not market.path.exists():
        return None
    market.lock_wait_s = 0.5
    try:
        panel = cached_panel(market.path, source, PANEL_DAYS, lambda: market.load_panel(PANEL_DAYS))
    except (LookupError, WyckoffError):  # an empty store; a busy one
        return None
    if partial_bar_note(panel.as_of):
        panel = panel.upto(len(panel.dates) - 2)
    return panel


def _results(
    panel: Panel, item: dict[str, Any], known: dict[int, dict[str, Any]]
) -> tuple[scorecard_store.NewEntry | None, list[scorecard_store.NewOutcome]]:
    """The item's entry (when not stored yet) and its outcomes not stored yet."""
    from wyckoff.engine import forward_returns as fr

    t_entry = fr.day_after(panel, item["as_of"])
    if t_entry is None or t_entry == 0 or not panel.has(item["code"]):
        return None, []  # its next day has not come (or is before this panel's window)
    t, j = t_entry - 1, panel.column(item["code"])
    side: Literal["buy", "sell"] = "sell" if item["advice"] == "sell" else "buy"
    opened = fr.entry_at_open(panel, t_entry, j, side)
    entry = None
    if item["entry_date"] is None:
        day = str(panel.dates[t_entry])
        entry = scorecard_store.NewEntry(item["id"], day, opened.traded_price, opened.unfillable)
    if opened.unfillable:
        return entry, []
    found = []
    for h in fr.HORIZONS:
        stock = fr.forward_return(panel, t, j, h)
        if h in known or stock is None:
            continue
        extra: dict[str, Any] = {}
        if h == fr.EXCURSION_DAYS:
            mfe, mae = fr.excursions(panel, t, j) or (None, None)
            hit = None if item["stop"] is None else fr.stop_hit(panel, t, j, item["stop"])
            extra = {"mfe": mfe, "mae": mae, "stop_hit": hit}
        found.append(
            scorecard_store.NewOutcome(
                item["id"],
                h,
                str(panel.dates[t + h]),
                stock,
                fr.market_return(panel, t, h),
                fr.index_return(panel, t, h),
                **extra,
            )
        )
    return entry, found


class RecordAdviceParams(BaseModel):
    code: StockText = Field(description="股票代码或名称")
    advice: Literal["buy", "sell", "avoid"] = Field(description="buy 买入 / sell 卖出 / avoid 回避")
    reason: str = Field(default="", max_length=500, description="一句话理由")
    stop: float | None = Field(default=None, gt=0, description="止损价（买入建议时给出）")


def record_advice(params: RecordAdviceParams, context: ToolContext) -> dict[str, Any]:
    market = MarketData.from_context(context)
    if context.store is None:
        return {"recorded": False, "note": "没有状态数据库，未记录。"}
    item = record_latest(
        context.store, market, "agent", params.code, params.advice, params.reason, params.stop
    )
    as_of = item.pop("as_of")
    return market.envelope(as_of, **item)


def summarize_record(result: dict[str, Any]) -> str:
    if "code" not in result:
        return str(result.get("note", ""))
    state = "已记入计分卡" if result["recorded"] else "计分卡已有这条"
    return f"{state}：{result['code']} {result['name']} {ADVICE_LABELS[result['advice']]}（{result['as_of']}）"


RECORD_ADVICE_TOOL = ToolSpec(
    name="record_advice",
    description=(
        "把你给用户的一条买入/卖出/回避建议记入计分卡（以本地行情最新交易日为准，之后按"
        "次日开盘价计算 1/5/20 日结果）。每当你在回答中建议买入、卖出或回避某只股票时，"
        "都必须调用本工具，一只股票一次；只是描述、没有建议时不要调用。"
    ),
    params=RecordAdviceParams,
    func=record_advice,
    title="记录建议",
    summarize=summarize_record,
)
