"""The data behind the reading room's pages: the same tool functions the direct commands
(`wyckoff market`, `analyze`, `screen`, `portfolio`, `memory`) call, over one ToolContext
whose open market stays loaded between requests. No model is needed for any of it.

A portfolio change is two steps, as in the design: `plan()` returns the change as one
sentence and a plan id; only `execute(plan_id)` writes it."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wyckoff.agents.portfolio import PortfolioError
from wyckoff.cli.tools import ToolContext, ToolFailure
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.store import Store

SCREEN_ROWS = 20
RANGE_DAYS = 60  # the trading range the Spring trigger tests a break of: 60 closes to t-2
CHANGE_FORM_LABELS = {  # the portfolio page's change form (app.js `changeForm`)
    "action": "操作",
    "code": "代码或名称",
    "shares": "股数",
    "price": "成交价",
    "trade_date": "成交日期",
    "cost_price": "成本价",
    "stop_loss": "止损价",
    "cash": "现金",
}


@dataclass
class ScreenJob:
    """The background screen the page started: where it is, and how it ended."""

    status: str = "idle"  # idle | running | done | error
    stage: str = ""
    detail: str = ""
    fraction: float = 0.0
    error: str = ""
    started: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "stage": self.stage,
            "detail": self.detail,
            "fraction": self.fraction,
            "error": self.error,
            "elapsed_s": round(time.monotonic() - self.started, 1) if self.started else 0,
        }


@dataclass
class Plan:
    """A change shown to the user before it is made: `run()` makes it and says what it did."""

    sentence: str
    run: Callable[[], str]


@dataclass
class Desk:
    home: Path
    context: ToolContext = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    screen_job: ScreenJob = field(default_factory=ScreenJob)
    plans: dict[str, Plan] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.context = _tool_context(self.home)

    def warm(self) -> None:
        """Load the market once, so the first stock page is as fast as the next."""
        from wyckoff.agents.market_data import MarketData

        try:
            with self.lock:
                MarketData.from_context(self.context).panel()
        except Exception:  # no data yet: each page says so with its own sentence
            pass

    # --- market, stock -------------------------------------------------------------------

    def market(self) -> dict[str, Any]:
        from wyckoff.agents.overview import NoParams, get_market_overview

        with self.lock:
            return get_market_overview(NoParams(), self.context)

    def index_trend(self, code: str, days: int = 120) -> dict[str, Any]:
        """One main index's closes and its trend summary (return, drawdown, volume)."""
        from wyckoff.agents.overview import HistoryParams, get_market_history

        with self.lock:
            return get_market_history(HistoryParams(index=code, days=days), self.context)

    def stock(self, code: str, days: int = 160) -> dict[str, Any]:
        """The K-line, its Wyckoff markers (signal days, trading range, stop) and the
        diagnosis, from the loaded panel."""
        from wyckoff.agents.stocks import AnalyzeParams, analyze_stock, kline_data

        with self.lock:
            chart = kline_data(self.context, code, days=max(days, RANGE_DAYS + 2))
            diagnosis = analyze_stock(AnalyzeParams(code=chart["code"]), self.context)
        closes = [bar["close"] for bar in chart["bars"]]
        chart["range"] = {
            "low": min(closes[-RANGE_DAYS - 2 : -2]),
            "high": max(closes[-RANGE_DAYS - 2 : -2]),
            "start": chart["bars"][-RANGE_DAYS - 2]["date"],
            "end": chart["bars"][-3]["date"],
        }
        chart["bars"] = chart["bars"][-days:]
        chart["ma50"], chart["ma200"] = chart["ma50"][-days:], chart["ma200"][-days:]
        return {"chart": chart, "diagnosis": diagnosis}

    def intraday(self, text: str) -> dict[str, Any]:
        """The stock's minute path with VWAP and the confirmed support (what `/chart CODE
        --intraday` draws) and its latest recorded tail verdict; without minutes, the reason
        in `note` instead of the path."""
        from wyckoff import tail_store
        from wyckoff.agents.intraday import intraday_chart_data
        from wyckoff.agents.market_data import MarketData
        from wyckoff.errors import WyckoffError

        with self.lock:
            code = MarketData.from_context(self.context).resolve_code(text)
            try:
                path, note = intraday_chart_data(self.context, code), ""
            except WyckoffError as exc:
                path, note = None, exc.message
        tail = tail_store.checks(self.context.store, code, 1)
        return {"code": code, "intraday": path, "note": note, "tail": tail[0] if tail else None}

    # --- screen --------------------------------------------------------------------------

    def latest_screen(self) -> dict[str, Any]:
        """The newest stored screen (as saved by any `screen`), and the page's own job."""
        from wyckoff import history_store

        rows = history_store.recommendations(self.context.store, None, SCREEN_ROWS * 2)
        newest = [r for r in rows if rows and _same_screen(r, rows[0])]
        newest.sort(key=lambda r: r["id"])  # saved in the screen's own order
        return {"rows": newest, "job": self.screen_job.as_dict()}

    def start_screen(self) -> dict[str, Any]:
        if self.screen_job.status == "running":
            raise UsageError("已有一次筛选在后台运行：等它完成后再开始新的。")
        self.screen_job = ScreenJob(status="running", stage="准备", started=time.monotonic())
        threading.Thread(target=self._run_screen, args=(self.screen_job,), daemon=True).start()
        return self.screen_job.as_dict()

    def _run_screen(self, job: ScreenJob) -> None:
        from wyckoff.agents.screening import ScreenParams, screen_stocks

        def progress(update: dict[str, Any]) -> None:
            job.stage, job.detail = update["stage"], update.get("detail") or ""
            job.fraction = update.get("fraction") or job.fraction

        context = _tool_context(self.home)  # its own market load: the pages stay responsive
        context.on_progress = progress
        try:
            screen_stocks(ScreenParams(), context)
            job.status, job.fraction = "done", 1.0
        except Exception as exc:
            job.status, job.error = "error", _sentence(exc)

    # --- portfolio -----------------------------------------------------------------------

    def portfolio(self) -> dict[str, Any]:
        from wyckoff.agents.portfolio import (
            ACTION_LABELS,
            ACTOR_LABELS,
            Portfolio,
            PortfolioParams,
            describe_state,
            portfolio_tool,
        )
        from wyckoff.cli.output import local_time

        with self.lock:
            holdings = portfolio_tool(PortfolioParams(mode="diagnose"), self.context)
        history = [
            {
                "id": change["id"],
                "at": local_time(change["ts"]),
                "actor": ACTOR_LABELS.get(change["actor"], change["actor"]),
                "action": ACTION_LABELS.get(change["action"], change["action"]),
                "before": describe_state(change["before"]),
                "after": describe_state(change["after"]),
                "undone": bool(change["undone"]),
            }
            for change in Portfolio(self.context.store).history(30)
        ]
        return {**holdings, "history": history, **self._ledger()}

    def _ledger(self) -> dict[str, Any]:
        """P&L per position and in total (`portfolio show --json`) and the daily NAV beside
        the CSI 300 (`portfolio nav --json`), after the held stocks' ex-dates are applied;
        the paper account's book and NAV (`paper show/nav --json`) when there is one."""
        from wyckoff.agents.corporate_actions import catch_up
        from wyckoff.agents.ledger_nav import daily_nav
        from wyckoff.agents.ledger_report import open_market, profit_and_loss

        market, missing = open_market(self.home, self.context.read_config())
        store = self.context.store
        nav: dict[str, Any] = {"days": [], "note": missing}
        with self.lock:
            if market is not None:
                catch_up(store, market)
                nav = daily_nav(store, market)
            pnl = profit_and_loss(store, market)
            paper = _paper(store, market)
        return {"pnl": {**pnl, "note": missing}, "nav": nav, "paper": paper}

    def plan(self, form: dict[str, Any]) -> dict[str, Any]:
        """The portfolio change the form asks for, as a sentence to confirm; nothing is
        written until `execute`."""
        from pydantic import ValidationError

        from wyckoff.agents.portfolio import UpdatePortfolioParams, describe_update
        from wyckoff.cli.usage_errors import form_problem

        if form.get("action") == "undo":
            return self.propose(Plan(_undo_sentence(self.context), self._undo))
        fields = {k: v for k, v in form.items() if v not in (None, "")}
        try:
            params = UpdatePortfolioParams(**fields)
        except ValidationError as exc:
            problem = form_problem(exc, CHANGE_FORM_LABELS)
            raise UsageError(f"{problem}。请改好后再生成计划。") from None
        return self.propose(
            Plan(describe_update(params, self.context), lambda: self._update(params))
        )

    def propose(self, plan: Plan) -> dict[str, Any]:
        """Keep `plan` for an explicit execute; one plan at a time, so an older one cannot
        be executed."""
        plan_id = secrets.token_urlsafe(8)
        self.plans = {plan_id: plan}
        return {"plan_id": plan_id, "sentence": plan.sentence}

    def execute(self, plan_id: str) -> dict[str, Any]:
        plan = self.plans.pop(plan_id, None)
        if plan is None:
            raise UsageError("这个计划已执行或已过期：请重新生成计划。")
        try:
            return {"sentence": plan.run()}
        except PortfolioError as exc:
            raise UsageError(exc.message) from None

    def _update(self, params: Any) -> str:
        from wyckoff.agents.ledger import describe_fill
        from wyckoff.agents.portfolio import apply_update, describe_change

        change = apply_update(params, self.context, actor="web")
        fill = change["action"] in ("buy", "sell")  # a fill's line has each fee, as in the CLI
        return describe_fill(change) if fill else describe_change(change)

    def _undo(self) -> str:
        from wyckoff.agents.portfolio import Portfolio, describe_change

        return describe_change(Portfolio(self.context.store).undo(actor="web"))

    # --- memory and briefs ---------------------------------------------------------------

    def memories(self) -> list[dict[str, Any]]:
        from wyckoff.memory.store import MemoryStore

        return [m.as_dict() for m in MemoryStore(self.context.store).list_memories()]

    def add_memory(self, content: str, memory_type: str) -> dict[str, Any]:
        """`memory add`: the user's own words, deduplicated; a configured key is masked."""
        from wyckoff.config import remember_configured_secrets
        from wyckoff.memory.extraction import remember
        from wyckoff.memory.store import MemoryStore

        remember_configured_secrets(self.home)
        outcome = remember(
            MemoryStore(self.context.store), content, memory_type or "preference", source_ref="web"
        )
        if outcome.status == "skipped":
            raise UsageError(outcome.sentence())
        return {"sentence": outcome.sentence()}

    def delete_memory(self, memory_id: int) -> dict[str, Any]:
        from wyckoff.memory.store import MemoryStore

        memories = MemoryStore(self.context.store)
        memories.require(memory_id)
        memories.delete(memory_id)
        return {"sentence": f"已删除记忆 {memory_id}。"}

    def briefs(self) -> list[dict[str, Any]]:
        """The routine's Markdown briefs in $WYCKOFF_HOME/briefs/ (YYYY-MM-DD.md), newest
        first, as HTML."""
        from wyckoff.web.markdown_html import markdown_html

        folder = self.home / "briefs"
        if not folder.is_dir():
            return []
        files = sorted(folder.glob("*.md"), key=lambda p: p.name, reverse=True)[:30]
        return [
            {
                "name": p.stem,
                "html": markdown_html(p.read_text(errors="replace")),
                "html_file": f"/briefs/{p.stem}.html" if p.with_suffix(".html").is_file() else None,
            }
            for p in files
        ]


def _same_screen(row: Any, newest: Any) -> bool:
    """Whether a stored row came from the newest screen: one screen's rows are written in one
    transaction (milliseconds apart), two screens are seconds apart at least."""
    from datetime import datetime

    gap = datetime.fromisoformat(newest["created_at"]) - datetime.fromisoformat(row["created_at"])
    return row["source"] == newest["source"] and gap.total_seconds() < 2


def _tool_context(home: Path) -> ToolContext:
    from wyckoff.cli.builtin_tools import default_registry
    from wyckoff.store import Store

    return ToolContext(home=home, registry=default_registry(), store=Store.in_home(home))


def _undo_sentence(context: ToolContext) -> str:
    from wyckoff import portfolio_store
    from wyckoff.agents.portfolio import ACTION_LABELS, describe_state

    last = portfolio_store.last_undoable(context.store)
    if last is None:
        raise UsageError("没有可撤销的持仓改动。")
    action = ACTION_LABELS.get(last["action"], last["action"])
    return (
        f"撤销最近一次{action}：{describe_state(last['after'])}，"
        f"恢复为 {describe_state(last['before'])}"
    )


def _sentence(exc: Exception) -> str:
    from wyckoff.errors import WyckoffError

    if isinstance(exc, WyckoffError | ToolFailure):
        return exc.message
    return f"内部错误（{type(exc).__name__}）：请重试，或在终端运行 wyckoff screen 查看详情。"


def _paper(store: Store, market: MarketStore | None) -> dict[str, Any] | None:
    """The paper account's book and NAV beside the real account and the CSI 300, as
    `paper show --json` and `paper nav --json` give them (with the demo note); None without
    a paper account or a market."""
    from wyckoff import paper_store
    from wyckoff.agents.market_data import DEMO_NOTE
    from wyckoff.agents.paper_views import account_market, paper_book, paper_nav

    account = paper_store.account(store)
    own = None if account is None or market is None else account_market(store, market)
    if account is None or own is None:
        return None
    demo = {"data_note": DEMO_NOTE} if account["source"] == "demo" else {}
    nav = paper_nav(store, own, with_real=own is market)  # never two markets in one chart
    return {"book": paper_book(store, own), "nav": nav, **demo}
