"""`wyckoff research signals`: the event study (engine/event_study.py) on the stored market,
its events cached beside the store (engine/event_cache.py), detected in this process for a
few days or on Dask for many (a local cluster, or the user's own: never the model's choice).
The result carries the market's envelope (`source`, `as_of`, the demo label)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from wyckoff.agents.market_data import MarketData
from wyckoff.cli.tools import ToolContext, ToolFailure

if TYPE_CHECKING:
    import numpy as np

    from wyckoff.config import SweepConfig
    from wyckoff.engine.event_cache import Detector
    from wyckoff.engine.event_study import Events, Outcomes
    from wyckoff.engine.panel import Panel
    from wyckoff.engine.thresholds import EngineConfig

LOCAL_DAYS = 120  # fewer signal days to detect than this: in this process (no cluster start-up)
CSV_HEADER = [
    "signal",
    "code",
    "signal_date",
    "entry_date",
    "entry_price",
    "h",
    "exit_date",
    "return",
    "status",
]
CAP_MISSING = "行情库没有逐日市值（总市值或流通市值），无法按市值分组。"


class ResearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start: str | None = Field(
        default=None, description="第一个信号日 YYYY-MM-DD（默认：预热后第一天）"
    )
    end: str | None = Field(default=None, description="最后一个信号日 YYYY-MM-DD（默认：最新）")
    horizons: tuple[int, ...] = Field(default=(5, 20, 60), description="持有交易日数")
    by: Literal["year", "regime", "cap"] | None = None

    @field_validator("horizons")
    @classmethod
    def _horizons(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(not 1 <= h <= 250 for h in value):
            raise ValueError("持有期要是 1 到 250 之间的交易日数，如 5,20,60")
        return tuple(sorted(set(value)))


def research_signals(
    params: ResearchParams,
    context: ToolContext,
    where: SweepConfig,
    events_out: Path | None = None,
) -> dict[str, Any]:
    from wyckoff.engine.event_cache import cached_events, signal_records
    from wyckoff.engine.event_study import daily_share, measure, summarize
    from wyckoff.engine.thresholds import DEFAULT_CONFIG

    market = MarketData.from_context(context)
    context.progress("加载行情", market.source, 0.02)
    dates = market.bar_dates()
    panel = market.panel(len(dates), end=str(dates[-1]))
    start_t, end_t = signal_window(panel, params.start, params.end)
    cfg = DEFAULT_CONFIG
    detector = _detector(context, where)
    events, reuse = cached_events(market.store.path, panel, start_t, end_t, cfg, detector)
    if params.start is None and params.end is None:  # the whole history: the signals' records
        signal_records(market.store.path, lambda: panel, lambda _p: start_t, cfg, detector)
    context.progress("计算收益", f"{len(events.signal):,} 个事件", 0.95)
    outcomes = measure(panel, events, params.horizons, cfg)
    signals = summarize(events, outcomes, cfg)
    for record, share in zip(
        signals, daily_share(panel, events, cfg.trigger_max_share), strict=True
    ):
        record.update(share)
    result: dict[str, Any] = {
        "period": {"start": str(panel.dates[start_t]), "end": str(panel.dates[end_t])},
        "signal_days": end_t - start_t + 1,
        "horizons": list(params.horizons),
        "signals": signals,
        "cache": reuse,
        "max_daily_share": cfg.trigger_max_share,
    }
    if params.by:
        result.update(_groups(market, panel, events, outcomes, params.by, cfg))
    if events_out is not None:
        write_events(events_out, panel, events, outcomes)
        result["events_out"] = str(events_out)
    return market.envelope(str(panel.dates[-1]), data_caveats=panel.caveats, **result)


def signal_window(panel: Panel, start: str | None, end: str | None) -> tuple[int, int]:
    """Day indices of the first and last signal day: after the funnel's warm-up."""
    import numpy as np

    from wyckoff.engine.window import WARMUP_DAYS

    first = int(np.searchsorted(panel.dates, np.datetime64(start))) if start else WARMUP_DAYS
    last = (
        int(np.searchsorted(panel.dates, np.datetime64(end), side="right")) - 1
        if end
        else len(panel.dates) - 1
    )
    if len(panel.dates) <= WARMUP_DAYS:
        raise ToolFailure(
            f"行情历史不足：事件研究需要 {WARMUP_DAYS} 个交易日预热，行情库只有 {len(panel.dates)} 个交易日。"
        )
    if first < WARMUP_DAYS:
        raise ToolFailure(
            f"开始日期 {start} 太早：行情库自 {panel.dates[0]} 起，前 {WARMUP_DAYS} 个交易日用于预热，"
            f"最早可从 {panel.dates[WARMUP_DAYS]} 开始。"
        )
    if first >= len(panel.dates):
        raise ToolFailure(
            f"开始日期 {start} 晚于行情的最后一天 {panel.dates[-1]}：请选更早的开始日期。"
        )
    if last < first:
        raise ToolFailure(
            f"{start or panel.dates[first]} 到 {end} 之间没有交易日：请让开始日期早于结束日期。"
        )
    return first, last


def _detector(context: ToolContext, where: SweepConfig) -> Detector:
    """Detection in this process for a few days, else on Dask: the user's cluster when they
    chose one, else a local cluster of worker processes."""
    from wyckoff.engine.event_cache import in_process, on_cluster
    from wyckoff.engine.sweep import dask_client

    def progress(done: int, total: int) -> None:
        context.progress(
            "逐日检测信号", f"{done}/{total} 个交易日", 0.05 + 0.9 * done / max(total, 1)
        )

    def detect(panel: Panel, ranges: list[tuple[int, int]], cfg: EngineConfig) -> Events:
        days = sum(b - a + 1 for a, b in ranges)
        if where.cluster is None and days < LOCAL_DAYS:
            return in_process(progress)(panel, ranges, cfg)
        context.progress("启动集群", where.cluster or "本地进程池", 0.05)
        with dask_client(where.workers, where.cluster) as client:
            return on_cluster(client, progress)(panel, ranges, cfg)

    return detect


def _groups(
    market: MarketData, panel: Panel, events: Events, outcomes: Outcomes, by: str, cfg: EngineConfig
) -> dict[str, Any]:
    from wyckoff.engine.event_study import group_keys, grouped

    cap = None
    if by == "cap":
        (stored,) = market.store.execute(
            "SELECT COUNT(total_mv) + COUNT(float_mv) FROM daily_basic"
        )[0]
        if not stored:
            return {"by": by, "groups": [], "groups_note": CAP_MISSING}
        cap = panel.market_cap
    keys = group_keys(panel, events, by, cap)
    return {"by": by, "groups": grouped(events, outcomes, cfg, keys)}


def write_events(path: Path, panel: Panel, events: Events, outcomes: Outcomes) -> None:
    """Every event as CSV rows (CSV_HEADER): one per horizon once bought; one row saying
    `unbuyable` or `pending` (t+1 not in the data yet) otherwise. Prices are qfq on the
    store's latest factors, as the returns are."""
    import numpy as np

    from wyckoff.engine.event_study import SIGNALS

    dates = panel.dates.astype(str)
    signal_names = np.array(SIGNALS)[events.signal]
    try:
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(CSV_HEADER)
            for k in range(len(events.signal)):
                writer.writerows(_event_rows(k, signal_names, events, outcomes, dates))
    except OSError as exc:
        from wyckoff.errors import describe_os_error

        raise ToolFailure(describe_os_error(exc, "写入", path) + "请换一个可写的位置。") from None


def _event_rows(
    k: int, signal_names: np.ndarray, events: Events, outcomes: Outcomes, dates: np.ndarray
) -> list[list[Any]]:
    head = [signal_names[k], events.code[k], str(events.date[k])]
    if not outcomes.entered[k]:
        return [[*head, "", "", "", "", "", "pending"]]
    entry_date = dates[outcomes.t[k] + 1]
    if not outcomes.buyable[k]:
        return [[*head, entry_date, "", "", "", "", "unbuyable"]]
    rows = []
    for row, h in enumerate(outcomes.horizons):
        exit_t = outcomes.exit_t[row][k]
        done = exit_t >= 0
        rows.append(
            [
                *head,
                entry_date,
                f"{outcomes.entry_price[k]:.4f}",
                h,
                dates[exit_t] if done else "",
                f"{outcomes.returns[row][k]:.6f}" if done else "",
                "ok" if done else "pending",
            ]
        )
    return rows
