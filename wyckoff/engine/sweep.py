"""Parameter sweeps and walk-forward tests of the backtest, in process or on a Dask cluster.

Signals (the funnel, day by day) are the expensive part and depend only on the engine
configuration; exits and top-N only replay them. So a sweep computes signals once per
distinct EngineConfig and runs every exit combination as a cheap task that reuses them. Each
day's signals depend on that day alone, so on a cluster one configuration's days are split
into ranges computed by several tasks at once and joined. Signals are point in time, so one
computation over the whole period also serves every walk-forward window. The panel reaches
every worker once: when the workers can read this machine's files (a local cluster), as a
folder they memory-map, sharing one copy in the page cache; else sent to each.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from wyckoff.engine.backtest import Signals, compute_signals, run_backtest
from wyckoff.engine.benchmark import benchmark_names
from wyckoff.engine.panel import Panel
from wyckoff.engine.sweep_grid import Grid
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.engine.walk_forward import fold_sentence, swept_names, walk_forward_summary
from wyckoff.errors import UsageError, WyckoffError

# Columns of a sweep result, in table order: trade statistics, both accounting views, then
# the cash view's excess over the CSI 300 and the whole market (engine/benchmark.py).
METRICS = (
    "trades",
    "win_rate_pct",
    "avg_ret_pct",
    "median_ret_pct",
    "var95_pct",
    "cvar95_pct",
    "max_consecutive_losses",
    "sharpe_ratio",
    "simple_return_pct",
    "simple_max_drawdown_pct",
    "cash_return_pct",
    "cash_max_drawdown_pct",
    "excess_csi300_pct",
    "excess_market_pct",
)
LOWER_IS_BETTER = {"simple_max_drawdown_pct", "cash_max_drawdown_pct", "max_consecutive_losses"}
# (stage, its tasks done, its tasks in all, share of the whole sweep done): the stage says in
# Chinese what the finished task did; signal tasks weigh by their days (the bulk of the work).
Progress = Callable[[str, int, int, float], None]
TASKS_PER_WORKER = 4  # signal tasks per worker slot on a cluster: load balance and progress
MIN_RANGE_DAYS = 5  # a day range shorter than this costs more to ship than it saves
# Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536 in every worker: glibc then maps and unmaps
# every large numpy temporary, faulting its pages in again on each use, which doubled the
# time of a signal task. None removes the variable (distributed.nanny._get_env_variables).
WORKER_DASK_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


class SweepCancelled(WyckoffError):
    """The user stopped the sweep; cluster work was cancelled."""

    exit_code = 130


def metrics_of(result: dict[str, Any]) -> dict[str, Any]:
    """One backtest result's metric row."""
    row = {name: result.get(name) for name in METRICS[:8]}
    simple, cash = result["simple_view"], result["cash_portfolio"]
    row["simple_return_pct"] = simple["total_return_pct"]
    row["simple_max_drawdown_pct"] = simple["max_drawdown_pct"]
    row["cash_return_pct"] = cash["total_return_pct"]
    row["cash_max_drawdown_pct"] = cash["max_drawdown_pct"]
    csi300, market = result["benchmark"]["indices"]
    row["csi300_return_pct"], row["excess_csi300_pct"] = csi300["return_pct"], csi300["excess_pct"]
    row["market_return_pct"], row["excess_market_pct"] = market["return_pct"], market["excess_pct"]
    return row


def rank_key(metric: str) -> Callable[[dict[str, Any]], tuple]:
    """Best first; a missing value (no trades) last."""
    sign = 1 if metric in LOWER_IS_BETTER else -1

    def key(row: dict[str, Any]) -> tuple:
        value = row["metrics"][metric]
        return (value is None, 0 if value is None else sign * value)

    return key


# --- the panel on a worker ----------------------------------------------------------------------


@dataclass(frozen=True)
class PanelOnDisk:
    """A panel written to a folder that every worker of the cluster can read: sent with each
    task in place of the panel (the whole market over 550 days is ~220 MB, which took ~6 s to
    send to two local workers, and a copy of it in each)."""

    folder: str
    source: str


_OPENED: dict[PanelOnDisk, Panel] = {}  # in a worker: the panel of the sweep now running


def opened(panel: Panel | PanelOnDisk) -> Panel:
    """The panel itself, memory-mapped once per worker process when it is on disk."""
    if isinstance(panel, Panel):
        return panel
    if panel not in _OPENED:
        from wyckoff.engine.panel_cache import read_panel

        _OPENED.clear()  # a long-lived cluster keeps no earlier sweep's files open
        _OPENED[panel] = read_panel(Path(panel.folder), panel.source)
    return _OPENED[panel]


def forget_panel(panel: PanelOnDisk) -> None:
    _OPENED.pop(panel, None)


def can_read(folder: str) -> bool:
    return Path(folder, "meta.json").is_file()


PANEL_FOLDER = "wyckoff-sweep-"  # + the sweeping process's id: a killed sweep's is found


def remove_stale_panels() -> None:
    """Remove the panel folders of sweeps whose process is gone (killed with kill -9, its
    temporary folder of up to a few hundred MB was never removed)."""
    import shutil

    for folder in Path(tempfile.gettempdir()).glob(f"{PANEL_FOLDER}*-*"):
        pid = folder.name.removeprefix(PANEL_FOLDER).split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


# --- tasks (module-level functions: workers import them by name) ------------------------------


def signals_task(
    panel: Panel | PanelOnDisk,
    start_t: int,
    end_t: int,
    regime_gate: bool,
    overrides: dict[str, Any],
) -> Signals:
    config = replace(DEFAULT_CONFIG, **overrides)
    return compute_signals(opened(panel), start_t, end_t, regime_gate, config)


def join_signals_task(*parts: Signals) -> Signals:
    """Consecutive day ranges' signals as one."""
    return Signals(parts[0].start_t, [day for part in parts for day in part.ranked])


def combo_task(
    panel: Panel | PanelOnDisk,
    signals: Signals,
    span: tuple[int, int],
    options: dict[str, Any],
    overrides: dict[str, Any],
    exits: dict[str, Any],
) -> dict[str, Any]:
    """One exit combination over days span, replaying precomputed signals."""
    result = run_backtest(
        opened(panel),
        *span,
        **options,
        **exits,
        cfg=replace(DEFAULT_CONFIG, **overrides),
        precomputed=signals,
    )
    return metrics_of(result)


# --- runners: where tasks execute ----------------------------------------------------------------


class Tally:
    """How much of a sweep is done, told to `progress` as each task finishes."""

    def __init__(self, stages: dict[str, int], weight: int, progress: Progress | None) -> None:
        self.total, self.done = stages, dict.fromkeys(stages, 0)
        self.weight, self.weight_done, self.progress = max(weight, 1), 0, progress

    def finished(self, stage: str, weight: int) -> None:
        self.done[stage] += 1
        self.weight_done += weight
        if self.progress:
            share = self.weight_done / self.weight
            self.progress(stage, self.done[stage], self.total[stage], share)


@dataclass
class _Done:
    value: Any


class InProcessRunner:
    """Runs each task as it is submitted, in this process (the serial baseline)."""

    def __init__(self, tally: Tally, cancelled: Callable[[], bool]) -> None:
        self.tally, self.cancelled = tally, cancelled

    @contextmanager
    def shared(self, panel: Panel) -> Iterator[Panel]:
        yield panel

    def submit(self, stage: str, weight: int, func: Callable, *args: Any) -> _Done:
        if self.cancelled():
            raise SweepCancelled("参数扫描已取消。")
        done = _Done(func(*(a.value if isinstance(a, _Done) else a for a in args)))
        self.tally.finished(stage, weight)
        return done

    def results(self, tasks: list[_Done]) -> list[Any]:
        return [task.value for task in tasks]


class ClusterRunner:
    """Submits tasks to a Dask cluster; a task's inputs may be other tasks' futures."""

    def __init__(self, client, tally: Tally, cancelled: Callable[[], bool]) -> None:
        self.client, self.tally, self.cancelled = client, tally, cancelled
        self.submitted: list = []
        self.unfinished: dict[str, tuple[Any, str, int]] = {}  # key -> (future, stage, weight)

    @contextmanager
    def shared(self, panel: Panel) -> Iterator[Any]:
        """The panel as the tasks take it: a folder the workers memory-map when every worker
        can read it (removed afterwards), else the panel sent once to every worker."""
        from wyckoff.engine.panel_cache import write_panel

        remove_stale_panels()
        with tempfile.TemporaryDirectory(prefix=f"{PANEL_FOLDER}{os.getpid()}-") as folder:
            write_panel(Path(folder), panel)
            on_disk = PanelOnDisk(folder, panel.source)
            readable = self.client.run(can_read, folder)
            if not readable or not all(readable.values()):
                yield self._scatter(panel)
                return
            try:
                yield on_disk
            finally:
                self.client.run(forget_panel, on_disk)

    def _scatter(self, panel: Panel) -> Any:
        """Sent once to every worker, not with each task. A fresh key each time: a key hashed
        from the data is shared with an earlier sweep of the same panel, whose release can then
        take the data away from this one ("lost dependencies")."""
        return self.client.scatter(panel, broadcast=True, hash=False)

    def submit(self, stage: str, weight: int, func: Callable, *args: Any):
        future = self.client.submit(func, *args, pure=False)
        self.submitted.append(future)
        self.unfinished[future.key] = (future, stage, weight)
        return future

    def results(self, futures: list) -> list[Any]:
        """The values of `futures`, counting every submitted task as it finishes (the signal
        tasks the futures wait for too, so progress moves while signals are computed)."""
        from distributed import as_completed

        try:
            for future in as_completed([f for f, _, _ in self.unfinished.values()]):
                _, stage, weight = self.unfinished.pop(future.key)
                self.tally.finished(stage, weight)
                if self.cancelled():
                    raise KeyboardInterrupt
            return self.client.gather(futures)
        except KeyboardInterrupt:  # Ctrl+C or the tool's cancel: nothing left on the cluster
            self.client.cancel(self.submitted)
            raise SweepCancelled("参数扫描已取消，集群上的任务已撤销。") from None
        except BaseException:
            self.client.cancel(self.submitted)
            raise


def worker_slots(client) -> int:
    """Tasks the cluster runs at once (1 in this process)."""
    return sum(client.nthreads().values()) if client else 1


def day_ranges(start_t: int, end_t: int, slots: int, configs: int) -> list[tuple[int, int]]:
    """Signal days start_t..end_t - 1 cut into consecutive ranges (each start..end - 1), so
    that about TASKS_PER_WORKER signal tasks per worker slot can run at once; one in process."""
    days = end_t - start_t
    pieces = 1
    if slots > 1:
        pieces = min(-(-TASKS_PER_WORKER * slots // configs), max(1, days // MIN_RANGE_DAYS))
    bounds = [start_t + days * k // pieces for k in range(pieces + 1)]
    return list(pairwise(bounds))


def local_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def local_workers(requested: int | None) -> int:
    """Worker processes for a local cluster: as requested, never more than the cores."""
    return min(requested or local_cores(), local_cores())


@contextmanager
def dask_client(workers: int | None = None, address: str | None = None) -> Iterator[Any]:
    """A client of the cluster at `address` (the user's own: it runs our code and we unpickle
    its answers), or of a new local cluster of worker processes (one per core at most) on
    loopback, closed afterwards."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    if address:
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise UsageError(
                f"连不上 Dask 集群 {address}（{type(exc).__name__}），请确认调度器地址和端口后重试。"
            ) from None
        with client:
            yield client
        return
    with (
        dask.config.set(WORKER_DASK_CONFIG),
        LocalCluster(
            n_workers=local_workers(workers),
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            # any free loopback port: with None the scheduler still takes 8787, and a second
            # sweep at once printed an English warning about it
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.CRITICAL,  # a closing worker's noise is not the user's
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


# --- the sweep -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fold:
    """One walk-forward step: choose on days train, then trade the choice on days test."""

    train: tuple[int, int]
    test: tuple[int, int]


def walk_forward_folds(start_t: int, end_t: int, train: int, test: int) -> list[Fold]:
    """Train windows of `train` days, each followed by a test window of `test` days; the next
    fold starts `test` days later, so the test windows chain without overlap."""
    folds = []
    first = start_t
    while first + train + test - 1 <= end_t:
        folds.append(Fold((first, first + train - 1), (first + train, first + train + test - 1)))
        first += test
    return folds


STAGE_SIGNALS, STAGE_COMBOS, STAGE_TESTS = "计算信号", "回放组合", "样本外检验"


def task_count(grid: Grid, windows: int, walk_forward: bool) -> int:
    """Signal computations (one per engine config, however a cluster splits them by days) and
    replays: the same wherever the sweep runs."""
    configs = len(grid.engine_configs())
    return configs + grid.size * windows + (windows if walk_forward else 0)


def run_sweep(
    panel: Panel,
    grid: Grid,
    start_t: int,
    end_t: int,
    *,
    client=None,
    metric: str = "sharpe_ratio",
    board: str = "all",
    regime_gate: bool = True,
    walk_forward: tuple[int, int] | None = None,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """Every grid combination over start_t..end_t (ranked by `metric`), or with walk_forward
    (train, test) days the chained folds: best on each train window, then its test result."""
    if metric not in METRICS:
        raise UsageError(f"排序指标 {metric} 不存在；可选：{'、'.join(METRICS)}。")
    folds = walk_forward_folds(start_t, end_t, *walk_forward) if walk_forward else []
    if walk_forward and not folds:
        raise UsageError(
            f"区间只有 {end_t - start_t + 1} 个交易日，放不下一组 {walk_forward[0]}:{walk_forward[1]} "
            "的训练 + 测试窗口，请缩短窗口或放宽日期。"
        )
    spans = [fold.train for fold in folds] or [(start_t, end_t)]
    configs, exit_combos = grid.engine_configs(), grid.exit_combinations()
    combos = [(i, overrides, exits) for i, overrides in enumerate(configs) for exits in exit_combos]
    ranges = day_ranges(start_t, end_t, worker_slots(client), len(configs))
    stages = {
        STAGE_SIGNALS: len(configs) * (len(ranges) + (len(ranges) > 1)),  # ranges and a join
        STAGE_COMBOS: len(combos) * len(spans),
        STAGE_TESTS: len(folds),
    }
    # a replay costs about one day's funnel
    tally = Tally(
        stages, len(configs) * (end_t - start_t) + len(combos) * len(spans) + len(folds), progress
    )
    runner = (
        ClusterRunner(client, tally, cancelled) if client else InProcessRunner(tally, cancelled)
    )
    options = {"board": board, "regime_gate": regime_gate}
    with runner.shared(panel) as shared:
        signals = [
            _signals(runner, shared, ranges, regime_gate, overrides) for overrides in configs
        ]
        tasks = [
            runner.submit(STAGE_COMBOS, 1, combo_task, shared, signals[i], span, options, *rest)
            for span in spans
            for i, *rest in combos
        ]
        rows = [
            {"params": {**exits, **overrides}, "metrics": row}
            for (_, overrides, exits), row in zip(
                combos * len(spans), runner.results(tasks), strict=True
            )
        ]
        summary = {
            "period": {"start": str(panel.dates[start_t]), "end": str(panel.dates[end_t])},
            "grid": grid.describe(),
            "metric": metric,
            "options": options,
            "combinations": len(combos),
            "engine_configs": len(configs),
            "signal_computations": len(signals),
            "tasks": task_count(grid, len(spans), bool(folds)),
            "benchmarks": benchmark_names(panel),
        }
        if not folds:
            return {**summary, "results": sorted(rows, key=rank_key(metric))}
        per_fold = [rows[k * len(combos) : (k + 1) * len(combos)] for k in range(len(folds))]
        rank = rank_key(metric)
        best = [
            min(range(len(combos)), key=lambda c, r=fold_rows: rank(r[c])) for fold_rows in per_fold
        ]
        tests = [
            runner.submit(
                STAGE_TESTS,
                1,
                combo_task,
                shared,
                signals[combos[c][0]],
                fold.test,
                options,
                *combos[c][1:],
            )
            for c, fold in zip(best, folds, strict=True)
        ]
        outs = runner.results(tests)
        chained = [
            {
                "train": _period(panel, fold.train),
                "test": _period(panel, fold.test),
                "params": fold_rows[c]["params"],
                "in_sample": fold_rows[c]["metrics"],
                "out_of_sample": out,
            }
            for fold, fold_rows, c, out in zip(folds, per_fold, best, outs, strict=True)
        ]
        swept = swept_names(summary["grid"])
        for number, fold in enumerate(chained, 1):
            fold["sentence"] = fold_sentence(number, fold, swept)
        return {
            **summary,
            "walk_forward": {"train_days": walk_forward[0], "test_days": walk_forward[1]},
            "folds": chained,
            "summary": walk_forward_summary(chained),
        }


def _signals(runner, panel: Any, ranges: list[tuple[int, int]], regime_gate: bool, overrides):
    """One engine configuration's signals: one task per day range, joined when several."""
    parts = [
        runner.submit(
            STAGE_SIGNALS, end - start, signals_task, panel, start, end, regime_gate, overrides
        )
        for start, end in ranges
    ]
    return (
        parts[0] if len(parts) == 1 else runner.submit(STAGE_SIGNALS, 0, join_signals_task, *parts)
    )


def _period(panel: Panel, span: tuple[int, int]) -> dict[str, str]:
    return {"start": str(panel.dates[span[0]]), "end": str(panel.dates[span[1]])}
