"""Market tools shared by the agent runtime, the direct commands and MCP.

Every result is a JSON-serialisable dict carrying `source` and `as_of`; on the demo market
it also carries `data_note` saying the data is synthetic.
"""

from __future__ import annotations

import threading
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, field_validator

from wyckoff import history_store
from wyckoff.agents import results
from wyckoff.archive_store import search_archives
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.engine.thresholds import MAIN_INDICES, board_of

if TYPE_CHECKING:
    import numpy as np

    from wyckoff.history_store import Signal

DEMO_NOTE = "演示数据：这是本地合成的行情，不是真实市场数据，结论仅供体验功能。"
PANEL_DAYS = 400
YEAR = 250  # trading days
STOCK_TEXT_MAX_CHARS = 40
_PANELS: dict[tuple, Any] = {}
_PANEL_LOCK = threading.Lock()


class MarketData:
    """The market store of the configured source and the panels loaded from it."""

    def __init__(self, home: Path, config) -> None:
        from wyckoff.engine.market_store import MarketStore
        from wyckoff.engine.sources import resolve_source

        self.home = home
        self.source = resolve_source(config)
        self.store = MarketStore.for_source(home, self.source)

    @classmethod
    def from_context(cls, context: ToolContext) -> MarketData:
        """The context's market, reopened when `wyckoff data use` changed the source meanwhile
        (an open TUI must follow the switch its own "no data" hint asks for)."""
        from wyckoff.config import load_config
        from wyckoff.engine.sources import resolve_source

        config = load_config(context.home)
        source = resolve_source(config)
        market = context.markets.get(source)
        if not isinstance(market, cls):
            context.markets.clear()  # only the current source stays open
            market = cls(context.home, config)
            context.markets[source] = market
        return market

    def ready(self) -> None:
        """Raise a clear error when there is no data; build the demo market on first use."""
        from wyckoff.engine.sources import ensure_demo, no_data_hint

        if self.source == "demo":
            ensure_demo(self.home)
        elif self.store.is_empty():
            raise ToolFailure(no_data_hint(self.source))

    def panel(self, days: int = PANEL_DAYS, end: str | None = None):
        """The last `days` trading days (up to `end`, else the latest): kept in memory per
        process, and the latest ones on disk per store version (see engine/panel_cache.py), so
        a warm run does not touch DuckDB."""
        from wyckoff.engine.panel_cache import cached_panel, store_version

        if not self.store.path.exists():
            self.ready()
        key = (str(self.store.path), store_version(self.store.path), days, end)
        with _PANEL_LOCK:
            panel = _PANELS.get(key)
            if panel is None:
                _PANELS.clear()
                if end:  # a window in the past: one of many, not worth a copy on disk
                    panel = self._load(days, end)
                else:
                    panel = cached_panel(
                        self.store.path, self.source, days, lambda: self._load(days)
                    )
                _PANELS[key] = panel
        return panel

    def _load(self, days: int, end: str | None = None):
        self.ready()
        return self.store.load_panel(days, end=end)

    def bar_dates(self) -> np.ndarray:
        """Every date the store has bars for."""
        self.ready()
        return self.store.bar_dates()["date"].to_numpy().astype("datetime64[D]")

    def envelope(self, as_of: str, **result: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"source": self.source, "as_of": as_of}
        if self.source == "demo":
            payload["data_note"] = DEMO_NOTE
        payload.update(result)
        return payload

    def open_days(self) -> np.ndarray:
        """Trading days the store knows: its calendar's open days and every date with bars."""
        import numpy as np

        if not self.store.path.exists():
            return np.array([], dtype="datetime64[D]")
        frame = self.store.trading_dates()
        return np.sort(frame["date"].to_numpy().astype("datetime64[D]"))

    def stock_table(self):
        self.ready()
        return self.store.stocks()

    def resolve_code(self, text: str) -> str:
        """The one stock `text` names (code, code with exchange, or name), else the candidates."""
        from wyckoff.agents.stock_lookup import resolve_stock

        return resolve_stock(all_stocks(self.panel().stocks), text)


def all_stocks(panel_stocks):
    """The stocks of the panel plus any listed stock it lacks, so names resolve against the
    whole market: a fragment unique among demo stocks is not unique among all A-shares."""
    import pandas as pd

    from wyckoff.engine.demo import stock_list

    ours = panel_stocks["name"].rename_axis("code").reset_index()
    return pd.concat([ours, stock_list()]).drop_duplicates("code")


def search_names(stocks, keyword: str, limit: int = 10) -> list[str]:
    """Codes matching a keyword: exact code, exact name, names containing it, then the
    longest stock name contained in the keyword ("茅台最近怎么样" -> 贵州茅台)."""
    keyword = keyword.strip()
    codes = stocks["code"].tolist()
    names = stocks["name"].fillna("").tolist()
    found: list[str] = []

    def add(code: str) -> None:
        if code not in found:
            found.append(code)

    for code, name in zip(codes, names, strict=True):
        if keyword in (code, name):
            add(code)
    for code, name in zip(codes, names, strict=True):
        if keyword and (keyword in name or (keyword.isdigit() and code.startswith(keyword))):
            add(code)
    contained = sorted(
        ((len(n), c) for c, n in zip(codes, names, strict=True) if len(n) >= 2 and n in keyword),
        reverse=True,
    )
    for _, code in contained:
        add(code)
    return found[:limit]


def signed_pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}%"


def price_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _latest_quote(panel, code: str) -> dict[str, Any]:
    import numpy as np

    if not panel.has(code):
        return {"close": None, "pct_change": None}
    j = panel.column(code)
    closes = panel.close[:, j]
    valid = np.flatnonzero(~np.isnan(closes))
    if len(valid) < 2:
        return {"close": None, "pct_change": None}
    last, prev = closes[valid[-1]], closes[valid[-2]]
    return {"close": round(float(last), 2), "pct_change": round(float(last / prev - 1) * 100, 2)}


# --- search_stock_by_name -------------------------------------------------------------------


def short_stock_text(text: str) -> str:
    """A stock named in a few characters; fuzzy matching a long text would take minutes."""
    if len(text.strip()) > STOCK_TEXT_MAX_CHARS:
        raise ValueError(
            f"股票代码或名称最长 {STOCK_TEXT_MAX_CHARS} 个字，收到 {len(text)} 个字：请只给代码或名称"
        )
    return text


StockText = Annotated[str, AfterValidator(short_stock_text)]


class SearchParams(BaseModel):
    keyword: StockText = Field(description="股票代码、名称或包含名称的一句话")


def search_stock_by_name(params: SearchParams, context: ToolContext) -> dict[str, Any]:
    market = MarketData.from_context(context)
    stocks = market.stock_table().set_index("code", drop=False)
    panel = market.panel()
    results = []
    for code in search_names(stocks.reset_index(drop=True), params.keyword):
        row = stocks.loc[code]
        results.append(
            {
                "code": code,
                "name": row["name"],
                "industry": row["industry"],
                "board": row["board"],
                **_latest_quote(panel, code),
            }
        )
    note = None if results else f"没有找到与 '{params.keyword}' 匹配的股票。"
    return market.envelope(panel.as_of, results=results, **({"note": note} if note else {}))


def summarize_search(result: dict[str, Any]) -> str:
    found = result["results"]
    if not found:
        return "没有找到匹配的股票"
    shown = "、".join(
        f"{r['name']}（{r['code']}）{price_text(r['close'])} {signed_pct(r['pct_change'])}"
        for r in found[:3]
    )
    return f"找到 {len(found)} 只：{shown}"


# --- analyze_stock ----------------------------------------------------------------------------


class AnalyzeParams(BaseModel):
    code: StockText = Field(description="6 位股票代码或股票名称")
    mode: Literal["diagnose", "price"] = Field(
        default="diagnose", description="diagnose 诊断；price 最近日线"
    )
    cost: float = Field(
        default=0,
        ge=0,
        allow_inf_nan=False,
        description="持仓成本价（可选，用于盈亏与健康判断）",
    )
    days: int = Field(default=30, ge=1, le=250, description="price 模式返回的天数")


def analyze_stock(params: AnalyzeParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.health import diagnose

    market = MarketData.from_context(context)
    code = market.resolve_code(params.code)
    panel = market.panel()
    if not panel.has(code):
        raise ToolFailure(
            f"{code} 在本地行情库中没有日线数据：运行 `wyckoff data sync --codes {code}` 后重试。"
        )
    name = panel.stocks.loc[code, "name"]
    if params.mode == "price":
        frame = panel.stock_frame(code, params.days)
        rows = [
            {
                "date": d.strftime("%Y-%m-%d"),
                **{k: round(float(v), 2) for k, v in row.items() if k not in ("volume", "amount")},
                "volume": int(row["volume"]),
                "amount": round(float(row["amount"])),
            }
            for d, row in frame.iterrows()
        ]
        return market.envelope(panel.as_of, code=code, name=name, adjust="qfq", bars=rows)
    result = diagnose(panel, code, cost=params.cost)
    if "error" in result:
        raise ToolFailure(f"{code} {name}：{result['error']}")
    return market.envelope(
        panel.as_of, name=name, industry=panel.stocks.loc[code, "industry"], **result
    )


def summarize_analysis(result: dict[str, Any]) -> str:
    stock = f"{result['code']} {result['name']}"
    if "bars" in result:
        bars = result["bars"]
        return f"{stock} 最近 {len(bars)} 根日线，最新收盘 {bars[-1]['close']:.2f}"
    health = result["health_label"].split(" ")[-1]
    return f"{stock} 收盘 {result['close']:.2f}，{health}，{result['phase']}"


def kline_data(context: ToolContext, code: str, days: int = 120) -> dict[str, Any]:
    """Bars, MA50/MA200 and signal dates of one stock, for the K-line chart."""
    import pandas as pd

    market = MarketData.from_context(context)
    code = market.resolve_code(code)
    panel = market.panel()
    if not panel.has(code):
        raise ToolFailure(f"{code} 在本地行情库中没有日线数据。")
    frame = panel.stock_frame(code)
    close = frame["close"]
    ma50, ma200 = close.rolling(50).mean(), close.rolling(200).mean()
    frame = frame.tail(days)
    dates = [d.strftime("%Y-%m-%d") for d in frame.index]
    markers: set[str] = set()
    if context.store is not None:
        markers = history_store.signal_dates(context.store, code) & set(dates)

    def clean(series: pd.Series) -> list[float | None]:
        return [None if pd.isna(v) else float(v) for v in series.tail(days)]

    return market.envelope(
        panel.as_of,
        code=code,
        name=panel.stocks.loc[code, "name"],
        bars=[
            {"date": d, **{k: float(row[k]) for k in ("open", "high", "low", "close", "volume")}}
            for d, (_, row) in zip(dates, frame.iterrows(), strict=True)
        ],
        ma50=clean(ma50),
        ma200=clean(ma200),
        markers=sorted(markers),
    )


# --- market overview and history --------------------------------------------------------------


def get_market_overview(params: BaseModel, context: ToolContext) -> dict[str, Any]:
    import numpy as np

    from wyckoff.engine.regime import market_regime

    market = MarketData.from_context(context)
    panel = market.panel()
    t = len(panel.dates) - 1
    indices = []
    for code, name in MAIN_INDICES.items():
        series = panel.index_close.get(code)
        if series is None:
            continue
        indices.append(
            {
                "code": code,
                "name": name,
                "close": round(float(series[t]), 2),
                "pct_change": round(float(series[t] / series[t - 1] - 1) * 100, 2),
                "ret20_pct": round(float(series[t] / series[t - 20] - 1) * 100, 2)
                if t >= 20
                else None,
            }
        )
    pct = panel.close[t] / panel.close[t - 1] - 1
    valid = ~np.isnan(pct)
    breadth = {
        "up": int((pct[valid] > 0).sum()),
        "down": int((pct[valid] < 0).sum()),
        "flat": int((pct[valid] == 0).sum()),
    }
    return market.envelope(
        panel.as_of, indices=indices, advance_decline=breadth, regime=market_regime(panel)
    )


def summarize_overview(result: dict[str, Any]) -> str:
    regime = result["regime"]
    parts = [
        f"{i['name']} {i['close']:.2f} {signed_pct(i['pct_change'])}" for i in result["indices"][:1]
    ]
    breadth = result["advance_decline"]
    parts.append(f"涨 {breadth['up']} 跌 {breadth['down']}")
    parts.append(f"市场状态 {regime['regime']}（{regime['label']}）")
    return "，".join(parts)


class HistoryParams(BaseModel):
    index: str = Field(default="000001.SH", description="指数代码，如 000001.SH、399006.SZ")
    days: int = Field(default=60, ge=5, le=250)


def get_market_history(params: HistoryParams, context: ToolContext) -> dict[str, Any]:
    import numpy as np

    market = MarketData.from_context(context)
    code = params.index.upper()
    if code not in MAIN_INDICES:
        raise ToolFailure(f"不支持的指数 {params.index}：可选 {', '.join(MAIN_INDICES)}。")
    frame = market.store.index_history(code, params.days + 60)
    if len(frame) < 2:
        raise ToolFailure(f"本地没有 {code} 的指数数据：运行 `wyckoff data sync`。")
    close = frame["close"].to_numpy()
    volume = frame["volume"].to_numpy()
    pct = np.concatenate([[np.nan], close[1:] / close[:-1] - 1])
    recent = slice(len(frame) - min(params.days, len(frame)), len(frame))
    window_close = close[recent]
    peaks = np.maximum.accumulate(window_close)
    up = pct[recent] > 0
    volume_up = np.diff(np.concatenate([[volume[recent][0]], volume[recent]])) > 0
    summary = {
        "period_return_pct": round(float(window_close[-1] / window_close[0] - 1) * 100, 2),
        "ret20_pct": round(float(close[-1] / close[-21] - 1) * 100, 2) if len(close) > 20 else None,
        "volume_ratio_5_20": round(float(volume[-5:].mean() / volume[-20:].mean()), 2)
        if len(volume) >= 20
        else None,
        "max_drawdown_pct": round(float(np.max(1 - window_close / peaks)) * 100, 2),
        "up_days": int(up.sum()),
        "down_days": int((pct[recent] < 0).sum()),
        "price_volume_up_days": int((up & volume_up).sum()),
        "price_down_volume_up_days": int(((pct[recent] < 0) & volume_up).sum()),
    }
    rows = [
        {
            "date": str(d)[:10],
            "close": round(float(c), 2),
            "pct_change": None if np.isnan(p) else round(float(p) * 100, 2),
            "amount": round(float(a)),
        }
        for d, c, p, a in zip(
            frame["date"].iloc[recent],
            close[recent],
            pct[recent],
            frame["amount"].to_numpy()[recent],
            strict=True,
        )
    ]
    return market.envelope(
        str(frame["date"].iloc[-1])[:10],
        index=code,
        name=MAIN_INDICES[code],
        summary=summary,
        rows=rows,
    )


def summarize_index_history(result: dict[str, Any]) -> str:
    summary = result["summary"]
    return (
        f"{result['name']} 近 {len(result['rows'])} 日 {signed_pct(summary['period_return_pct'])}，"
        f"最大回撤 {summary['max_drawdown_pct']:.2f}%"
    )


# --- screen_stocks (background) ------------------------------------------------------------------


class ScreenParams(BaseModel):
    board: Literal["all", "main", "chinext", "star"] = Field(default="all", description="板块范围")


def screen_stocks(params: ScreenParams, context: ToolContext) -> dict[str, Any]:
    import numpy as np

    from wyckoff.engine.funnel import run_funnel, trigger_groups
    from wyckoff.engine.regime import market_regime

    market = MarketData.from_context(context)
    context.progress("加载行情", market.source, 0.05)
    panel = market.panel()
    context.progress("全市场漏斗", f"{len(panel.codes)} 只股票", 0.3)
    result = run_funnel(panel)
    regime = market_regime(panel)
    boards = np.array([board_of(c) for c in panel.codes])
    in_board = np.ones(len(boards), dtype=bool) if params.board == "all" else boards == params.board
    ranked = [j for j in result.ranked() if in_board[j]]
    top = [_candidate(panel, result, j) for j in ranked[:20]]
    triggered = [c for c in top if c["triggers"]]
    symbols = [c["code"] for c in (triggered or top)[:10]]
    context.progress("保存结果", f"{len(top)} 只候选", 0.9)
    if context.store is not None:
        save_screen(context.store, market.source, panel.as_of, top, market.open_days())
    summary = {
        "total_scanned": int((~np.isnan(panel.close[-1]) & in_board).sum()),
        "layer1_passed": int((result.layer1 & in_board).sum()),
        "layer2_passed": int((result.layer2 & in_board).sum()),
        "layer3_passed": int((result.layer3 & in_board).sum()),
        "report_candidates": int((result.layer4 & in_board).sum()),
    }
    return market.envelope(
        panel.as_of,
        board=params.board,
        summary=summary,
        regime=regime["regime"],
        regime_label=regime["label"],
        trade_mode="允许开新仓" if regime["buy_allowed"] else "禁止开新仓（只管理持仓）",
        top_candidates=top,
        trigger_groups=trigger_groups(result, panel.codes),
        top_sectors=[
            {"industry": s["industry"], "strength": round(s["strength"], 3), "passed": s["count"]}
            for s in result.sectors
            if s.get("top")
        ],
        symbols_for_report=symbols,
        next_step="可以调用 generate_ai_report(stock_codes=symbols_for_report) 生成研报。",
        data_caveats=panel.caveats,
    )


def summarize_screen(result: dict[str, Any]) -> str:
    summary = result["summary"]
    return (
        f"扫描 {summary['total_scanned']} 只，候选 {summary['report_candidates']} 只，"
        f"市场状态 {result['regime']}（{result['trade_mode']}）"
    )


def _candidate(panel, result, j: int) -> dict[str, Any]:
    from wyckoff.engine.triggers import TRIGGER_LABELS

    code = panel.codes[j]
    return {
        "code": code,
        "name": panel.stocks.loc[code, "name"],
        "industry": panel.stocks.loc[code, "industry"],
        "close": round(float(panel.close[-1, j]), 2),
        "channels": result.channel_labels(j),
        "triggers": [TRIGGER_LABELS[t] for t in result.trigger_labels(j)],
        "trigger_keys": result.trigger_labels(j),
        "score": round(float(result.score[j]), 1),
    }


def save_screen(
    store, source: str, as_of: str, candidates: list[dict[str, Any]], open_days: np.ndarray
) -> None:
    """Candidates as recommendations; each trigger as a pending signal with its TTL."""
    from wyckoff.engine.thresholds import DEFAULT_CONFIG
    from wyckoff.engine.triggers import TRIGGER_LABELS, signal_expiry

    recommendations = [
        history_store.NewRecommendation(
            c["code"], c["name"], c["channels"], c["triggers"], c["score"], c["close"]
        )
        for c in candidates
    ]
    signals = [
        history_store.NewSignal(
            c["code"],
            c["name"],
            TRIGGER_LABELS[key],
            c["score"],
            signal_expiry(key, as_of, open_days, DEFAULT_CONFIG),
        )
        for c in candidates
        for key in c["trigger_keys"]
    ]
    history_store.save_screen(store, source, as_of, recommendations, signals)


# --- run_backtest (background) ---------------------------------------------------------------------


class BacktestParams(BaseModel):
    start: str | None = Field(
        default=None, description="开始日期 YYYY-MM-DD；省略为结束前 250 个交易日"
    )
    end: str | None = Field(default=None, description="结束日期 YYYY-MM-DD；省略为最新")
    hold_days: int = Field(default=10, ge=1, le=120)
    top_n: int = Field(default=3, ge=1, le=20)
    board: Literal["all", "main", "chinext", "star"] = "all"
    stop_loss_pct: float = Field(default=8.0, gt=0, le=50)
    take_profit_pct: float = Field(default=20.0, gt=0, le=200)

    @field_validator("start", "end")
    @classmethod
    def _real_date(cls, text: str | None) -> str | None:
        """A typo like 2026-13-05 is the user's mistake, not an empty backtest range."""
        text = (text or "").strip()
        if not text:
            return None
        parts = text.replace("/", "-").split("-")
        if len(parts) == 1 and len(text) == 8:  # YYYYMMDD
            parts = [text[:4], text[4:6], text[6:]]
        try:
            return date(*(int(part) for part in parts)).isoformat()
        except (TypeError, ValueError):
            raise ValueError(f"日期 {text} 无效，请用 YYYY-MM-DD，如 2026-01-05") from None


def run_backtest_tool(params: BacktestParams, context: ToolContext) -> dict[str, Any]:
    from wyckoff.engine.backtest import run_backtest

    market, panel, start_t, end_t = backtest_span(context, params.start, params.end)
    dates = [str(d) for d in panel.dates]
    result = run_backtest(
        panel,
        start_t,
        end_t,
        hold_days=params.hold_days,
        top_n=params.top_n,
        board=params.board,
        stop_loss_pct=params.stop_loss_pct,
        take_profit_pct=params.take_profit_pct,
        progress=lambda fraction: _backtest_progress(context, dates, start_t, end_t, fraction),
        cancelled=context.cancelled,
    )
    result.pop("signals")
    total, result["trade_list"] = len(result["trade_list"]), result["trade_list"][-30:]
    if total > len(result["trade_list"]):
        result["trade_list_note"] = f"共 {total} 笔交易，这里只列出最近 30 笔"
    return market.envelope(dates[end_t], data_caveats=panel.caveats, **result)


def backtest_span(context: ToolContext, start: str | None, end: str | None):
    """The market, the panel of the window `start`..`end` with its warm-up, and the day
    indices of the window (engine/window.py: exactly the window asked for, or one sentence
    naming the missing dates)."""
    from wyckoff.engine.window import MissingHistory, backtest_window

    market = MarketData.from_context(context)
    context.progress("加载行情", market.source, 0.02)
    try:
        window = backtest_window(
            market.bar_dates(), start, end, market.open_days(), can_sync=market.source != "demo"
        )
    except MissingHistory as exc:
        raise ToolFailure(exc.message) from None
    # The latest window is cached on disk: rounded up to whole years, few sizes are cached.
    days = window.days if end else -(-window.days // YEAR) * YEAR
    panel = market.panel(days, end=window.end if end else None)
    dates = [str(d) for d in panel.dates]
    return market, panel, dates.index(window.start), dates.index(window.end)


def _backtest_progress(
    context: ToolContext, dates: list[str], start_t: int, end_t: int, fraction: float
) -> None:
    if fraction >= 1:
        context.progress("汇总统计", "交易明细、收益与回撤", 1.0)
        return
    done = round(fraction * (end_t - start_t))
    day = f"{dates[start_t + done]}（{done}/{end_t - start_t} 个交易日）"
    context.progress("逐日回测", day, fraction)


def summarize_backtest(result: dict[str, Any]) -> str:
    period, account = result["period"], result["cash_portfolio"]
    return (
        f"{period['start']} 至 {period['end']}：复利收益 {signed_pct(account['total_return_pct'])}，"
        f"最大回撤 {account['max_drawdown_pct']:.2f}%；{result['benchmark']['verdict']}"
    )


# --- query_history ------------------------------------------------------------------------------


HISTORY_KINDS = {"recommendation": "推荐记录", "signal": "信号", "archive": "压缩归档"}


def summarize_history_query(result: dict[str, Any]) -> str:
    return f"{len(result['rows'])} 条{HISTORY_KINDS[result['source']]}"


class HistoryQueryParams(BaseModel):
    source: Literal["recommendation", "signal", "archive"] = Field(
        description="recommendation 推荐记录；signal 待确认信号；archive 压缩归档"
    )
    code: str | None = Field(default=None, description="只看这只股票")
    limit: int = Field(default=20, ge=1, le=100)


def query_history(params: HistoryQueryParams, context: ToolContext) -> dict[str, Any]:
    if params.source == "archive":
        rows = search_archives(context.home, params.code or "", params.limit)
        return {
            "source": "archive",
            "rows": rows,
            **({} if rows else {"note": "没有匹配的上下文压缩归档。"}),
        }
    if context.store is None:
        raise ToolFailure("没有状态数据库，无法查询历史。")
    if params.source == "recommendation":
        rows = history_store.recommendations(context.store, params.code, params.limit)
    else:
        rows = history_store.signals(context.store, params.code, params.limit)
        _refresh_expiry(rows, MarketData.from_context(context).open_days())
    return {"source": params.source, "rows": rows}


def _refresh_expiry(rows: list[Signal], open_days: np.ndarray) -> None:
    """Recount each pending signal's TTL on the calendar known now (a holiday synced since
    the screen moves its expiry), and mark it expired once that day has passed."""
    from wyckoff.engine.thresholds import DEFAULT_CONFIG
    from wyckoff.engine.triggers import TRIGGER_KEYS, signal_expiry

    today = date.today().isoformat()
    for row in rows:
        key = TRIGGER_KEYS.get(row["trigger"])
        if row["status"] != "pending" or key is None:
            continue
        row["expires_on"] = signal_expiry(key, row["as_of"], open_days, DEFAULT_CONFIG)
        if row["expires_on"] < today:
            row["status"] = "expired"


class NoParams(BaseModel):
    pass


MARKET_TOOLS = (
    ToolSpec(
        name="search_stock_by_name",
        description="按代码或名称查找 A 股股票，返回最新价和涨跌幅。",
        params=SearchParams,
        func=search_stock_by_name,
        title="查找股票",
        concurrency_safe=True,
        summarize=summarize_search,
        timeout_s=60,
        output=results.SearchResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="analyze_stock",
        description="诊断一只股票（健康度与理由、均线、通道、吸筹阶段、信号、止损）或返回最近日线。",
        params=AnalyzeParams,
        func=analyze_stock,
        title="个股诊断",
        concurrency_safe=True,
        summarize=summarize_analysis,
        timeout_s=60,
        output=results.AnalyzeResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="get_market_overview",
        description="大盘概览：主要指数、涨跌家数、市场状态（regime）。",
        params=NoParams,
        func=get_market_overview,
        title="大盘概览",
        concurrency_safe=True,
        summarize=summarize_overview,
        timeout_s=60,
        output=results.OverviewResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="get_market_history",
        description="指数历史行情与区间统计（收益、回撤、量价配合）。",
        params=HistoryParams,
        func=get_market_history,
        title="指数历史",
        concurrency_safe=True,
        summarize=summarize_index_history,
        timeout_s=60,
        output=results.IndexHistoryResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="screen_stocks",
        description="全市场威科夫漏斗筛选（后台任务），返回候选股、信号分组和强势行业。",
        params=ScreenParams,
        func=screen_stocks,
        title="全市场筛选",
        background=True,
        summarize=summarize_screen,
        timeout_s=600,
        output=results.ScreenResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="run_backtest",
        description="威科夫漏斗策略的逐日无未来函数回测（后台任务），两种记账口径。",
        params=BacktestParams,
        func=run_backtest_tool,
        title="策略回测",
        background=True,
        summarize=summarize_backtest,
        timeout_s=1800,
        output=results.BacktestResult,
        mcp_tier=2,
    ),
    ToolSpec(
        name="query_history",
        description="查询历史推荐、待确认信号或上下文压缩归档。",
        params=HistoryQueryParams,
        func=query_history,
        title="查询历史",
        concurrency_safe=True,
        summarize=summarize_history_query,
        timeout_s=30,
        output=results.HistoryQueryResult,
        mcp_tier=1,
    ),
)
