"""Intraday tools over minute bars: the tail-session check (`tail_check`, and `wyckoff tail`),
its record with the next day's outcome (`query_tail_buy`), `intraday_analysis` and
`intraday_rescue_check`.

Minute bars come on demand for the stocks in question only (engine/minute_bars.py) and the
verdicts from engine/tail.py; this module gathers what they need: the checked minute, the
candidates (holdings, watchlist, pending signals, named codes), the daily context from the panel (the
confirmed support: the lowest low of the SUPPORT_DAYS trading days before today; the stop;
the day's limit prices; the regime of the last close) and the user's playbook from memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from pydantic import BaseModel, Field, field_validator

from wyckoff import portfolio_store, tail_store, watchlist_store
from wyckoff.agents.market_data import MarketData
from wyckoff.agents.signal_record import records_for
from wyckoff.agents.stocks import StockText
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.engine.clock import CLOSE, TAIL_START, clock_time, market_now, trading_phase
from wyckoff.errors import NothingToDo, WyckoffError

SUPPORT_DAYS = 20
RECENT_DAYS = 5
MAX_CODES = 30
PLAYBOOK_WORDS = ("尾盘", "14:", "vwap", "均价", "二次确认")


class NotTailTime(ToolFailure):
    """Asked for the tail check outside the tail session (exit code 2 on the command line)."""

    exit_code = 2


# --- the checked minute and the candidates ---------------------------------------------------


def checked_minute(
    now: datetime, open_days: frozenset[date], at: str | None, force: bool
) -> datetime:
    """The minute (naive Beijing time) the tail check looks at: now, or `at` today. Refused
    before 14:30 and on a closed day unless forced; forced without `at`, the latest minute
    with trading (before today's open: the latest trading day's close)."""
    trading_day = trading_phase(now, open_days).trading_day
    if not trading_day and not force:
        raise NotTailTime(
            f"今天（{now:%Y-%m-%d}）休市，没有尾盘可查：用 --force 看最近一个交易日收盘时的分时。"
        )
    if force and not at:
        return latest_minute(now, open_days)
    if not trading_day:
        raise NotTailTime(f"今天（{now:%Y-%m-%d}）休市：--at 只能回看今天的时刻。")
    moment = now.replace(tzinfo=None, second=0, microsecond=0)
    if at:
        moment = datetime.combine(now.date(), _hhmm(at))
        if moment > now.replace(tzinfo=None):
            raise NotTailTime(f"--at {at} 还没到（现在 {now:%H:%M}）：只能回看今天已经过去的时刻。")
    moment = min(moment, datetime.combine(now.date(), CLOSE))
    if moment.time() < TAIL_START and not force:
        raise NotTailTime(
            f"{moment:%H:%M} 是{trading_phase(moment, open_days).label}，不是尾盘时段（14:30 起）："
            "到 14:30 后再查，或用 --at 14:45 回看、--force 按现在的分时检查。"
        )
    return moment


def latest_minute(now: datetime, open_days: frozenset[date]) -> datetime:
    """The last minute with trading to look at: now during a session (up to 15:00), else the
    close of the latest trading day before today."""
    if trading_phase(now, open_days).trading_day and now.time() >= time(9, 31):
        return min(
            now.replace(tzinfo=None, second=0, microsecond=0), datetime.combine(now.date(), CLOSE)
        )
    earlier = [d for d in open_days if d < now.date()]
    if not earlier:
        raise ToolFailure("行情库里没有交易日历：先运行 `wyckoff data sync`。")
    return datetime.combine(max(earlier), CLOSE)


def _hhmm(text: str) -> time:
    try:
        return clock_time(text)
    except ValueError as problem:
        raise NotTailTime(f"--at {text} 不是时刻：{problem}。") from None


def candidates(context: ToolContext, market: MarketData, codes: list[str]) -> list[tuple[str, str]]:
    """(code, role) to check: the named codes, else holdings, the watchlist and pending
    signals (a code in several keeps its first role)."""
    if codes:
        return [(code, "指定") for code in dict.fromkeys(market.resolve_code(c) for c in codes)]
    found: dict[str, str] = {}
    if context.store is not None:
        from wyckoff import history_store

        for held in portfolio_store.positions(context.store):
            found[held["code"]] = "持仓"
        for watched in watchlist_store.watched(context.store):
            found.setdefault(watched["code"], "自选")
        for signal in history_store.signals(context.store, None, 50):
            if signal["status"] == "pending":
                found.setdefault(signal["code"], "信号")
    return list(found.items())[:MAX_CODES]


def playbooks(context: ToolContext) -> list[str]:
    """The user's remembered tail-session rules (playbook memories that talk about it), not
    ones that came from tool output."""
    if context.store is None:
        return []
    from wyckoff.memory.store import MemoryStore

    memories = MemoryStore(context.store).latest(("playbook",), 20)
    return [
        m.content
        for m in memories
        if m.provenance != "tool_output" and any(w in m.content.lower() for w in PLAYBOOK_WORDS)
    ]


# --- one stock's day ---------------------------------------------------------------------------


@dataclass
class StockDay:
    """One stock on the checked day: its minutes so far, recent days' minutes, its daily facts."""

    code: str
    name: str
    minutes: Any  # MinuteDay
    recent: list[Any]  # DataFrames of complete earlier days
    prior_close: float
    support: float | None
    stop: float | None
    limits: tuple[float, float] | None
    regime: str | None
    unchecked: list[str]


class MarketMinutes:
    """The open market's minute bars and daily panel, for the intraday tools."""

    def __init__(self, context: ToolContext) -> None:
        from wyckoff.engine.minute_bars import MinuteStore
        from wyckoff.engine.sources.choice import tushare_token
        from wyckoff.engine.sources.minutes import minute_fetch

        self.market = MarketData.from_context(context)
        self.market.ready()
        self.minutes = MinuteStore.beside(self.market.store)
        config = context.read_config()
        self.fetch = minute_fetch(self.market.store, tushare_token(config))
        self.panel = self.market.panel()

    def open_days(self) -> frozenset[date]:
        return frozenset(self.market.open_day_list())

    def day(self, code: str, moment: datetime, own_stop: float | None = None) -> StockDay:
        """`code` on the day of `moment`, its minutes up to it."""
        import numpy as np

        from wyckoff.engine.minute_bars import day_minutes

        p = self.panel
        if not p.has(code):
            raise ToolFailure(f"{code} 在本地行情库中没有日线，无法确定支撑与止损。")
        day = moment.date()
        t = int(np.searchsorted(p.dates, np.datetime64(day)))  # bars before the day
        if t == 0:
            raise ToolFailure(f"{code} 在 {day} 之前没有日线，无法确定昨收与支撑。")
        minutes = day_minutes(self.minutes, code, day, moment, self.fetch)
        recent, unchecked = [], []
        for earlier in p.dates[max(t - RECENT_DAYS, 0) : t]:
            end = datetime.combine(earlier.astype(object), CLOSE)
            try:
                recent.append(day_minutes(self.minutes, code, end.date(), end, self.fetch).bars)
            except WyckoffError as exc:
                unchecked.append(f"近几日分钟线不全：{exc.message}")
        return StockDay(
            code,
            str(p.stocks.loc[code, "name"]),
            minutes,
            recent,
            *self._daily(code, t, own_stop),
            unchecked[:1],
        )

    def _daily(self, code: str, t: int, own_stop: float | None) -> tuple:
        """(prior close, support, stop, limits, regime) as traded, from the bars before day t."""
        import numpy as np

        from wyckoff.engine.health import stop_in_force, stops
        from wyckoff.engine.limits import limit_cents, limit_prices, to_cents
        from wyckoff.engine.panel import traded_ratio
        from wyckoff.engine.regime import market_regime
        from wyckoff.engine.thresholds import DEFAULT_CONFIG, board_of, limit_pct

        p, j = self.panel, self.panel.column(code)
        ratio = traded_ratio(p, t - 1, j)  # qfq -> as traded, the minute bars' prices
        closes = p.close[:t, j]
        traded = np.flatnonzero(~np.isnan(closes))
        prior_close = round(float(closes[traded[-1]]) * ratio, 2)
        lows = p.low[max(t - SUPPORT_DAYS, 0) : t, j]
        support = round(float(np.nanmin(lows)) * ratio, 2) if (~np.isnan(lows)).any() else None
        engine = stops(p.single(code), t, DEFAULT_CONFIG)
        if engine["stop"] is not None:
            engine = {**engine, "stop": round(engine["stop"] * ratio, 2)}
        stop = stop_in_force(engine, own_stop)["stop"]
        if t < len(p.dates):
            cents = limit_cents(p, t, j)
        else:  # today's bar is not in the store yet
            st = bool(p.stocks.loc[code, "is_st"])
            cents = limit_prices(to_cents(prior_close), limit_pct(board_of(code), st))
        limits = (cents[0] / 100, cents[1] / 100) if cents else None
        return prior_close, support, stop, limits, market_regime(p, t - 1)["regime"]


# --- tail_check ----------------------------------------------------------------------------------


class TailParams(BaseModel):
    codes: list[StockText] = Field(
        default_factory=list,
        max_length=MAX_CODES,
        description="要检查的股票代码或名称；不填则检查持仓、自选股和待确认信号",
    )
    at: str | None = Field(
        default=None, description="回看今天的某个时刻（如 9:31、14:45），默认现在"
    )
    force: bool = Field(
        default=False, description="不在尾盘时段也检查（休市日看最近一个交易日收盘）"
    )

    @field_validator("at")
    @classmethod
    def _at_is_a_time(cls, value: str | None) -> str | None:
        return None if value is None else f"{_hhmm(value):%H:%M}"


def tail_check(params: TailParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.tail import Playbook

    market = MarketData.from_context(context)
    market.ready()
    open_days = frozenset(market.open_day_list())
    now = market_now()
    moment = checked_minute(now, open_days, params.at, params.force)
    wanted = candidates(context, market, params.codes)
    if not wanted:
        raise NothingToDo(
            "无可检查的股票：持仓、自选股和待确认信号都是空的。用 --codes 600519 指定，或先加持仓、自选（wyckoff watch add）。"
        )
    rules = playbooks(context)
    playbook = Playbook.parse(rules[0]) if rules else None
    minutes = MarketMinutes(context)
    holdings = {h["code"]: h for h in _positions(context, market, f"{moment:%Y%m%d}")}
    results = [
        _one_verdict(minutes, code, role, moment, playbook, holdings.get(code))
        for code, role in wanted
    ]
    add_signal_records(context, market, results)
    checked = [r for r in results if r["verdict"] != "无法检查"]
    if context.store is not None and checked:
        tail_store.record(
            context.store, f"{moment:%Y-%m-%d %H:%M}", f"{moment:%Y-%m-%d}", market.source, checked
        )
        _record_verdicts(context, market.source, f"{moment:%Y-%m-%d}", checked)
    return market.envelope(
        f"{moment:%Y-%m-%d}",
        checked_at=f"{moment:%Y-%m-%d %H:%M}",
        phase=trading_phase(moment, open_days).label,
        playbook=playbook and {"quote": playbook.text},
        results=results,
    )


def _record_verdicts(
    context: ToolContext, source: str, day: str, checked: list[dict[str, Any]]
) -> None:
    """可买 as a buy, 放弃 as avoid, a holding's 破位预警 as a sell, in the scorecard (观察
    advises nothing)."""
    from wyckoff.agents import scorecard
    from wyckoff.engine.tail import BREAK, BUY, SKIP
    from wyckoff.scorecard_store import NewItem

    advice = {BUY: "buy", SKIP: "avoid", BREAK: "sell"}
    items = [
        NewItem("tail", r["code"], r.get("name"), day, advice[r["verdict"]], source, r.get("price"))
        for r in checked
        if r["verdict"] in advice
    ]
    scorecard.record(context.store, items)


def add_signal_records(
    context: ToolContext, market: MarketData, results: list[dict[str, Any]]
) -> None:
    """Each checked stock with a pending signal gets its signals' records (signal_record.py)."""
    from wyckoff import history_store
    from wyckoff.engine.triggers import TRIGGER_KEYS

    if context.store is None:
        return
    pending: dict[str, list[str]] = {}
    for signal in history_store.signals(context.store, None, 50):
        if signal["status"] == "pending" and signal["trigger"] in TRIGGER_KEYS:
            pending.setdefault(signal["code"], []).append(TRIGGER_KEYS[signal["trigger"]])
    for row in results:
        if row["code"] in pending:
            row["signal_records"] = records_for(market, pending[row["code"]])


def _positions(context: ToolContext, market: MarketData, day: str) -> list[dict[str, Any]]:
    """The holdings, their stops in the prices of `day` (YYYYMMDD) as traded."""
    from wyckoff.agents.corporate_actions import positions_in_traded_prices

    if context.store is None:
        return []
    return list(positions_in_traded_prices(context.store, market.store, day))


def _one_verdict(
    minutes: MarketMinutes,
    code: str,
    role: str,
    moment: datetime,
    playbook,
    held: dict[str, Any] | None,
) -> dict[str, Any]:
    from wyckoff.engine.intraday import intraday_facts
    from wyckoff.engine.tail import DailyContext, tail_verdict

    try:
        day = minutes.day(code, moment, (held or {}).get("stop_loss"))
    except WyckoffError as exc:
        return {"code": code, "role": role, "verdict": "无法检查", "reasons": [exc.message]}
    facts = intraday_facts(day.minutes.bars, day.prior_close, day.recent)
    daily = DailyContext(
        support=day.support,
        stop=day.stop,
        limit_down=day.limits[0] if day.limits else None,
        limit_up=day.limits[1] if day.limits else None,
        regime=day.regime,
        holding=held is not None,
    )
    verdict = tail_verdict(facts, daily, playbook)
    return {
        "code": code,
        "name": day.name,
        "role": "持仓" if held else role,
        "verdict": verdict.verdict,
        "reasons": verdict.reasons,
        "unchecked": day.unchecked + verdict.unchecked,
        "playbook": verdict.playbook,
        "price": facts.price,
        "minutes": minutes_label(day, "%H:%M"),
        "facts": facts.as_dict(),
        "support": day.support,
        "stop": day.stop,
        "limits": day.limits,
        "regime": day.regime,
    }


def summarize_tail(result: dict[str, Any]) -> str:
    counts: dict[str, int] = {}
    for row in result["results"]:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    shown = "，".join(f"{v} {n}" for v, n in counts.items())
    return f"尾盘检查 {result['checked_at']}（{result['phase']}）：{shown}"


# --- query_tail_buy --------------------------------------------------------------------------


class TailHistoryParams(BaseModel):
    code: StockText | None = Field(default=None, description="只看这只股票（代码）")
    limit: int = Field(default=30, ge=1, le=500, description="最多返回几条")


def query_tail_buy(params: TailHistoryParams, context: ToolContext) -> dict[str, Any]:
    """Recorded tail verdicts with the next trading day's open and close vs the checked price."""
    if context.store is None:
        raise ToolFailure("没有状态数据库，无法读取尾盘检查记录。")
    market = MarketData.from_context(context)
    fill_outcomes(context, market)
    rows = tail_store.checks(context.store, params.code, params.limit)
    return {"checks": rows, "by_verdict": outcome_stats(rows)}


def fill_outcomes(context: ToolContext, market: MarketData) -> None:
    """Record the next trading day's open and close returns where the store has that day."""
    import numpy as np

    pending = [r for r in tail_store.checks(context.store, None, 500) if r["next_day"] is None]
    pending = [r for r in pending if r["source"] == market.source and r["price"]]
    if not pending or not market.store.path.exists():
        return
    for row in pending:
        bars = market.store.query_df(
            "SELECT date, open, close FROM bars WHERE code = ? AND date > ? ORDER BY date LIMIT 1",
            [row["code"], row["day"]],
        )
        if bars.empty or np.isnan(bars["close"].iloc[0]):
            continue
        nxt = bars.iloc[0]
        tail_store.set_outcome(
            context.store,
            row["id"],
            f"{nxt['date']:%Y-%m-%d}",
            round((float(nxt["open"]) / row["price"] - 1) * 100, 2),
            round((float(nxt["close"]) / row["price"] - 1) * 100, 2),
        )


def outcome_stats(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per verdict: how many, how many with a known next day, their mean T+1 returns."""
    stats: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = stats.setdefault(
            row["verdict"], {"count": 0, "known": 0, "_open": [], "_close": []}
        )
        entry["count"] += 1
        if row["next_day"] is not None:
            entry["known"] += 1
            entry["_open"].append(row["next_open_pct"])
            entry["_close"].append(row["next_close_pct"])
    for entry in stats.values():
        opens, closes = entry.pop("_open"), entry.pop("_close")
        entry["mean_next_open_pct"] = round(sum(opens) / len(opens), 2) if opens else None
        entry["mean_next_close_pct"] = round(sum(closes) / len(closes), 2) if closes else None
    return stats


def summarize_tail_history(result: dict[str, Any]) -> str:
    parts = [
        f"{verdict} {s['count']} 次"
        + (f"（次日收盘均 {s['mean_next_close_pct']:+.2f}%）" if s["known"] else "")
        for verdict, s in result["by_verdict"].items()
    ]
    return "尾盘检查记录：" + ("，".join(parts) if parts else "还没有记录")


# --- intraday_analysis and intraday_rescue_check -------------------------------------------------


class IntradayParams(BaseModel):
    code: StockText = Field(description="6 位股票代码或股票名称")


def intraday_analysis(params: IntradayParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.intraday import intraday_facts, strength, volume_profile

    minutes, day = latest_day(context, params.code)
    facts = intraday_facts(day.minutes.bars, day.prior_close, day.recent)
    score, parts = strength(facts)
    return day_envelope(
        minutes,
        day,
        facts=facts.as_dict(),
        vwap_position="上方" if facts.vs_vwap_pct >= 0 else "下方",
        trend={"5m_pct": round(facts.trend5_pct, 2), "15m_pct": round(facts.trend15_pct, 2)},
        volume_profile=volume_profile(day.minutes.bars),
        strength={"score": score, "parts": parts},
        unchecked=day.unchecked,
    )


def intraday_chart_data(context: ToolContext, code: str) -> dict[str, Any]:
    """One stock's minute path for the TUI chart: close, running VWAP and volume per bar, with
    the prior close, the confirmed support and the stop."""
    minutes, day = latest_day(context, code)
    bars = day.minutes.bars
    running_vwap = bars["amount"].cumsum() / bars["volume"].cumsum().where(lambda v: v > 0)
    return day_envelope(
        minutes,
        day,
        kind="intraday",
        prior_close=day.prior_close,
        support=day.support,
        stop=day.stop,
        points=[
            {
                "time": f"{ts:%H:%M}",
                "close": float(close),
                "vwap": None if vwap != vwap else round(float(vwap), 3),  # NaN before any volume
                "volume": float(volume),
            }
            for ts, close, vwap, volume in zip(
                bars["ts"], bars["close"], running_vwap, bars["volume"], strict=True
            )
        ],
    )


def summarize_intraday(result: dict[str, Any]) -> str:
    facts = result["facts"]
    return (
        f"{result['code']} {result['name']} 截至 {facts['as_of'][11:]}：现价 {facts['price']:.2f}，"
        f"VWAP {result['vwap_position']}，强度 {result['strength']['score']}/100"
    )


class RescueParams(IntradayParams):
    stop: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="持仓止损价（不填用引擎止损）"
    )


def intraday_rescue_check(params: RescueParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.intraday import intraday_facts
    from wyckoff.engine.rescue import rescue_verdict

    minutes, day = latest_day(context, params.code, params.stop)
    if day.stop is None:
        raise ToolFailure(f"{day.code} 的日线不足以算出止损：请用 stop 参数给出你的止损价。")
    facts = intraday_facts(day.minutes.bars, day.prior_close, day.recent)
    verdict = rescue_verdict(facts, day.stop, day.support)
    return day_envelope(
        minutes,
        day,
        stop=day.stop,
        support=day.support,
        verdict=verdict.verdict,
        broke_stop=verdict.broke,
        reasons=verdict.reasons,
        facts=facts.as_dict(),
    )


def summarize_rescue(result: dict[str, Any]) -> str:
    return f"{result['code']} {result['name']}：{result['verdict']}（止损 {result['stop']:.2f}）"


def latest_day(
    context: ToolContext, text: str, own_stop: float | None = None
) -> tuple[MarketMinutes, StockDay]:
    """The stock `text` names on its latest minute with trading (see `latest_minute`)."""
    minutes = MarketMinutes(context)
    code = minutes.market.resolve_code(text)
    return minutes, minutes.day(code, latest_minute(market_now(), minutes.open_days()), own_stop)


def day_envelope(minutes: MarketMinutes, day: StockDay, **result: Any) -> dict[str, Any]:
    """A result about one stock's day: the market envelope, the stock and its minutes' label."""
    label = minutes_label(day, "%Y-%m-%d %H:%M")
    return minutes.market.envelope(
        f"{day.minutes.day:%Y-%m-%d}", code=day.code, name=day.name, minutes=label, **result
    )


def minutes_label(day: StockDay, as_of_format: str) -> dict[str, Any]:
    """Where the day's minute bars came from, how fine, up to when, and whether whole."""
    return {
        "source": day.minutes.source,
        "freq": day.minutes.freq,
        "as_of": format(day.minutes.as_of, as_of_format),
        "complete": day.minutes.complete,
    }


INTRADAY_TOOLS = (
    ToolSpec(
        name="intraday_analysis",
        description="一只股票的分时分析：VWAP 位置、5/15 分钟趋势、分时量能分布和 0-100 强度分（列出各部分得分）；盘中为截至此刻，休市时为最近交易日。",
        params=IntradayParams,
        func=intraday_analysis,
        title="分时分析",
        concurrency_safe=True,
        summarize=summarize_intraday,
        timeout_s=120,
        mcp_tier=2,
    ),
    ToolSpec(
        name="intraday_rescue_check",
        description="持仓盘中跌破止损后的自救检查：收回止损与 VWAP 的洗盘（持有观察）、只收回一半（减仓）或破位（离场），附理由。",
        params=RescueParams,
        func=intraday_rescue_check,
        title="破位自救检查",
        concurrency_safe=True,
        summarize=summarize_rescue,
        timeout_s=120,
        mcp_tier=2,
    ),
)

TAIL_TOOLS = (
    ToolSpec(
        name="tail_check",
        description=(
            "尾盘二次确认（14:30 后）：对持仓、自选股、待确认信号或指定股票，用分钟线检查 VWAP、距日内高点回落、"
            "最后 30 分钟涨跌与量能占比、与近几日同时段量能之比、收盘位置、确认支撑与止损、涨跌停和市场状态，"
            "给出 可买 / 观察 / 放弃（持仓跌破则 持仓破位预警）与中文理由；用户记忆中的尾盘剧本会被引用并执行。"
            "每次结论都会记录。"
            "待确认信号的行带 signal_records：该信号在本地行情库历史上的记录，回答时引用其 text。"
        ),
        params=TailParams,
        func=tail_check,
        title="尾盘检查",
        summarize=summarize_tail,
        timeout_s=180,
        mcp_tier=3,  # reads the user's holdings and playbook
    ),
    ToolSpec(
        name="query_tail_buy",
        description="查询尾盘检查的历史结论，以及每条结论次日（T+1）开盘和收盘相对检查价的涨跌，按结论汇总。",
        params=TailHistoryParams,
        func=query_tail_buy,
        title="尾盘检查记录",
        concurrency_safe=True,
        summarize=summarize_tail_history,
        timeout_s=60,
        mcp_tier=1,
    ),
)
