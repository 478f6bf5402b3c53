"""The after-close brief: the day's coded facts in one dict (regime, holdings, screen
candidates, alerts, the day's tail-session verdicts, the ledger's account, data caveats),
built from the same tool functions the agent and the direct commands use, and kept under
$WYCKOFF_HOME/briefs/ by trading date.

Read functions for other front ends: `saved_dates(home)` and `load_brief(home, date)`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wyckoff.cli.tools import ToolContext
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from wyckoff.cli.providers.base import LLMProvider
    from wyckoff.engine.panel import Panel

CANDIDATES_SHOWN = 5
CHART_DAYS = 40
FORMATS = ("md", "html", "json")
TAIL_CHECKS_SHOWN = 30
SCORES_SHOWN = 20  # results of earlier advice that came in on the brief's day
TAIL_FIELDS = ("checked_at", "code", "name", "role", "verdict", "price", "reasons")


def build_brief(
    context: ToolContext, check_alerts: bool = True, day: str | None = None
) -> dict[str, Any]:
    """The brief of the latest trading day in the open market, with that day's alerts: the
    alert rules are checked first (once per rule, stock and date, so checking again records
    nothing new) unless `check_alerts` is off. Nothing else is written but the scorecard's
    outcomes whose days have come (the screen runs without saving its candidates). `day` (YYYY-MM-DD): refused, before
    anything is recorded, unless it is that latest trading day."""
    from wyckoff.agents.market_data import MarketData
    from wyckoff.agents.overview import NoParams, get_market_overview
    from wyckoff.agents.portfolio import PortfolioParams, portfolio_tool
    from wyckoff.agents.screening import ScreenParams, screen_stocks
    from wyckoff.routine.alerts import check, history
    from wyckoff.routine.brief_account import account, paper

    market = MarketData.from_context(context)
    if day is not None and market.panel().as_of != day:
        raise _not_saved(context.home, day)  # only the latest day can be built
    if check_alerts and context.store is not None:
        check(context)
    book = portfolio_tool(PortfolioParams(mode="diagnose"), context)
    overview = get_market_overview(NoParams(), context)
    context.progress("收盘简报", "全市场筛选", 0.3)
    quiet = dataclasses.replace(context, store=None, on_progress=None)  # it saves nothing here
    screen = screen_stocks(ScreenParams(), quiet)
    panel = market.panel()
    holdings = [_holding(row, panel) for row in book["positions"]]
    triggered = [c for c in screen["top_candidates"] if c["triggers"]][:CANDIDATES_SHOWN]
    brief = {
        "date": overview["as_of"],
        "source": overview["source"],
        "regime": overview["regime"],
        "holdings": holdings,
        "cash": book["cash"],
        "equity": book.get("equity", book["cash"]),
        "candidates": [_candidate(c, panel) for c in triggered],
        "signal_records": _records(screen, triggered),
        "alerts": by_importance(history(context.store, overview["as_of"], limit=None)),
        "tail_checks": _tail_checks(context, overview["as_of"]),
        "scorecard": _scorecard(context, overview["as_of"], overview["source"] == "demo"),
        "account": account(context.store, market.store) if context.store is not None else None,
        "paper": paper(context.store, market.store) if context.store is not None else None,
        "data_caveats": screen.get("data_caveats") or [],
    }
    if overview.get("data_note"):
        brief["data_note"] = overview["data_note"]
    return brief


def _tail_checks(context: ToolContext, day: str) -> list[dict[str, Any]]:
    """The day's tail-session verdicts (`wyckoff tail`), one per stock, in the order checked."""
    if context.store is None:
        return []
    from wyckoff import tail_store

    checks = reversed(tail_store.checks(context.store, limit=TAIL_CHECKS_SHOWN, day=day))
    return [{k: v for k, v in c.items() if k in TAIL_FIELDS} for c in checks]


def _scorecard(context: ToolContext, day: str, demo: bool) -> dict[str, Any] | None:
    """The scorecard's summary per kind on the market in use (the demo market's is never
    mixed with the real ones') and the results that came in on `day`."""
    if context.store is None:
        return None
    from wyckoff.agents.scorecard import ADVICE_LABELS, KIND_LABELS
    from wyckoff.agents.scorecard_report import percent, refreshed_scorecard, summary_line
    from wyckoff.cli.numbers import pct

    card = refreshed_scorecard(context.home, context.store)
    summary = card["demo_summary" if demo else "summary"]
    arrived = [
        f"{i['code']} {i['name'] or ''} {KIND_LABELS[i['kind']]}{ADVICE_LABELS[i['advice']]}"
        f"（{i['as_of']}）{h} 日超额 {pct(percent(o['score']), signed=True)}"
        for i in reversed(card["items"])
        if i["demo"] == demo
        for h, o in i["outcomes"].items()
        if o["exit_date"] == day and o["score"] is not None
    ]
    return {
        "demo": demo,
        "lines": [f"{KIND_LABELS[kind]}：{summary_line(s)}" for kind, s in summary.items()],
        "arrived": arrived[:SCORES_SHOWN],
    }


def by_importance(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Structure alerts (a stop, an exit) before price ones, so a market-wide rule's many
    hits never push a holding's stop out of sight."""
    from wyckoff.engine.alerts import KINDS

    return sorted(alerts, key=lambda a: KINDS.index(a["kind"]) if a["kind"] in KINDS else 99)


def _holding(row: dict[str, Any], panel: Panel) -> dict[str, Any]:
    holding = dict(row)
    stop, close = row.get("stop_level"), row.get("close")
    holding["stop_distance_pct"] = round((close / stop - 1) * 100, 2) if stop and close else None
    holding["chart"] = chart_bars(panel, row["code"]) if panel.has(row["code"]) else []
    return holding


def _records(screen: dict[str, Any], shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of `screen`'s picks and of the signals the shown candidates carry."""
    labels = {label for c in shown for label in c["triggers"]}
    return [screen["record"], *[r for r in screen["signal_records"] if r["label"] in labels]]


def _candidate(row: dict[str, Any], panel: Panel) -> dict[str, Any]:
    keep = ("code", "name", "industry", "close", "channels", "triggers", "score")
    return {**{k: row[k] for k in keep}, "chart": chart_bars(panel, row["code"])}


def chart_bars(panel: Panel, code: str) -> list[list[float]]:
    """The last CHART_DAYS bars as [open, high, low, close] for the small K-line picture."""
    frame = panel.stock_frame(code, CHART_DAYS).dropna(subset=["close"])
    columns = ("open", "high", "low", "close")
    return [[round(float(row[c]), 2) for c in columns] for _, row in frame.iterrows()]


# --- files --------------------------------------------------------------------------------------


def briefs_dir(home: Path) -> Path:
    return home / "briefs"


def save_brief(home: Path, brief: dict[str, Any]) -> dict[str, Path]:
    """Write the brief in every format, each file replaced atomically; the same day's brief
    built again replaces the same files (one brief per trading date)."""
    from wyckoff.config import write_private_file
    from wyckoff.routine.brief_render import render

    folder = briefs_dir(home)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths = {fmt: folder / f"{brief['date']}.{fmt}" for fmt in FORMATS}
    for fmt, path in paths.items():
        write_private_file(path, render(brief, fmt))
    return paths


def saved_dates(home: Path) -> list[str]:
    """Trading dates with a saved brief, newest first."""
    folder = briefs_dir(home)
    if not folder.is_dir():
        return []
    return sorted((p.stem for p in folder.glob("*.json")), reverse=True)


def load_brief(home: Path, date: str) -> dict[str, Any]:
    """The saved brief of `date` (YYYY-MM-DD or YYYYMMDD)."""
    day = normalize_date(date)
    path = briefs_dir(home) / f"{day}.json"
    if not path.is_file():
        raise _not_saved(home, day)
    brief: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return brief


def _not_saved(home: Path, day: str) -> UsageError:
    listed = "、".join(saved_dates(home)[:5]) or "还没有"
    return UsageError(
        f"{day} 没有保存的简报（已保存：{listed}）。不带 --date 运行 `wyckoff brief` 生成最新交易日的简报。"
    )


def normalize_date(text: str) -> str:
    from datetime import datetime

    cleaned = text.strip().replace("-", "")
    try:
        return datetime.strptime(cleaned, "%Y%m%d").strftime("%Y-%m-%d")
    except ValueError:
        raise UsageError(f"日期 {text} 无效，请用 YYYY-MM-DD，例如 2026-12-03。") from None


# --- AI commentary ------------------------------------------------------------------------------

COMMENTARY_PROMPT = (
    "你是 A 股威科夫分析助手。下面是今天收盘后由程序计算出的简报（事实与数字都是计算结果）。"
    "请用不超过 300 字的中文给出点评：最需要注意的持仓风险、候选股里值得关注的、明天的操作纪律。"
    "不要改写或编造数字，不要给出确定性的收益承诺。"
)
COMMENTARY_MAX_CHARS = 2000


def ai_commentary(brief: dict[str, Any], provider: LLMProvider) -> str:
    """The model's short commentary on the brief's facts (kept apart from them)."""
    from wyckoff.agents.reports import system_prompt
    from wyckoff.routine.brief_render import to_markdown

    facts = to_markdown({**brief, "ai_commentary": None})
    reply = provider.chat(
        [{"role": "user", "content": facts}],
        [],
        system_prompt(COMMENTARY_PROMPT, brief["source"]),
    )
    return str(reply["text"]).strip()[:COMMENTARY_MAX_CHARS]
