"""The record beside every signal (docs/research.md): how a signal has done on this store,
read from the records `wyckoff research signals` caches (engine/event_records.py), never
computed here, so the commands that show signals stay fast. One structured record per signal
and the one Chinese sentence every surface shows (CLI, web, brief, the agent's tools)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wyckoff.agents.market_data import MarketData

HORIZON = 20  # trading days: the horizon shown beside a signal
MIN_SIGNAL_DAYS = 250  # about a year of signal days: less is no record
MIN_EVENTS = 30  # complete events at HORIZON: fewer is no record
SCREEN_SIGNAL = "screen_top20"  # the event study's name for `screen`'s first 20
BUILD = "运行 `wyckoff research signals` 生成"
NOT_STUDIED = f"本库还没有信号的历史记录（{BUILD}）"
DEMO = "演示数据是合成行情，这里没有可作证据的历史记录"
AFTER_COST_NOTE = "超额未扣交易成本（基准也要交易）"


def market_records(market: MarketData) -> dict[str, Any] | None:
    """The cached records of the market's store as saved, else None (one small file)."""
    from wyckoff.engine.event_records import stored_records

    if market.source == "demo" or not market.store.path.exists():
        return None
    return stored_records(market.store.path)


def records_for(market: MarketData, signals: list[str]) -> list[dict[str, Any]]:
    """The record of each signal (event-study names: trigger keys or SCREEN_SIGNAL)."""
    if not signals:
        return []
    saved = market_records(market)
    demo = market.source == "demo"
    return [signal_record(saved, name, demo=demo) for name in dict.fromkeys(signals)]


def signal_record(saved: dict[str, Any] | None, signal: str, *, demo: bool) -> dict[str, Any]:
    """One signal's record at HORIZON: its numbers when the history holds enough of it,
    else a `status` saying why not (demo, not_studied, too_short, too_few) and no number.
    `text` is the sentence to show."""
    from wyckoff.engine.triggers import TRIGGER_LABELS

    label = TRIGGER_LABELS.get(signal, "screen 前 20" if signal == SCREEN_SIGNAL else signal)
    base = {"signal": signal, "label": label, "horizon": HORIZON}
    if demo:
        return {**base, "status": "demo", "text": DEMO}
    records = (saved or {}).get("records") or {}
    stats = next((s for s in records.get("signals", []) if s.get("signal") == signal), None)
    if stats is None or str(HORIZON) not in stats:
        return {**base, "status": "not_studied", "text": NOT_STUDIED}
    days = int(records.get("signal_days") or round(records["years"] * 244))
    if days < MIN_SIGNAL_DAYS:
        text = f"本库历史太短（{days:,} 个信号日，少于 {MIN_SIGNAL_DAYS}），该信号还没有可信的记录"
        return {**base, "status": "too_short", "signal_days": days, "text": text}
    at = stats[str(HORIZON)]
    events = int(at["complete"])
    if events < MIN_EVENTS or at.get("excess_vs_market") is None:
        text = f"该信号在本库只有 {events} 个完整的 {HORIZON} 日事件（少于 {MIN_EVENTS}），样本太少，不给数字"
        return {**base, "status": "too_few", "events": events, "text": text}
    record = {
        **base,
        "status": "ok",
        "years": records["years"],
        "start": records["start"],
        "end": records["end"],
        "excess_vs_market": at["excess_vs_market"],
        "excess_vs_csi300": at.get("excess_vs_csi300"),
        "hit_rate": at["hit_rate"],
        "t_stat": at["t_stat"],
        "events": events,
        "after_cost": False,
        "evidence": evidence(at["excess_vs_market"], at["t_stat"]),
        "note": f"{AFTER_COST_NOTE}；事件 {records['start']} 至 {records['end']}",
    }
    return {**record, "text": record_sentence(record)}


def evidence(excess: float, t_stat: float | None) -> str:
    """`edge` when the record shows a positive excess with |t| >= 2, `negative` when it
    shows a negative one, else `none`: the only case the agent may call the signal an edge."""
    if t_stat is None or abs(t_stat) < 2:
        return "none"
    return "edge" if excess > 0 else "negative"


def record_sentence(record: dict[str, Any]) -> str:
    """近 8 年该信号 20 日超额 +0.4%（对沪深300 +1.1%，胜率 52%，t=1.3，n=3,412，未扣费）."""
    years = record["years"]
    span = f"{round(years)}" if years >= 2 else f"{years:.1f}"
    csi = record["excess_vs_csi300"]
    versus = "" if csi is None else f"对沪深300 {_pct(csi)}，"
    t_stat = "—" if record["t_stat"] is None else f"{record['t_stat']:.1f}"
    return (
        f"近 {span} 年该信号 {record['horizon']} 日超额 {_pct(record['excess_vs_market'])}"
        f"（{versus}胜率 {record['hit_rate']:.0%}，t={t_stat}，n={record['events']:,}，"
        f"{'扣费后' if record['after_cost'] else '未扣费'}）"
    )


def _pct(fraction: float) -> str:
    return f"{round(fraction * 100, 1) + 0.0:+.1f}%"  # no "-0.0%"


def record_lines(records: list[dict[str, Any]]) -> list[str]:
    """Lines for a text surface, "Spring：近 8 年该信号…": signals whose sentence is the
    same (demo data, not yet studied) share one line, "EVR、SOS：…"."""
    labels: dict[str, list[str]] = {}
    for record in records:
        labels.setdefault(record["text"], []).append(record["label"])
    return [f"{'、'.join(names)}：{text}" for text, names in labels.items()]
